package kinds

import (
	"context"
	"path/filepath"
	"time"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/temporal"
)

// LoopParams are a done-check loop's start parameters: the `converge
// loop` flags that are the loop's own settings, and the repository it
// commits in. Repo is an absolute path on the worker's machine: a loop
// works on a local git repository, so the worker that runs it must
// reach that path (the same machine, or a shared filesystem). The state
// directory is each worker's; nothing here is a secret (the history
// keeps it).
type LoopParams struct {
	Repo string `json:"repo"`
	// Goal is the goal verbatim; GoalFile the file it was read from, if
	// any (absolute), which the loop protects.
	Goal             string            `json:"goal"`
	GoalFile         string            `json:"goal_file,omitempty"`
	Check            string            `json:"check,omitempty"`
	Judge            string            `json:"judge,omitempty"`
	JudgeCmd         string            `json:"judge_cmd,omitempty"`
	Agent            string            `json:"agent,omitempty"`
	AgentCmd         string            `json:"agent_cmd,omitempty"`
	Protect          []string          `json:"protect,omitempty"`
	MaxIterations    int               `json:"max_iterations"`
	StallAfter       int               `json:"stall_after,omitempty"`
	Confirm          int               `json:"confirm,omitempty"`
	ConfirmSet       bool              `json:"confirm_set,omitempty"`
	AllowTestRemoval bool              `json:"allow_test_removal,omitempty"`
	MaxWallClock     time.Duration     `json:"max_wall_clock,omitempty"`
	MaxCost          float64           `json:"max_cost,omitempty"`
	AgentTimeout     time.Duration     `json:"agent_timeout,omitempty"`
	CheckTimeout     time.Duration     `json:"check_timeout,omitempty"`
	Set              map[string]string `json:"set,omitempty"`
	NoAgentCheck     bool              `json:"no_agent_check,omitempty"`
}

// Target is the repository the loop commits in: one loop per
// repository, as a local `converge loop` locks it.
func (p LoopParams) Target() string { return filepath.Clean(p.Repo) }

// LoopSetup is what Decide needs of a done-check loop, learned by its
// first bind on a worker: the run's id (its tickets are named after it)
// and its frozen settings.
type LoopSetup struct {
	RunID  string           `json:"run_id"`
	Config checkloop.Config `json:"config"`
}

// LoopKind is the done-check loop's kind on the Temporal engine.
type LoopKind = temporal.Kind[LoopParams, LoopSetup, checkloop.State, checkloop.Observation, checkloop.Action, checkloop.ActResult]

// LoopBind binds a done-check loop on a worker.
type LoopBind = func(ctx context.Context, b temporal.Binding[LoopParams, LoopSetup]) (*LoopBound, error)

// LoopBound is a done-check loop bound on a worker.
type LoopBound = temporal.Bound[checkloop.State, checkloop.Observation, checkloop.Action, checkloop.ActResult, LoopSetup]

// Check is the done-check loop's kind (`converge loop`), bound on
// workers by bind (nil where nothing runs activities: a client, a
// replay).
func Check(bind LoopBind) *LoopKind {
	return &LoopKind{
		Name:    checkloop.Kind,
		Target:  LoopParams.Target,
		Initial: func(_ LoopParams, d LoopSetup) checkloop.State { return checkloop.NewState(d.RunID, d.Config) },
		Decider: func(d LoopSetup, r engine.Reporter) temporal.Decider[checkloop.State, checkloop.Observation, checkloop.Action] {
			// The same Loop's Decide, Stepped and Fail, bound to nothing
			// but the reporter: they do no IO.
			return checkloop.NewLoop(d.RunID, checkloop.Deps{Reporter: r})
		},
		Bind:     bind,
		Progress: LoopProgress,
		Terminal: LoopTerminal,
	}
}

// LoopProgress is where a done-check loop stands: its terminal, or the
// iterations so far.
func LoopProgress(st checkloop.State) engine.Progress {
	if st.Terminal != nil {
		return engine.Progress{Phase: string(st.Terminal.Status), Round: len(st.Iterations)}
	}
	return engine.Progress{Phase: "iterating", Round: len(st.Iterations)}
}

// LoopTerminal reads a done-check loop's terminal as the engines record
// it.
func LoopTerminal(st checkloop.State) (engine.Terminal, bool) {
	if t := st.Terminal; t != nil {
		return engine.Terminal{Status: string(t.Status), Code: t.ExitCode}, true
	}
	return engine.Terminal{}, false
}
