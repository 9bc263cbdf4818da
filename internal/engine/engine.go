// Package engine is the level-triggered loop every loop kind runs on:
// observe the world whole, ask a pure Decide what to do, persist the new
// state, then act, idempotently. The engine, not the step, owns waiting,
// back-off, deadlines, wake-ups, stop requests and riding out faults, as
// controller-runtime's manager owns requeue for its reconcilers.
//
// A loop kind (the PR loop, the done-check loop, the plan executor)
// brings its own State, Observation, Action and Result types and
// implements Loop; the engine is generic over them. The same Decide runs
// here and inside a Temporal workflow, where Observe and Act become
// activities.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultFaultBudget is how long a run rides out transient faults.
const DefaultFaultBudget = 10 * time.Minute

// Loop is one loop kind, bound to one run. S is its persisted state, O an
// observation, A an action and R what an action reports back to the next
// observation.
type Loop[S, O any, A Action, R any] interface {
	// Observe reads the world whole; it never trusts what an event said.
	Observe(ctx context.Context, st S, in Input[R]) (O, error)
	// Decide is pure: no IO, no clock (time arrives in the observation),
	// no map iteration order. done is true once next holds a terminal.
	Decide(st S, obs O) (next S, actions []A, done bool)
	// Act performs one action; it must be idempotent, keyed by what the
	// world shows, because a crash may repeat it.
	Act(ctx context.Context, st S, obs O, a A) (R, error)
	// Stepped is told of every persisted step; restart reports that the
	// loop moved on (a new phase), so the back-off starts over.
	Stepped(prev, next S, obs O) (restart bool)
	// Fail is the errored terminal for a cause that ends the run, and the
	// best-effort actions that tell the world (a label, a status).
	Fail(st S, obs O, cause error) (S, []A)
}

// Action is what the engine needs to know of a loop's action. A wait
// that also has an `Event() Event` method is reported before the engine
// waits (UX-1's status line).
type Action interface {
	// Wait reports whether the action asks the engine to wait, and the
	// deadline Decide knows (zero: none); the engine waits for the
	// shorter of the deadline and its back-off.
	Wait() (after time.Duration, ok bool)
}

// Input is what the engine hands each observation.
type Input[R any] struct {
	// Now is the engine's clock; Decide reads time only from here.
	Now time.Time
	// Results are what the acts since the last observation reported,
	// oldest first. After a fault they are kept for the next one.
	Results []R
	// StopRequested is a stop asked from outside (a signal, `converge
	// stop`); the loop decides how to end.
	StopRequested bool
}

// Background is implemented by a loop that runs work beside the poll (the
// PR loop's local review): its completion wakes the engine, and the
// engine waits for it to end before Run returns.
type Background interface {
	// Wake is ready when background work finished; nil when none runs.
	Wake() <-chan struct{}
	// Drain waits for background work, whose context is cancelled, to end.
	Drain()
}

// Journal persists a run's state before every risky step.
type Journal[S any] interface {
	SaveState(ctx context.Context, s S) error
}

// Clock is the engine's time source; tests inject a fake one.
type Clock interface {
	Now() time.Time
	// After waits d; it is the only way the engine waits.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time                         { return time.Now() }
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Event is one progress report (UX-1): printed as a line or NDJSON.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // observe, round, review, fix, reply, resolve, label, status, wait, terminal, note
	Round   int       `json:"round,omitempty"`
	Message string    `json:"message"`
	Data    any       `json:"data,omitempty"`
}

// Reporter receives progress events.
type Reporter interface{ Report(Event) }

// ReporterFunc adapts a function.
type ReporterFunc func(Event)

func (f ReporterFunc) Report(e Event) { f(e) }

// Options are the engine's knobs for one run.
type Options struct {
	Clock    Clock
	Reporter Reporter
	PollMin  time.Duration // first wait between polls (PR-S2: 60 s)
	PollMax  time.Duration // back-off cap (600 s)
	// FaultBudget is how long transient faults may persist before the run
	// ends errored (REL-1); zero means DefaultFaultBudget.
	FaultBudget time.Duration
	// Transient tells a fault worth riding out (an outage, a rate limit)
	// from one that ends the run; nil: every error ends it.
	Transient func(error) bool
	// Wake, when set, ends a wait early (webhooks in server mode, the
	// in-process emulator in the demo). The engine re-reads the world on
	// wake; it never trusts what the event carried.
	Wake <-chan struct{}
	// Stop, when closed or signalled, is a stop request.
	Stop <-chan struct{}
	// StopRequested, when set, is asked every step whether a stop was
	// requested from outside the process (`converge stop RUN`).
	StopRequested func(ctx context.Context) bool
	// Drain, when closed, ends the run at its next step boundary (a wait,
	// or before the next observation) with ErrDrained: no action is cut
	// mid-way, the state is persisted, and the run stays unfinished, so a
	// restart resumes it (Manager.Drain).
	Drain <-chan struct{}
	// OnStep, when set, is told of every persisted state (Manager's
	// Snapshot).
	OnStep func(state any)
	// Polls, when set, is the fleet's budget every fallback poll takes a
	// permit from (pollbudget.go).
	Polls PollBudget
}

// ErrDrained is a run ended by Options.Drain: unfinished, resumable.
var ErrDrained = errors.New("drained: the run stopped at a step boundary and resumes on the next start")

// Run drives one loop from st until Decide reports done, and returns the
// final state. An error is returned for a fault that ends the run, after
// the errored state is persisted; a cancelled ctx returns ctx's error
// with the last state persisted, so the run can resume.
func Run[S, O any, A Action, R any](ctx context.Context, loop Loop[S, O, A, R], j Journal[S], st S, opt Options) (S, error) {
	e := &runner[S, O, A, R]{loop: loop, j: j, opt: opt, st: st}
	e.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		// Background work still running is stopped, and waited for,
		// before the caller may remove what it works on.
		cancel()
		if e.bg != nil {
			e.bg.Drain()
		}
	}()
	err := e.run(ctx)
	return e.st, err
}

// runner is one run's engine. The state and the observation live here,
// not in run's frame: a parked loop's goroutine stack stays small, which
// is most of what a waiting loop costs (BENCHMARKS.md).
type runner[S, O any, A Action, R any] struct {
	loop Loop[S, O, A, R]
	j    Journal[S]
	opt  Options
	bg   Background

	st      S
	obs     O
	hasObs  bool
	results []R
	wait    time.Duration
	// faultSince is when the current streak of transient faults began;
	// zero when the last step reached the world (REL-1).
	faultSince time.Time
	// nowTries counts the acts in a row that asked for a new observation
	// at once (observeNow), so a world that keeps moving under one act
	// falls back to the fault budget's waits.
	nowTries int
	// crashPoll: the step waits, so its acts are no crash boundaries (REL-2).
	crashPoll bool
	// pollCharge settles the permit of the poll the next observation is
	// (pollbudget.go); nil when it is no poll, or the budget counts polls.
	pollCharge PollCharge
}

func (e *runner[S, O, A, R]) defaults() {
	if e.opt.Clock == nil {
		e.opt.Clock = SystemClock{}
	}
	if e.opt.PollMin <= 0 {
		e.opt.PollMin = 60 * time.Second
	}
	if e.opt.PollMax < e.opt.PollMin {
		e.opt.PollMax = 10 * e.opt.PollMin
	}
	if e.opt.FaultBudget <= 0 {
		e.opt.FaultBudget = DefaultFaultBudget
	}
	e.bg, _ = any(e.loop).(Background)
}

func (e *runner[S, O, A, R]) run(ctx context.Context) error {
	e.wait = e.opt.PollMin
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.draining() {
			return ErrDrained
		}
		actions, done, restart, err := e.step(ctx)
		if err != nil {
			if errors.Is(err, errPersist) {
				return err
			}
			// The acts' results are kept for the next observation.
			if ok, stop := e.rideOut(ctx, err); stop != nil {
				return stop
			} else if ok {
				continue
			}
			return e.fail(ctx, fmt.Errorf("observe: %w", err))
		}
		waited, faulted := false, false
		for i := range actions {
			if after, ok := actions[i].Wait(); ok {
				if done {
					continue
				}
				if restart {
					e.wait = e.opt.PollMin
				}
				if d, ok := any(actions[i]).(interface{ Event() Event }); ok {
					e.report(d.Event())
				}
				d := e.wait
				if after > 0 && after < d {
					// Decide knows a deadline before the back-off ends.
					d = after
				}
				if err := e.sleep(ctx, d); err != nil {
					return err
				}
				e.wait = min(e.wait*2, e.opt.PollMax)
				waited = true
				continue
			}
			if err := e.act(ctx, &actions[i]); err != nil {
				if e.observeNow(err) {
					faulted = true
					break
				}
				// A write the world failed transiently: observe again and
				// let Decide ask again for what the world does not show;
				// every write is keyed by what the world shows (REL-2).
				if ok, stop := e.rideOut(ctx, err); stop != nil {
					return stop
				} else if ok {
					faulted = true
					break
				}
				return e.fail(ctx, err)
			}
		}
		if faulted {
			continue
		}
		e.faultSince, e.nowTries = time.Time{}, 0
		if !waited {
			e.wait = e.opt.PollMin
		}
		if done {
			return nil
		}
	}
}

// errPersist marks a failure to persist state: the run cannot go on, and
// there is nothing to persist its end with.
var errPersist = errors.New("persist state")

// step observes, decides and persists; the actions are the caller's.
func (e *runner[S, O, A, R]) step(ctx context.Context) (actions []A, done, restart bool, err error) {
	octx := ctx
	if charge := e.pollCharge; charge != nil {
		// A poll: the budget is charged what its observation spent.
		e.pollCharge = nil
		var settle func()
		octx, settle = charge(ctx)
		defer settle()
	}
	obs, err := e.loop.Observe(octx, e.st, Input[R]{Now: e.opt.Clock.Now(), Results: e.results, StopRequested: e.stopRequested(ctx)})
	if err != nil {
		return nil, false, false, err
	}
	e.obs, e.hasObs, e.results = obs, true, nil
	next, actions, done := e.loop.Decide(e.st, obs)
	e.crashPoll = crashSave(actions, done, false)
	if err := e.j.SaveState(ctx, next); err != nil {
		return nil, false, false, fmt.Errorf("%w: %w", errPersist, err)
	}
	crashSave(actions, done, true)
	restart = e.loop.Stepped(e.st, next, obs)
	e.st = next
	if e.opt.OnStep != nil {
		e.opt.OnStep(next)
	}
	return actions, done, restart, nil
}

func (e *runner[S, O, A, R]) act(ctx context.Context, a *A) error {
	crashAct(a, e.crashPoll, false)
	res, err := e.loop.Act(ctx, e.st, e.obs, *a)
	crashAct(a, e.crashPoll, true)
	e.results = append(e.results, res)
	return err
}

// rideOut waits out a transient fault with the engine's back-off, for as
// long as the run's fault budget allows; it reports false for any other
// error, or once the streak has lasted longer than the budget: then the
// fault persisted (REL-1). A drain during the wait is stop: the run ends
// drained, not failed.
func (e *runner[S, O, A, R]) rideOut(ctx context.Context, err error) (ok bool, stop error) {
	if e.opt.Transient == nil || !e.opt.Transient(err) || ctx.Err() != nil {
		return false, nil
	}
	now := e.opt.Clock.Now()
	if e.faultSince.IsZero() {
		e.faultSince = now
	}
	spent := now.Sub(e.faultSince)
	if spent > e.opt.FaultBudget {
		return false, nil
	}
	e.report(Event{Kind: "note", Message: fmt.Sprintf("transient fault (%v); observing again in %s (fault budget %s, %s spent)", err, e.wait, e.opt.FaultBudget, spent.Round(time.Second))})
	if err := e.sleep(ctx, e.wait); errors.Is(err, ErrDrained) {
		return false, err
	} else if err != nil {
		return false, nil
	}
	e.wait = min(e.wait*2, e.opt.PollMax)
	return true, nil
}

// fail ends the run errored: the terminal state is persisted, then the
// loop's best-effort actions tell the world. The original error is
// returned so the caller's exit code says what went wrong.
func (e *runner[S, O, A, R]) fail(ctx context.Context, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	var obs O // the zero observation when none reached the world
	if e.hasObs {
		obs = e.obs
	}
	next, actions := e.loop.Fail(e.st, obs, cause)
	e.crashPoll = crashSave(actions, true, false)
	if err := e.j.SaveState(ctx, next); err != nil {
		return errors.Join(cause, fmt.Errorf("persist errored state: %w", err))
	}
	crashSave(actions, true, true)
	e.st, e.obs = next, obs
	for i := range actions {
		if _, ok := actions[i].Wait(); ok {
			continue
		}
		if err := e.act(ctx, &actions[i]); err != nil {
			break
		}
	}
	return cause
}

func (e *runner[S, O, A, R]) sleep(ctx context.Context, d time.Duration) error {
	e.park(ctx, d) // an idle loop holds no worktree (park.go)
	var bg <-chan struct{}
	if e.bg != nil {
		bg = e.bg.Wake()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-e.opt.Clock.After(d):
		return e.pollPermit(ctx, bg) // a fallback poll (pollbudget.go)
	case <-e.opt.Wake:
	case <-e.opt.Stop:
	case <-bg:
	case <-e.opt.Drain:
		return ErrDrained
	}
	return nil
}

func (e *runner[S, O, A, R]) draining() bool {
	select {
	case <-e.opt.Drain:
		return true
	default:
		return false
	}
}

func (e *runner[S, O, A, R]) stopRequested(ctx context.Context) bool {
	if e.opt.StopRequested != nil && e.opt.StopRequested(ctx) {
		return true
	}
	if e.opt.Stop == nil {
		return false
	}
	select {
	case <-e.opt.Stop:
		return true
	default:
		return false
	}
}

func (e *runner[S, O, A, R]) report(ev Event) {
	if e.opt.Reporter == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = e.opt.Clock.Now()
	}
	e.opt.Reporter.Report(ev)
}

// maxObserveNow bounds the immediate re-observations in a row.
const maxObserveNow = 3

// observeNow reports an act's fault that a new observation answers at
// once — the world moved under a decision (a PR's head after its verdict
// was decided) — rather than an outage to wait out. Only a few in a row:
// then the fault is waited out like any other.
func (e *runner[S, O, A, R]) observeNow(err error) bool {
	var now interface{ ObserveNow() bool }
	if !errors.As(err, &now) || !now.ObserveNow() || e.nowTries >= maxObserveNow {
		return false
	}
	e.nowTries++
	e.report(Event{Kind: "note", Message: fmt.Sprintf("%v; observing again", err)})
	return true
}
