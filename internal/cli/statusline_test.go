package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/term"
)

// UX-1: a run's status line is read from its stored state, for each loop
// kind: a PR's round, phase, findings and threads resolved; a loop's
// iterations of its bound and those accepted; a plan's tasks ended; the
// elapsed time (stopped at the end) and the cost the agents reported.
func TestUX1_StatusLineOfEachKind(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	now := t0.Add(125 * time.Second)
	state := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	priced := agent.Usage{Runs: 1, PricedRuns: 1, CostReported: true, CostUSD: 0.42, InputTokens: 10}
	pr := prloop.State{Phase: "fix", Round: 2,
		Rounds:  []prloop.RoundRecord{{N: 1, Findings: make([]prloop.Finding, 3), Usage: priced}, {N: 2, Findings: make([]prloop.Finding, 1)}},
		Threads: []prloop.ThreadRecord{{ThreadID: "a", Resolved: true}, {ThreadID: "b"}}}
	loop := checkloop.State{RunID: "r", Config: checkloop.Config{MaxIterations: 5},
		Iterations: []checkloop.Iteration{{N: 1, Stage: checkloop.StageClosed, Outcome: checkloop.OutcomeAccepted}, {N: 2, Stage: checkloop.StageCheck}}}
	pl := plan.State{RunID: "r", Tasks: []plan.TaskState{{ID: "a", Status: "DONE", Phase: plan.PhaseDone}, {ID: "b", Phase: plan.PhaseRunning}, {ID: "c", Phase: plan.PhasePending}}}
	for _, c := range []struct {
		run  store.Run
		want string
	}{
		{store.Run{Kind: "pr", Target: "https://github.com/o/r/pull/7", State: state(pr), StartedAt: t0},
			"o/r#7  round 2  fix  4 finding(s), 1/2 threads resolved  2m05s  $0.42"},
		{store.Run{Kind: "pr-dry-run", Target: "https://github.com/o/r/pull/7#dry-run", State: state(prloop.State{Phase: "observe"}), StartedAt: t0},
			"o/r#7 (dry-run)  round 0  observe  0 finding(s), 0/0 threads resolved  2m05s"},
		{store.Run{Kind: checkloop.Kind, Target: "loop:/src/repo", State: state(loop), StartedAt: t0},
			"loop repo  iteration 2/5  check  1 accepted  2m05s"},
		{store.Run{Kind: plan.Kind, Target: "plan:/src/repo", State: state(pl), StartedAt: t0, Status: "complete", EndedAt: t0.Add(time.Minute)},
			"plan repo  task 1/3  complete  1/3 tasks ended  1m00s"},
	} {
		if got := term.Line(statusOfRun(c.run), now); got != c.want {
			t.Errorf("%s run:\n got %q\nwant %q", c.run.Kind, got, c.want)
		}
	}
}
