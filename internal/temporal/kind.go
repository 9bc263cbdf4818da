// Package temporal is the fleet engine: each loop kind as a durable
// Temporal workflow over the kind's own Decide, with its Observe and Act
// as activities on any worker of the fleet. It is the second engine
// beside internal/engine (one process, SQLite), and keeps the same
// contract: observe the world whole, decide purely, act idempotently.
//
// Mapping of the local engine onto Temporal:
//
//   - Decide, Stepped: run in the workflow, inside a SideEffect, so the
//     decision a workflow took is recorded in its history and a replay
//     reads it back: a Decide changed since never changes a running
//     workflow's past (GetVersion gates changes to the workflow's own
//     commands; see Version).
//   - Observe, Act: activities, bound on the worker to a loop the kind
//     builds from the workflow's parameters (Bind); whatever a bound loop
//     caches is re-derivable, so any worker can take over.
//   - The journal of finished actions lives in the workflow (Carry.Done):
//     an activity is told which keys finished and reports the ones it
//     finished, so a worker that dies loses nothing the workflow knew.
//   - Waits and back-off are durable timers; webhook events are the
//     "wake" signal, a stop request the "stop" signal.
//   - A transient fault is ridden out in the workflow within the fault
//     budget, as the local engine does; a retried Act after a lost worker
//     observes again before anything is repeated (REL-2).
//   - Continue-as-new every Options.StepsPerRun steps, or when the server
//     suggests it.
package temporal

import (
	"context"
	"time"

	"github.com/convergeloop/converge/internal/engine"
)

// Decider is the pure part of a loop kind, as the workflow runs it: the
// kind's own methods, no second copy of any rule. It must read nothing
// but its arguments and what it was made from.
type Decider[S, O any, A engine.Action] interface {
	Decide(st S, obs O) (next S, actions []A, done bool)
	Stepped(prev, next S, obs O) (restart bool)
	Fail(st S, obs O, cause error) (S, []A)
}

// Kind is one loop kind on the Temporal engine. P are its start
// parameters and D what its setup learned that Decide needs; both go into
// the workflow's history, so neither may hold a secret (SEC-3).
type Kind[P, D, S, O any, A engine.Action, R any] struct {
	// Name is the kind ("pr", "loop", "plan"); the workflow type is
	// "converge." + Name and its activities "converge.Name.observe"...
	Name string
	// Target names what the loop works on, from its parameters: one
	// workflow per target (PR-G5).
	Target func(p P) string
	// Initial is the first state of a new run (pure).
	Initial func(p P, d D) S
	// Decider makes the pure part from the setup (no IO); r collects what
	// it reports.
	Decider func(d D, r engine.Reporter) Decider[S, O, A]
	// Bind binds the loop to one run on this worker (IO allowed). setup is
	// nil the first time, and the workflow's recorded setup after, which
	// the loop must use so both halves agree. It is called again on any
	// worker that has no binding for the run.
	Bind func(ctx context.Context, b Binding[P, D]) (*Bound[S, O, A, R, D], error)
	// Transient tells a fault worth riding out from one that ends the run.
	Transient func(error) bool
	// Progress and Terminal read a state (pure), for queries and results.
	Progress func(S) engine.Progress
	Terminal func(S) (engine.Terminal, bool)
}

// Binding is what Bind gets.
type Binding[P, D any] struct {
	// RunID is the run's id, stable across continue-as-new: a workspace
	// keyed by it is the same run's on every worker.
	RunID  string
	Params P
	// Setup is nil on the first bind, the workflow's recorded one after.
	Setup *D
	// Journal and Reporter are the binding's: the loop must use them.
	Journal  *Journal
	Reporter engine.Reporter
}

// Bound is a loop bound on a worker.
type Bound[S, O any, A engine.Action, R, D any] struct {
	Loop  engine.Loop[S, O, A, R]
	Setup D
	// Options are the engine knobs the run's settings give (its poll
	// interval and fault budget, perhaps from the repository's config):
	// the workflow takes each one set here over its start's.
	Options Options
	// Close releases what the run alone used (its worktree); nil: nothing.
	Close func(ctx context.Context)
	// Redact removes the run's secrets from text (SEC-3): everything an
	// activity hands the workflow passes through it, since the history is
	// a store like any other. nil: nothing to redact.
	Redact func(string) string
	// Identity names whose rate limits the run's forge calls count
	// against ("HOST/LOGIN", "HOST/installation/ID"; never the token): the
	// run's spend is kept under it. "": a kind that calls no forge.
	Identity string
}

// Options are the engine's knobs for one workflow, fixed at its start.
type Options struct {
	PollMin     time.Duration `json:"poll_min"`
	PollMax     time.Duration `json:"poll_max"`
	FaultBudget time.Duration `json:"fault_budget"`
	// StepsPerRun bounds the steps between continue-as-new.
	StepsPerRun int `json:"steps_per_run"`
	// ObserveTimeout and ActTimeout bound one attempt of each activity;
	// Heartbeat is how soon a silent attempt counts its worker lost.
	ObserveTimeout time.Duration `json:"observe_timeout"`
	ActTimeout     time.Duration `json:"act_timeout"`
	Heartbeat      time.Duration `json:"heartbeat"`
}

// over is o with every knob set in by taking its place.
func (o Options) over(by Options) Options {
	if by.PollMin > 0 {
		o.PollMin = by.PollMin
	}
	if by.PollMax > 0 {
		o.PollMax = by.PollMax
	}
	if by.FaultBudget > 0 {
		o.FaultBudget = by.FaultBudget
	}
	if by.StepsPerRun > 0 {
		o.StepsPerRun = by.StepsPerRun
	}
	if by.ObserveTimeout > 0 {
		o.ObserveTimeout = by.ObserveTimeout
	}
	if by.ActTimeout > 0 {
		o.ActTimeout = by.ActTimeout
	}
	if by.Heartbeat > 0 {
		o.Heartbeat = by.Heartbeat
	}
	return o
}

func (o Options) withDefaults() Options {
	if o.PollMin <= 0 {
		o.PollMin = 60 * time.Second
	}
	if o.PollMax < o.PollMin {
		o.PollMax = 10 * o.PollMin
	}
	if o.FaultBudget <= 0 {
		o.FaultBudget = engine.DefaultFaultBudget
	}
	if o.StepsPerRun <= 0 {
		// A PR step records its state and observation, some 15 KB: a
		// hundred keep a run's history near 2 MB.
		o.StepsPerRun = 100
	}
	if o.ObserveTimeout <= 0 {
		o.ObserveTimeout = 10 * time.Minute
	}
	if o.ActTimeout <= 0 {
		o.ActTimeout = 4 * time.Hour
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 30 * time.Second
	}
	return o
}

// WorkflowType is the kind's workflow type name.
func (k *Kind[P, D, S, O, A, R]) WorkflowType() string { return "converge." + k.Name }

func (k *Kind[P, D, S, O, A, R]) activity(op string) string {
	return "converge." + k.Name + "." + op
}

// WorkflowID is the deterministic id of the workflow on a target, so two
// starts never run two loops (PR-G5).
func WorkflowID(kind, target string) string { return "converge-" + kind + ":" + target }
