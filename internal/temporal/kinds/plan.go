package kinds

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/temporal"
)

// PlanParams are a plan run's start parameters: the plan itself (its
// file's name and content, read where the command ran), the `converge
// plan run` flags that are the run's own settings, and the repository it
// commits in. Repo is an absolute path on the worker's machine: a plan
// works on a local git repository, so the worker that runs it must reach
// that path (the same machine, or a shared filesystem). Nothing here is a
// secret (the history keeps it).
type PlanParams struct {
	Repo string `json:"repo"`
	// File names the plan (absolute, as the command was given it); Data
	// is its content.
	File           string            `json:"file"`
	Data           string            `json:"data"`
	Agent          string            `json:"agent,omitempty"`
	AgentCmd       string            `json:"agent_cmd,omitempty"`
	ReviewAgent    string            `json:"review_agent,omitempty"`
	ReviewAgentCmd string            `json:"review_agent_cmd,omitempty"`
	AgentTimeout   time.Duration     `json:"agent_timeout,omitempty"`
	Parallel       int               `json:"parallel,omitempty"`
	Set            map[string]string `json:"set,omitempty"`
	NoAgentCheck   bool              `json:"no_agent_check,omitempty"`
}

// Target is the repository the plan commits in: one plan run per
// repository, as a local `converge plan run` locks it.
func (p PlanParams) Target() string { return filepath.Clean(p.Repo) }

// PlanSetup is what Decide needs of a plan run, learned by its first
// bind on a worker: the run's id (its tickets are named after it) and
// its settings, the parsed plan among them.
type PlanSetup struct {
	RunID  string      `json:"run_id"`
	Config plan.Config `json:"config"`
}

// PlanKind is the plan executor's kind on the Temporal engine.
type PlanKind = temporal.Kind[PlanParams, PlanSetup, plan.State, plan.Observation, plan.Action, plan.ActResult]

// PlanBind binds a plan run on a worker.
type PlanBind = func(ctx context.Context, b temporal.Binding[PlanParams, PlanSetup]) (*PlanBound, error)

// PlanBound is a plan run bound on a worker.
type PlanBound = temporal.Bound[plan.State, plan.Observation, plan.Action, plan.ActResult, PlanSetup]

// Plan is the plan executor's kind (`converge plan run`), bound on
// workers by bind (nil where nothing runs activities: a client, a
// replay). A worker's bound loop is PlanLoop over plan's own Loop.
func Plan(bind PlanBind) *PlanKind {
	return &PlanKind{
		Name:    plan.Kind,
		Target:  PlanParams.Target,
		Initial: func(_ PlanParams, d PlanSetup) plan.State { return plan.NewState(d.RunID, d.Config) },
		Decider: func(d PlanSetup, r engine.Reporter) temporal.Decider[plan.State, plan.Observation, plan.Action] {
			// The same Loop's Decide, Stepped and Fail, bound to nothing
			// but the reporter: they do no IO.
			return PlanLoop{plan.NewLoop(d.RunID, plan.Deps{Reporter: r})}
		},
		Bind:     bind,
		Progress: PlanProgress,
		Terminal: PlanTerminal,
	}
}

// PlanLoop is plan's Loop as a workflow runs it. It differs in one rule:
// a fault that needs a human (plan.HumanNeeded) leaves a local run
// unfinished, for the same command to resume once the branch is put
// right; a workflow cannot stay unfinished, so it ends the run blocked
// (exit 3, handed to a human) with what to put right.
type PlanLoop struct{ *plan.Loop }

// Fail ends the run on a fault (engine.Loop).
func (l PlanLoop) Fail(st plan.State, obs plan.Observation, cause error) (plan.State, []plan.Action) {
	var hn *plan.HumanNeeded
	if !errors.As(cause, &hn) {
		return l.Loop.Fail(st, obs, cause)
	}
	next, acts := l.Loop.Fail(st, obs, errors.New(hn.Why))
	if next.Terminal != nil {
		next.Terminal.Status, next.Terminal.ExitCode = plan.StatusBlocked, plan.StatusBlocked.ExitCode()
		next.Terminal.Message = "a human must put the branch right: " + hn.Why + "; then start the plan again"
	}
	return next, acts
}

// PlanProgress is where a plan run stands: its terminal, or the tasks
// ended so far (the round).
func PlanProgress(st plan.State) engine.Progress {
	if st.Terminal != nil {
		return engine.Progress{Phase: string(st.Terminal.Status)}
	}
	ended := 0
	for _, t := range st.Tasks {
		if t.Status != "" {
			ended++
		}
	}
	return engine.Progress{Phase: "tasks", Round: ended}
}

// PlanTerminal reads a plan run's terminal as the engines record it.
func PlanTerminal(st plan.State) (engine.Terminal, bool) {
	if t := st.Terminal; t != nil {
		return engine.Terminal{Status: string(t.Status), Code: t.ExitCode}, true
	}
	return engine.Terminal{}, false
}
