package checkloop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/engine/replaytest"
	"github.com/convergeloop/converge/internal/store"
)

// recorded is a done-check loop whose every Decide and act result is
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

// worker is a body agent: on run n it writes what the scenario says.
type worker struct {
	runs  int
	write func(n int) map[string]string
	cost  float64
}

func (w *worker) Name() string { return "worker" }

func (w *worker) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	w.runs++
	for name, body := range w.write(w.runs) {
		if err := os.WriteFile(filepath.Join(t.Workdir, name), []byte(body), 0o644); err != nil {
			return agent.Result{}, err
		}
	}
	return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete, Summary: fmt.Sprintf("run %d", w.runs), FilesChanged: []string{}},
		Output: fmt.Sprintf(`{"status":"complete","summary":"run %d","cost_usd":%g}`, w.runs, w.cost)}, nil
}

// checkScript is the done-check: state.txt must say fixed.
const checkScript = "#!/bin/sh\ngrep -q fixed state.txt || { echo \"FAIL: state.txt is $(cat state.txt)\"; exit 1; }\necho ok\n"

var replayScenarios = []struct {
	name  string
	cfg   func(Config) Config
	write func(n int) map[string]string
	cost  float64
}{
	{name: "complete-after-two-iterations", write: func(n int) map[string]string {
		if n == 2 {
			return map[string]string{"state.txt": "fixed\n"}
		}
		return map[string]string{"state.txt": fmt.Sprintf("try %d\n", n)}
	}},
	{name: "protected-change-unverified-then-limited", cfg: func(c Config) Config { c.MaxIterations = 2; return c }, write: func(n int) map[string]string {
		if n == 1 {
			return map[string]string{"check.sh": "#!/bin/sh\necho ok\n"}
		}
		return map[string]string{"state.txt": fmt.Sprintf("try %d\n", n)}
	}},
	{name: "stalled-without-progress", write: func(int) map[string]string { return nil }},
	{name: "limited-by-cost", cfg: func(c Config) Config { c.MaxCostUSD = 1; return c }, cost: 0.4, write: func(n int) map[string]string {
		return map[string]string{fmt.Sprintf("step%d.txt", n): "x\n"}
	}},
}

// recordCheckRun runs one scenario on the real loop — a git repository,
// the store's tickets, the check run by the loop — and returns what it
// recorded.
func recordCheckRun(t *testing.T, name string, cfgf func(Config) Config, w *worker) replaytest.Recording[State, Observation, Action] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "config", "user.name", "t")
	gitT(t, dir, "config", "user.email", "t@example.com")
	writeT(t, dir, "state.txt", "broken\n")
	writeT(t, dir, "check.sh", checkScript)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "init")
	ws, err := OpenWorkspace(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const run = "r-replay"
	if err := db.CreateRun(ctx, store.Run{ID: run, Kind: Kind, Target: Kind + ":replay"}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Goal: "make the check pass", Oracle: Oracle{Class: Mechanical, Command: "sh check.sh"}, Agent: "worker",
		Protect: []string{"check.sh"}, MaxIterations: 4, AgentBudget: time.Minute}
	if cfgf != nil {
		cfg = cfgf(cfg)
	}
	st := NewState(run, cfg)
	l := NewLoop(run, Deps{Tickets: db, Workspace: ws, Agent: w, PID: 1})
	l.cfg = st.Config // as Run does
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
	replaytest.Faithful(t, name, rec.Steps(), rec.Results())
	return replaytest.Recording[State, Observation, Action]{Scenario: name, Steps: rec.Steps()}
}

func checkDecider(json.RawMessage) (replaytest.Decider[State, Observation, Action], error) {
	return (&Loop{}).Decide, nil
}

// TestLOOP_5_RecordedRunsSurviveJSON: every state, observation, action
// and act result of real done-check runs, one per exit, comes back from
// JSON unchanged, and each step decides the same on the JSON copy — what a
// Temporal workflow's Decide reads. CONVERGE_UPDATE_REPLAY=1 records a
// scenario that has no recording yet under testdata/replay/.
func TestLOOP_5_RecordedRunsSurviveJSON(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for _, sc := range replayScenarios {
		rec := recordCheckRun(t, sc.name, sc.cfg, &worker{write: sc.write, cost: sc.cost})
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := replaytest.ReplayOne(raw, checkDecider); err != nil {
			t.Errorf("%s, on its JSON copy: %v", sc.name, err)
		}
		replaytest.Save(t, replaytest.Dir, sc.name, rec)
	}
}

// TestLOOP_5_DecideReplaysEveryRecordedRun: every run recorded under
// testdata/replay/ replays through Decide to the same next states and
// actions, byte for byte: a Decide change that would change a running
// workflow's history fails here (recordings are only ever added to).
func TestLOOP_5_DecideReplaysEveryRecordedRun(t *testing.T) {
	replaytest.Replay(t, replaytest.Dir, checkDecider)
}

// TestLOOP_5_EveryFieldCrossesJSON: no field of the loop's state,
// observation, action or act result is one JSON leaves behind (an
// unexported field, an interface, a func), and each, filled, comes back
// equal — whatever real runs happen to fill. A census's per-test counts
// (census.Census.Tests) stay out on purpose: the loop keeps them beside
// it, in Check.Tests, and empties the census's own (Loop.mechanical).
func TestLOOP_5_EveryFieldCrossesJSON(t *testing.T) {
	replaytest.Carried[State](t, "Census.Tests")
	replaytest.Carried[Observation](t, "Census.Tests")
	replaytest.Carried[Action](t)
	replaytest.Carried[ActResult](t, "Census.Tests")
}
