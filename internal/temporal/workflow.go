package temporal

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/convergeloop/converge/internal/engine"
)

// Signal and query names.
const (
	SignalWake  = "wake" // a webhook event: observe again now
	SignalStop  = "stop" // a stop request (`converge stop`)
	QueryStatus = "status"
	QueryLog    = "log"
	QueryProof  = "proof"
	// QuerySpend answers the run's forge spend so far ([]SpendRow).
	QuerySpend = "spend"
	QueryState = "state" // the loop's state, as its kind persists it
)

// Version is the workflow code's version for GetVersion: bump it, with a
// branch on the old value kept, when a change alters the commands a
// running workflow issues (its activities, timers or their order). A
// changed Decide needs no bump: its decisions are recorded in the
// history (SideEffect) and read back on replay.
const (
	versionChange = "converge-workflow"
	Version       = workflow.Version(1)
)

// Input is a workflow's input, and what it carries over continue-as-new.
type Input[P, D, S, R any] struct {
	Params  P       `json:"params"`
	Options Options `json:"options"`
	// Setup is nil until the setup activity ran.
	Setup *D       `json:"setup,omitempty"`
	State S        `json:"state"`
	Carry Carry[R] `json:"carry"`
}

// Carry is the engine's own state between steps.
type Carry[R any] struct {
	// Done are the keys of the actions that finished (the journal).
	Done []string `json:"done,omitempty"`
	// Results are the acts' results for the next observation.
	Results []R `json:"results,omitempty"`
	// Log is the tail of the run's events.
	Log        []engine.Event `json:"log,omitempty"`
	Wait       time.Duration  `json:"wait,omitempty"`
	FaultSince time.Time      `json:"fault_since,omitempty"`
	Steps      int            `json:"steps,omitempty"`
	Stop       bool           `json:"stop,omitempty"`
	Runs       int            `json:"runs,omitempty"` // continue-as-new count
	// Spend is what the run's forge calls cost so far (spend.go).
	Spend []SpendRow `json:"spend,omitempty"`
}

// Result is how a workflow ended.
type Result[S any] struct {
	RunID    string          `json:"run_id"`
	State    S               `json:"state"`
	Terminal engine.Terminal `json:"terminal"`
	Steps    int             `json:"steps"`
	// Log is the run's events (their tail), readable with no worker up.
	Log []engine.Event `json:"log,omitempty"`
	// Spend is what the run's forge calls cost (spend.go).
	Spend []SpendRow `json:"spend,omitempty"`
}

// Status answers the status query.
type Status struct {
	Kind     string           `json:"kind"`
	Target   string           `json:"target"`
	RunID    string           `json:"run_id"`
	Progress engine.Progress  `json:"progress"`
	Terminal *engine.Terminal `json:"terminal,omitempty"`
	Steps    int              `json:"steps"`
	Waiting  bool             `json:"waiting"`
	Fault    string           `json:"fault,omitempty"`
}

// decision is one Decide and Stepped, as the history records it.
type decision[S, A any] struct {
	Next    S              `json:"next"`
	Actions []A            `json:"actions,omitempty"`
	Done    bool           `json:"done,omitempty"`
	Restart bool           `json:"restart,omitempty"`
	Events  []engine.Event `json:"events,omitempty"`
}

// Workflow is the kind's workflow: the local engine's loop (engine.Run)
// on durable timers and activities.
func (k *Kind[P, D, S, O, A, R]) Workflow(ctx workflow.Context, in Input[P, D, S, R]) (Result[S], error) {
	w := &flow[P, D, S, O, A, R]{k: k, in: in, opt: in.Options.withDefaults()}
	info := workflow.GetInfo(ctx)
	w.run = Run{WorkflowID: info.WorkflowExecution.ID, RunID: info.FirstRunID}
	if w.run.RunID == "" {
		w.run.RunID = info.WorkflowExecution.RunID
	}
	return w.loop(ctx)
}

type flow[P, D, S, O any, A engine.Action, R any] struct {
	k   *Kind[P, D, S, O, A, R]
	in  Input[P, D, S, R]
	opt Options
	run Run

	wake, stop workflow.ReceiveChannel
	obs        O
	hasObs     bool
	waiting    bool
	fault      string
	// woke: background work finished; the next wait ends at once.
	woke bool
}

func (w *flow[P, D, S, O, A, R]) loop(ctx workflow.Context) (Result[S], error) {
	if v := workflow.GetVersion(ctx, versionChange, workflow.DefaultVersion, Version); v != Version {
		return Result[S]{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("workflow version %d is no longer supported", v), "converge.version", nil)
	}
	w.wake = workflow.GetSignalChannel(ctx, SignalWake)
	w.stop = workflow.GetSignalChannel(ctx, SignalStop)
	if err := w.queries(ctx); err != nil {
		return Result[S]{}, err
	}
	c := &w.in.Carry
	if w.in.Setup == nil {
		var out SetupOut[D]
		if err := workflow.ExecuteActivity(w.actx(ctx, w.opt.ObserveTimeout), w.k.activity("setup"), SetupIn[P]{Run: w.run, Params: w.in.Params}).Get(ctx, &out); err != nil {
			return Result[S]{}, err
		}
		w.log(out.Events...)
		c.Spend = addSpend(c.Spend, out.Spend)
		w.in.Setup = &out.Setup
		w.in.Options = w.in.Options.over(out.Options)
		w.opt = w.in.Options.withDefaults()
		w.in.State = w.k.Initial(w.in.Params, out.Setup)
	}
	if c.Wait <= 0 {
		c.Wait = w.opt.PollMin
	}
	steps := 0
	for {
		if steps >= w.opt.StepsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			c.Runs++
			return Result[S]{}, workflow.NewContinueAsNewError(ctx, w.k.WorkflowType(), w.in)
		}
		steps++
		c.Steps++
		w.drainStop()
		var ob ObserveOut[S, O, A]
		err := workflow.ExecuteActivity(w.actx(ctx, w.opt.ObserveTimeout), w.k.activity("observe"), ObserveIn[P, D, S, R]{
			Run: w.run, Params: w.in.Params, Setup: *w.in.Setup, State: w.in.State,
			Now: workflow.Now(ctx), Results: c.Results, StopRequested: c.Stop, Done: c.Done,
		}).Get(ctx, &ob)
		if err != nil {
			return w.failed(ctx, fmt.Errorf("observe: %w", err))
		}
		w.record(ob.Outcome)
		if ob.Fail != nil {
			return w.end(ctx, ob.Fail)
		}
		if ob.Fault != "" {
			if w.rideOut(ctx, ob.Fault) {
				continue
			}
			return w.failed(ctx, errors.New(ob.Fault))
		}
		w.obs, w.hasObs, c.Results = ob.Obs, true, nil

		d, err := w.decide(ctx)
		if err != nil {
			return Result[S]{}, err
		}
		w.log(d.Events...)
		w.in.State, w.woke = d.Next, false
		waited, faulted := false, false
		for i := 0; i < len(d.Actions); {
			a := d.Actions[i]
			if after, ok := a.Wait(); ok {
				i++
				if d.Done {
					continue
				}
				if d.Restart {
					c.Wait = w.opt.PollMin
				}
				if ev, ok := any(a).(interface{ Event() engine.Event }); ok {
					e := ev.Event()
					e.Time = workflow.Now(ctx)
					w.log(e)
				}
				dur := c.Wait
				if after > 0 && after < dur {
					dur = after
				}
				if w.woke {
					dur, w.woke = 0, false
				}
				if err := w.sleep(ctx, dur); err != nil {
					return Result[S]{}, err
				}
				c.Wait = min(c.Wait*2, w.opt.PollMax)
				waited = true
				continue
			}
			j := i
			for j < len(d.Actions) {
				if _, ok := d.Actions[j].Wait(); ok {
					break
				}
				j++
			}
			out, err := w.act(ctx, d.Actions[i:j], false)
			if err != nil {
				return w.failed(ctx, err)
			}
			i = j
			c.Results = append(c.Results, out.Results...)
			w.woke = w.woke || out.Woke
			if out.Fail != nil {
				return w.end(ctx, out.Fail)
			}
			if out.Lost {
				faulted = true
				break
			}
			if out.Fault != "" {
				if w.rideOut(ctx, out.Fault) {
					faulted = true
					break
				}
				return w.failed(ctx, errors.New(out.Fault))
			}
		}
		if faulted {
			continue
		}
		c.FaultSince, w.fault = time.Time{}, ""
		if !waited {
			c.Wait = w.opt.PollMin
		}
		if d.Done {
			return w.finish(ctx)
		}
	}
}

// decide runs the kind's Decide and Stepped once, recorded in the history.
func (w *flow[P, D, S, O, A, R]) decide(ctx workflow.Context) (decision[S, A], error) {
	st, obs, setup := w.in.State, w.obs, *w.in.Setup
	now := workflow.Now(ctx)
	var d decision[S, A]
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		var events []engine.Event
		dec := w.k.Decider(setup, engine.ReporterFunc(func(e engine.Event) {
			if e.Time.IsZero() {
				e.Time = now
			}
			events = append(events, e)
		}))
		next, actions, done := dec.Decide(st, obs)
		restart := dec.Stepped(st, next, obs)
		return decision[S, A]{Next: next, Actions: actions, Done: done, Restart: restart, Events: events}
	}).Get(&d)
	return d, err
}

func (w *flow[P, D, S, O, A, R]) act(ctx workflow.Context, actions []A, bestEffort bool) (ActOut[S, A, R], error) {
	var out ActOut[S, A, R]
	err := workflow.ExecuteActivity(w.actx(ctx, w.opt.ActTimeout), w.k.activity("act"), ActIn[P, D, S, O, A]{
		Run: w.run, Params: w.in.Params, Setup: *w.in.Setup, State: w.in.State, Obs: w.obs,
		Actions: actions, Done: w.in.Carry.Done, BestEffort: bestEffort,
	}).Get(ctx, &out)
	if err == nil {
		w.record(out.Outcome)
	}
	return out, err
}

// record keeps an activity's events and finished actions.
func (w *flow[P, D, S, O, A, R]) record(o Outcome[S, A]) {
	w.log(o.Events...)
	w.in.Carry.Done = append(w.in.Carry.Done, o.Finished...)
	w.in.Carry.Spend = addSpend(w.in.Carry.Spend, o.Spend)
	w.fault = o.Fault
}

// rideOut waits out a transient fault with the back-off while the fault
// budget lasts (REL-1), on the workflow's clock.
func (w *flow[P, D, S, O, A, R]) rideOut(ctx workflow.Context, fault string) bool {
	c := &w.in.Carry
	now := workflow.Now(ctx)
	if c.FaultSince.IsZero() {
		c.FaultSince = now
	}
	spent := now.Sub(c.FaultSince)
	if spent > w.opt.FaultBudget {
		return false
	}
	w.log(engine.Event{Time: now, Kind: "note", Message: fmt.Sprintf("transient fault (%s); observing again in %s (fault budget %s, %s spent)", fault, c.Wait, w.opt.FaultBudget, spent.Round(time.Second))})
	if err := w.sleep(ctx, c.Wait); err != nil {
		return false
	}
	c.Wait = min(c.Wait*2, w.opt.PollMax)
	return true
}

// sleep waits d on a durable timer, or until a wake or stop signal.
func (w *flow[P, D, S, O, A, R]) sleep(ctx workflow.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	w.waiting = true
	defer func() { w.waiting = false }()
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, d)
	sel := workflow.NewSelector(ctx)
	var err error
	sel.AddFuture(timer, func(f workflow.Future) { err = f.Get(ctx, nil) })
	sel.AddReceive(w.wake, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		for c.ReceiveAsync(nil) { // one observation answers every wake so far
		}
	})
	sel.AddReceive(w.stop, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		w.in.Carry.Stop = true
	})
	sel.Select(ctx)
	if err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}

func (w *flow[P, D, S, O, A, R]) drainStop() {
	for w.stop.ReceiveAsync(nil) {
		w.in.Carry.Stop = true
	}
}

// failed ends the run errored with a cause that crossed the wire as text
// (a binding refused, a fault past its budget), through the kind's Fail.
func (w *flow[P, D, S, O, A, R]) failed(ctx workflow.Context, cause error) (Result[S], error) {
	if ctx.Err() != nil {
		return Result[S]{}, ctx.Err()
	}
	var appErr *temporal.ApplicationError
	if errors.As(cause, &appErr) {
		cause = errors.New(appErr.Message())
	}
	var obs O
	if w.hasObs {
		obs = w.obs
	}
	var f Failure[S, A]
	st, setup := w.in.State, *w.in.Setup
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		next, acts := w.k.Decider(setup, nil).Fail(st, obs, cause)
		return Failure[S, A]{State: next, Actions: acts}
	}).Get(&f)
	if err != nil {
		return Result[S]{}, err
	}
	return w.end(ctx, &f)
}

// end persists the errored state, then tells the world best effort.
func (w *flow[P, D, S, O, A, R]) end(ctx workflow.Context, f *Failure[S, A]) (Result[S], error) {
	w.in.State = f.State
	var acts []A
	for _, a := range f.Actions {
		if _, ok := a.Wait(); !ok {
			acts = append(acts, a)
		}
	}
	if len(acts) > 0 && w.hasObs {
		_, _ = w.act(ctx, acts, true)
	}
	return w.finish(ctx)
}

// finish releases the run's worktree and returns its result.
func (w *flow[P, D, S, O, A, R]) finish(ctx workflow.Context) (Result[S], error) {
	_ = workflow.ExecuteActivity(w.actx(ctx, w.opt.ObserveTimeout), w.k.activity("end"), EndIn{Run: w.run}).Get(ctx, nil)
	t, ok := w.k.Terminal(w.in.State)
	if ok {
		// Its data is the terminal, as the local engine's terminal event
		// carries it (docs/events.schema.json).
		w.log(engine.Event{Time: workflow.Now(ctx), Kind: "terminal", Message: t.Status,
			Data: map[string]any{"status": t.Status, "exit_code": t.Code, "message": t.Status}})
	}
	return Result[S]{RunID: w.run.RunID, State: w.in.State, Terminal: t, Steps: w.in.Carry.Steps, Log: w.in.Carry.Log, Spend: w.in.Carry.Spend}, nil
}

func (w *flow[P, D, S, O, A, R]) log(events ...engine.Event) {
	c := &w.in.Carry
	c.Log = append(c.Log, events...)
	if n := len(c.Log) - maxLog; n > 0 {
		c.Log = append([]engine.Event(nil), c.Log[n:]...)
	}
}

func (w *flow[P, D, S, O, A, R]) queries(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) {
		s := Status{Kind: w.k.Name, Target: w.k.Target(w.in.Params), RunID: w.run.RunID, Steps: w.in.Carry.Steps, Waiting: w.waiting, Fault: w.fault}
		if w.in.Setup != nil {
			s.Progress = w.k.Progress(w.in.State)
			if t, ok := w.k.Terminal(w.in.State); ok {
				s.Terminal = &t
			}
		}
		return s, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryLog, func() ([]engine.Event, error) {
		return w.in.Carry.Log, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QuerySpend, func() ([]SpendRow, error) {
		return w.in.Carry.Spend, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (S, error) {
		return w.in.State, nil
	}); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryProof, func() (any, error) {
		if w.in.Setup == nil {
			return nil, nil
		}
		t, _ := w.k.Terminal(w.in.State)
		return t.Proof, nil
	})
}

// actx are an activity's options: a lost worker is noticed by its
// heartbeat and the attempt retried on another, without limit; faults
// of the world are the workflow's to ride out, not the retry policy's.
func (w *flow[P, D, S, O, A, R]) actx(ctx workflow.Context, attempt time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: attempt,
		HeartbeatTimeout:    w.opt.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{ErrBind},
		},
	})
}
