package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
)

// Run names a run to its activities.
type Run struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// SetupIn and SetupOut are the setup activity's: the first bind of a run.
type SetupIn[P any] struct {
	Run    Run `json:"run"`
	Params P   `json:"params"`
}

type SetupOut[D any] struct {
	Setup   D              `json:"setup"`
	Options Options        `json:"options"`
	Events  []engine.Event `json:"events,omitempty"`
	// Spend is what the setup's forge calls cost (spend.go).
	Spend []SpendRow `json:"spend,omitempty"`
}

// ObserveIn and ObserveOut are the observe activity's.
type ObserveIn[P, D, S, R any] struct {
	Run           Run       `json:"run"`
	Params        P         `json:"params"`
	Setup         D         `json:"setup"`
	State         S         `json:"state"`
	Now           time.Time `json:"now"`
	Results       []R       `json:"results,omitempty"`
	StopRequested bool      `json:"stop_requested,omitempty"`
	Done          []string  `json:"done,omitempty"`
}

// Outcome is what an activity reports besides its value: the events and
// finished actions, and a fault: transient (ride it out, observe again)
// or failed (the run ends errored, with the kind's Fail worked out where
// the error's type is known).
type Outcome[S any, A any] struct {
	Events    []engine.Event `json:"events,omitempty"`
	Finished  []string       `json:"finished,omitempty"`
	Fault     string         `json:"fault,omitempty"`
	Transient bool           `json:"transient,omitempty"`
	// Lost: an attempt after a lost worker; nothing was done, observe
	// again before anything repeats.
	Lost bool           `json:"lost,omitempty"`
	Fail *Failure[S, A] `json:"fail,omitempty"`
	// Spend is what the activity's forge calls cost (spend.go).
	Spend []SpendRow `json:"spend,omitempty"`
}

// Failure is a run's errored end as the kind's Fail made it.
type Failure[S, A any] struct {
	State   S   `json:"state"`
	Actions []A `json:"actions,omitempty"`
}

type ObserveOut[S, O, A any] struct {
	Obs O `json:"obs"`
	Outcome[S, A]
}

// ActIn and ActOut are the act activity's: a run of a step's actions
// with no wait between them, done in order.
type ActIn[P, D, S, O, A any] struct {
	Run     Run      `json:"run"`
	Params  P        `json:"params"`
	Setup   D        `json:"setup"`
	State   S        `json:"state"`
	Obs     O        `json:"obs"`
	Actions []A      `json:"actions"`
	Done    []string `json:"done,omitempty"`
	// BestEffort: the errored end's actions; a failure stops them quietly.
	BestEffort bool `json:"best_effort,omitempty"`
}

type ActOut[S, A, R any] struct {
	Results []R `json:"results,omitempty"`
	// Woke: background work the acts started finished, and its result is
	// in Results: the wait after them ends at once, as a local loop's wait
	// ends when its background work does.
	Woke bool `json:"woke,omitempty"`
	Outcome[S, A]
}

// EndIn is the end activity's: release what the run used on this worker.
type EndIn struct {
	Run Run `json:"run"`
}

// Activities are a kind's activities on one worker, with the bound loops
// of the runs this worker has served. A binding is a cache: lost with the
// worker, made again by Bind on the next.
type Activities[P, D, S, O any, A engine.Action, R any] struct {
	Kind *Kind[P, D, S, O, A, R]
	// Now is the worker's clock for event times; nil: time.Now.
	Now func() time.Time
	// CodeOf is the exit code a bind failure maps to; nil: 1.
	CodeOf func(error) exitcode.Code

	mu    sync.Mutex
	bound map[string]*binding[S, O, A, R, D]
}

type binding[S, O any, A engine.Action, R, D any] struct {
	mu      sync.Mutex // one activity of a run at a time, even a zombie's
	b       *Bound[S, O, A, R, D]
	journal *Journal
	events  *collector
}

// maxBound bounds the bindings a worker keeps; the oldest goes first.
const maxBound = 512

func (a *Activities[P, D, S, O, A, R]) bind(ctx context.Context, run Run, p P, setup *D) (*binding[S, O, A, R, D], error) {
	a.mu.Lock()
	if a.bound == nil {
		a.bound = map[string]*binding[S, O, A, R, D]{}
	}
	bd, ok := a.bound[run.RunID]
	if !ok {
		bd = &binding[S, O, A, R, D]{journal: &Journal{}, events: &collector{now: a.now}}
		a.bound[run.RunID] = bd
	}
	a.mu.Unlock()
	bd.mu.Lock()
	if bd.b != nil {
		return bd, nil
	}
	b, err := a.Kind.Bind(ctx, Binding[P, D]{RunID: run.RunID, Params: p, Setup: setup, Journal: bd.journal, Reporter: bd.events})
	if err != nil {
		bd.mu.Unlock()
		a.forget(run.RunID)
		return nil, err
	}
	bd.b = b
	a.mu.Lock()
	if len(a.bound) > maxBound {
		for id, o := range a.bound {
			if id != run.RunID && o.mu.TryLock() {
				if o.b != nil && o.b.Close != nil {
					o.b.Close(context.WithoutCancel(ctx))
				}
				delete(a.bound, id)
				o.mu.Unlock()
				break
			}
		}
	}
	a.mu.Unlock()
	return bd, nil
}

func (a *Activities[P, D, S, O, A, R]) forget(runID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.bound, runID)
}

func (a *Activities[P, D, S, O, A, R]) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// ErrBind is the error type of a run that cannot be bound on a worker
// (bad parameters, a token refused): retrying will not help.
const ErrBind = "converge.bind"

func (a *Activities[P, D, S, O, A, R]) bindError(err error) error {
	code := exitcode.Error
	if a.CodeOf != nil {
		code = a.CodeOf(err)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrBind, nil, code)
}

// BindError is a run a worker could not bind, with the exit code the
// cause maps to, as a workflow's client reads it.
type BindError struct {
	Message string
	Code    exitcode.Code
}

func (e *BindError) Error() string { return e.Message }

// AsBindError finds a BindError in a workflow's failure.
func AsBindError(err error) (*BindError, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrBind {
		return nil, false
	}
	be := &BindError{Message: app.Message(), Code: 1}
	if app.HasDetails() {
		_ = app.Details(&be.Code)
	}
	return be, true
}

// Setup binds a new run and reports what Decide needs.
func (a *Activities[P, D, S, O, A, R]) Setup(ctx context.Context, in SetupIn[P]) (SetupOut[D], error) {
	stop := heartbeat(ctx)
	defer stop()
	meter := &spendMeter{}
	ctx = forge.WithMeter(ctx, meter)
	bd, err := a.bind(ctx, in.Run, in.Params, nil)
	if err != nil {
		return SetupOut[D]{}, a.bindError(err)
	}
	defer bd.mu.Unlock()
	return redacted(bd.b.Redact, SetupOut[D]{Setup: bd.b.Setup, Options: bd.b.Options, Events: bd.events.take(), Spend: meter.spent(bd.b.Identity)})
}

// Observe reads the world whole for the workflow's next decision.
func (a *Activities[P, D, S, O, A, R]) Observe(ctx context.Context, in ObserveIn[P, D, S, R]) (ObserveOut[S, O, A], error) {
	stop := heartbeat(ctx)
	defer stop()
	meter := &spendMeter{}
	ctx = forge.WithMeter(ctx, meter)
	bd, err := a.bind(ctx, in.Run, in.Params, &in.Setup)
	if err != nil {
		return ObserveOut[S, O, A]{}, a.bindError(err)
	}
	defer bd.mu.Unlock()
	bd.journal.begin(in.Done)
	obs, err := bd.b.Loop.Observe(ctx, in.State, engine.Input[R]{Now: in.Now, Results: in.Results, StopRequested: in.StopRequested})
	out := ObserveOut[S, O, A]{Obs: obs}
	if err != nil {
		var zero O
		out.Outcome = a.fault(ctx, bd, in.State, zero, fmt.Errorf("observe: %w", err))
	}
	out.Events, out.Finished, out.Spend = bd.events.take(), bd.journal.take(), meter.spent(bd.b.Identity)
	if err := ctx.Err(); err != nil {
		return out, err
	}
	return redacted(bd.b.Redact, out)
}

// Act does a run of one step's actions in order, as the local engine
// does, and waits for background work they started (the local review)
// while heartbeating, so its result comes back with them.
func (a *Activities[P, D, S, O, A, R]) Act(ctx context.Context, in ActIn[P, D, S, O, A]) (ActOut[S, A, R], error) {
	stop := heartbeat(ctx)
	defer stop()
	if activity.GetInfo(ctx).Attempt > 1 && !in.BestEffort {
		// The attempt before was lost with its worker, perhaps mid-way:
		// the world decides what is left, as after a local crash (REL-2).
		return ActOut[S, A, R]{Outcome: Outcome[S, A]{Lost: true}}, nil
	}
	meter := &spendMeter{}
	ctx = forge.WithMeter(ctx, meter)
	bd, err := a.bind(ctx, in.Run, in.Params, &in.Setup)
	if err != nil {
		return ActOut[S, A, R]{}, a.bindError(err)
	}
	defer bd.mu.Unlock()
	bd.journal.begin(in.Done)
	if p, ok := bd.b.Loop.(planner[A]); ok {
		// The step was decided in the workflow, not by this loop: tell it
		// the actions it does together (a PR step's batched replies).
		p.Planned(in.Actions)
	}
	var out ActOut[S, A, R]
	for _, act := range in.Actions {
		res, err := bd.b.Loop.Act(ctx, in.State, in.Obs, act)
		out.Results = append(out.Results, res)
		if err != nil {
			if !in.BestEffort {
				out.Outcome = a.fault(ctx, bd, in.State, in.Obs, err)
			}
			break
		}
	}
	if w, ok := bd.b.Loop.(awaiter[R]); ok && out.Fault == "" && ctx.Err() == nil {
		res, err := w.AwaitBackground(ctx)
		if err != nil {
			out.Outcome = a.fault(ctx, bd, in.State, in.Obs, err)
		} else if !reflect.ValueOf(&res).Elem().IsZero() {
			// A nil *ActResult in an interface is no nil interface: only
			// a result that is not R's zero is background work's.
			out.Results = append(out.Results, res)
			out.Woke = true
		}
	}
	out.Events, out.Finished, out.Spend = bd.events.take(), bd.journal.take(), meter.spent(bd.b.Identity)
	if err := ctx.Err(); err != nil {
		return out, err
	}
	return redacted(bd.b.Redact, out)
}

// redacted is v with redact applied to its JSON, the form the history
// keeps it in.
func redacted[T any](redact func(string) string, v T) (T, error) {
	if redact == nil {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, fmt.Errorf("encode activity result: %w", err)
	}
	r := redact(string(b))
	if r == string(b) {
		return v, nil
	}
	var out T
	if err := json.Unmarshal([]byte(r), &out); err != nil {
		return v, fmt.Errorf("decode redacted activity result: %w", err)
	}
	return out, nil
}

// planner is a loop that does a step's actions together, told the step's
// run of actions before the first of them.
type planner[A any] interface {
	Planned(actions []A)
}

// awaiter is a loop with background work (engine.Background) that can
// wait for it and hand back its result; nil result when none ran.
type awaiter[R any] interface {
	AwaitBackground(ctx context.Context) (R, error)
}

// End releases what the run used on this worker.
func (a *Activities[P, D, S, O, A, R]) End(ctx context.Context, in EndIn) error {
	a.mu.Lock()
	bd, ok := a.bound[in.Run.RunID]
	delete(a.bound, in.Run.RunID)
	a.mu.Unlock()
	if !ok {
		return nil
	}
	bd.mu.Lock()
	defer bd.mu.Unlock()
	if bd.b != nil && bd.b.Close != nil {
		bd.b.Close(ctx)
	}
	return nil
}

// fault sorts an activity's error: transient (the workflow rides it out)
// or the run's end, which the kind's Fail works out here, where the
// error's type is still known.
func (a *Activities[P, D, S, O, A, R]) fault(ctx context.Context, bd *binding[S, O, A, R, D], st S, obs O, err error) Outcome[S, A] {
	o := Outcome[S, A]{Fault: err.Error()}
	if ctx.Err() != nil {
		return o
	}
	if a.Kind.Transient != nil && a.Kind.Transient(err) {
		o.Transient = true
		return o
	}
	next, acts := bd.b.Loop.Fail(st, obs, err)
	o.Fail = &Failure[S, A]{State: next, Actions: acts}
	return o
}

// heartbeat reports the activity alive until stop is called, so a lost
// worker is noticed within the heartbeat timeout, not the attempt's.
func heartbeat(ctx context.Context) (stop func()) {
	info := activity.GetInfo(ctx)
	every := info.HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
