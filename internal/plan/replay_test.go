package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/engine/replaytest"
)

// recorded is a plan executor whose every Decide and act result is
// recorded; the engine sees the loop itself otherwise.
type recorded struct {
	*Loop
	rec *replaytest.Recorder[State, Observation, Action, ActResult]
}

func (r recorded) Decide(st State, obs Observation) (State, []Action, bool) {
	next, acts, done := r.Loop.Decide(st, obs)
	r.rec.Decided(st, obs, next, acts, done)
	return next, acts, done
}

func (r recorded) Act(ctx context.Context, st State, obs Observation, a Action) (ActResult, error) {
	res, err := r.Loop.Act(ctx, st, obs, a)
	r.rec.Acted(res)
	return res, err
}

// replayScenarios are real plan runs: a git repository, the store's
// tickets, scripted agents, the engine on a clock of its own.
var replayScenarios = []struct {
	name string
	plan string
	// impl writes task's file and answers; review answers review n.
	impl   func(n int, t agent.Task) agent.Result
	review func(n int) string
}{
	{
		name: "chain-reviewed-and-fixed",
		plan: chainPlan,
		impl: func(n int, t agent.Task) agent.Result {
			writeTaskFile(t, n)
			if n == 2 {
				return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete, ImplementerStatus: agent.ImplDoneWithConcerns, Summary: "done", Concerns: []string{"the file is getting long"}}}
			}
			return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete, ImplementerStatus: agent.ImplDone, Summary: "done"}}
		},
		review: func(n int) string {
			if n == 1 {
				return `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"an issue","files_changed":[],"approved":false,"issues":[{"severity":"important","summary":"no test","file":"a.go","line":1}]}`
			}
			return `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":true,"issues":[{"severity":"minor","summary":"naming"}]}`
		},
	},
	{
		name: "blocked-task-skips-its-dependent",
		plan: chainPlan,
		impl: func(n int, t agent.Task) agent.Result {
			if n == 1 {
				return agent.Result{Record: agent.StatusRecord{Status: agent.StatusBlocked, ImplementerStatus: agent.ImplBlocked, Reason: "the API it needs does not exist"}}
			}
			writeTaskFile(t, n)
			return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete, ImplementerStatus: agent.ImplDone, Summary: "done"}}
		},
		review: func(int) string {
			return `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":true,"issues":[]}`
		},
	},
}

// writeTaskFile is an implementer's work: its task's file (chainPlan's
// tasks each own <id>.go), a line per run.
func writeTaskFile(t agent.Task, n int) {
	id := strings.Split(t.RunID, ".")[2] // r1.task.<id>.NN
	name := filepath.Join(t.Workdir, id+".go")
	old, _ := os.ReadFile(name)
	_ = os.WriteFile(name, append(old, fmt.Sprintf("// run %d\n", n)...), 0o644)
}

// recordPlanRun runs one scenario on the real executor and returns what it
// recorded.
func recordPlanRun(t *testing.T, name, src string, impl func(int, agent.Task) agent.Result, review func(int) string) replaytest.Recording[State, Observation, Action] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _ := repoWithCommit(t)
	im := &scripted{name: "impl", answer: impl}
	rv := &scripted{name: "reviewer", answer: func(n int, _ agent.Task) agent.Result {
		return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete}, Output: review(n)}
	}}
	st := NewState("r1", Config{Plan: mustPlan(t, src), Agent: "impl", Reviewer: "reviewer", Parallel: 1})
	l := NewLoop("r1", Deps{Workspace: ws, Tickets: newTickets(t), Reviewer: rv, PID: 1,
		Agent: func(string) (agent.Agent, error) { return im, nil }})
	rec := &replaytest.Recorder[State, Observation, Action, ActResult]{}
	final, err := engine.Run[State, Observation, Action, ActResult](ctx, recorded{l, rec}, &replaytest.Journal[State]{}, st,
		engine.Options{Clock: replaytest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)), PollMin: time.Millisecond})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if final.Terminal == nil {
		t.Fatalf("%s: no terminal", name)
	}
	t.Logf("%s: %s after %d steps: %s", name, final.Terminal.Status, len(rec.Steps()), final.Terminal.Message)
	for _, ts := range final.Tasks {
		t.Logf("  %s %s %s %s", ts.ID, ts.Phase, ts.Status, ts.BlockReason)
	}
	replaytest.Faithful(t, name, rec.Steps(), rec.Results())
	return replaytest.Recording[State, Observation, Action]{Scenario: name, Steps: rec.Steps()}
}

func planDecider(json.RawMessage) (replaytest.Decider[State, Observation, Action], error) {
	return (&Loop{}).Decide, nil
}

// TestPLAN_1_RecordedRunsSurviveJSON: every state, observation, action
// and act result of real plan runs comes back from JSON unchanged, and
// each step decides the same on the JSON copy — what a Temporal workflow's
// Decide reads. CONVERGE_UPDATE_REPLAY=1 records a scenario that has no
// recording yet under testdata/replay/.
func TestPLAN_1_RecordedRunsSurviveJSON(t *testing.T) {
	for _, sc := range replayScenarios {
		rec := recordPlanRun(t, sc.name, sc.plan, sc.impl, sc.review)
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := replaytest.ReplayOne(raw, planDecider); err != nil {
			t.Errorf("%s, on its JSON copy: %v", sc.name, err)
		}
		replaytest.Save(t, replaytest.Dir, sc.name, rec)
	}
}

// TestPLAN_1_DecideReplaysEveryRecordedRun: every run recorded under
// testdata/replay/ replays through Decide to the same next states and
// actions, byte for byte: a Decide change that would change a running
// workflow's history fails here (recordings are only ever added to).
func TestPLAN_1_DecideReplaysEveryRecordedRun(t *testing.T) {
	replaytest.Replay(t, replaytest.Dir, planDecider)
}

// TestPLAN_1_EveryFieldCrossesJSON: no field of the executor's state,
// observation, action or act result is one JSON leaves behind (an
// unexported field, an interface, a func), and each, filled, comes back
// equal — whatever real runs happen to fill.
func TestPLAN_1_EveryFieldCrossesJSON(t *testing.T) {
	replaytest.Carried[State](t)
	replaytest.Carried[Observation](t)
	replaytest.Carried[Action](t)
	replaytest.Carried[ActResult](t)
}
