package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/convergeloop/converge/internal/engine"
)

// The counter kind is the smallest loop that exercises the engine: the
// world holds a counter; each step adds one until it reaches the goal,
// waiting between steps when the world is not ready.

type cParams struct {
	Name string `json:"name"`
	Goal int    `json:"goal"`
}

type cSetup struct {
	Goal int `json:"goal"`
}

type cState struct {
	Steps    int       `json:"steps"`
	Terminal string    `json:"terminal,omitempty"`
	Message  string    `json:"message,omitempty"`
	Seen     time.Time `json:"seen"`
}

type cObs struct {
	Now   time.Time `json:"now"`
	Value int       `json:"value"`
	Ready bool      `json:"ready"`
	Stop  bool      `json:"stop"`
	// Done is the results the acts reported back.
	Results int `json:"results"`
}

type cAction struct {
	Kind  string        `json:"kind"` // add, wait, label
	Key   string        `json:"key"`
	After time.Duration `json:"after,omitempty"`
}

func (a cAction) Wait() (time.Duration, bool) { return a.After, a.Kind == "wait" }

type cDecider struct {
	goal int
	r    engine.Reporter
}

func (d cDecider) Decide(st cState, o cObs) (cState, []cAction, bool) {
	st.Steps++
	st.Seen = o.Now
	switch {
	case o.Stop:
		st.Terminal, st.Message = "stopped", "stop requested"
		return st, nil, true
	case o.Value >= d.goal:
		st.Terminal = "done"
		return st, []cAction{{Kind: "label", Key: "label-done"}}, true
	case !o.Ready:
		return st, []cAction{{Kind: "wait", After: time.Hour}}, false
	}
	return st, []cAction{{Kind: "add", Key: fmt.Sprintf("add-%d", o.Value)}, {Kind: "wait"}}, false
}

func (d cDecider) Stepped(prev, next cState, _ cObs) bool {
	if d.r != nil {
		d.r.Report(engine.Event{Kind: "round", Round: next.Steps, Message: "step"})
	}
	return false
}

func (d cDecider) Fail(st cState, _ cObs, cause error) (cState, []cAction) {
	st.Terminal, st.Message = "errored", cause.Error()
	return st, []cAction{{Kind: "label", Key: "label-errored"}}
}

var errTransient = errors.New("outage")

// world is the counter's world, shared by every binding (as a forge is).
type world struct {
	mu        sync.Mutex
	value     int
	ready     bool
	labels    []string
	adds      []string
	observes  int
	binds     int
	closes    int
	failObs   int   // observations that fail transiently
	actErr    error // the next add fails with it
	panicOnce bool  // the next act attempt dies mid-way (a lost worker)
}

type cLoop struct {
	w *world
	d cDecider
	j StateJournal[cState]
}

func (l *cLoop) Observe(_ context.Context, _ cState, in engine.Input[int]) (cObs, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	l.w.observes++
	if l.w.failObs > 0 {
		l.w.failObs--
		return cObs{}, errTransient
	}
	n := 0
	for _, r := range in.Results {
		n += r
	}
	return cObs{Now: in.Now, Value: l.w.value, Ready: l.w.ready, Stop: in.StopRequested, Results: n}, nil
}

func (l *cLoop) Decide(st cState, o cObs) (cState, []cAction, bool) { return l.d.Decide(st, o) }
func (l *cLoop) Stepped(p, n cState, o cObs) bool                   { return l.d.Stepped(p, n, o) }
func (l *cLoop) Fail(st cState, o cObs, c error) (cState, []cAction) {
	return l.d.Fail(st, o, c)
}

func (l *cLoop) Act(ctx context.Context, _ cState, _ cObs, a cAction) (int, error) {
	done, _ := l.j.BeginAction(ctx, engine.ActionRecord{Key: a.Key})
	if done {
		return 0, nil
	}
	l.w.mu.Lock()
	if l.w.panicOnce && a.Kind == "add" {
		l.w.panicOnce = false
		l.w.value++ // it did the write, then the worker died
		l.w.mu.Unlock()
		panic("worker lost")
	}
	defer l.w.mu.Unlock()
	switch a.Kind {
	case "add":
		if err := l.w.actErr; err != nil {
			l.w.actErr = nil
			return 0, err
		}
		l.w.value++
		l.w.adds = append(l.w.adds, a.Key)
	case "label":
		l.w.labels = append(l.w.labels, a.Key)
	}
	_ = l.j.FinishAction(ctx, a.Key, false, nil)
	return 1, nil
}

func counterKind(w *world) *Kind[cParams, cSetup, cState, cObs, cAction, int] {
	return &Kind[cParams, cSetup, cState, cObs, cAction, int]{
		Name:    "counter",
		Target:  func(p cParams) string { return p.Name },
		Initial: func(cParams, cSetup) cState { return cState{} },
		Decider: func(d cSetup, r engine.Reporter) Decider[cState, cObs, cAction] {
			return cDecider{goal: d.Goal, r: r}
		},
		Bind: func(_ context.Context, b Binding[cParams, cSetup]) (*Bound[cState, cObs, cAction, int, cSetup], error) {
			w.mu.Lock()
			w.binds++
			w.mu.Unlock()
			setup := cSetup{Goal: b.Params.Goal}
			if b.Setup != nil {
				setup = *b.Setup
			}
			l := &cLoop{w: w, d: cDecider{goal: setup.Goal, r: b.Reporter}, j: StateJournal[cState]{b.Journal}}
			return &Bound[cState, cObs, cAction, int, cSetup]{Loop: l, Setup: setup, Close: func(context.Context) {
				w.mu.Lock()
				w.closes++
				w.mu.Unlock()
			}}, nil
		},
		Transient: func(err error) bool { return errors.Is(err, errTransient) },
		Progress:  func(s cState) engine.Progress { return engine.Progress{Phase: s.Terminal, Round: s.Steps} },
		Terminal: func(s cState) (engine.Terminal, bool) {
			if s.Terminal == "" {
				return engine.Terminal{}, false
			}
			return engine.Terminal{Status: s.Terminal}, true
		},
	}
}

func newEnv(t *testing.T, w *world) (*testsuite.TestWorkflowEnvironment, *Kind[cParams, cSetup, cState, cObs, cAction, int]) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	k := counterKind(w)
	k.Register(env, &Activities[cParams, cSetup, cState, cObs, cAction, int]{})
	return env, k
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) Result[cState] {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var r Result[cState]
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

var opts = Options{PollMin: time.Minute, PollMax: 10 * time.Minute, FaultBudget: 10 * time.Minute}

func TestLOOP_1_TemporalWorkflowRunsDecideToItsTerminalOnDurableTimers(t *testing.T) {
	w := &world{ready: true}
	env, k := newEnv(t, w)
	start := env.Now()
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 3}, Options: opts})
	r := result(t, env)
	if r.Terminal.Status != "done" || w.value != 3 {
		t.Fatalf("terminal %q value %d, want done 3", r.Terminal.Status, w.value)
	}
	if fmt.Sprint(w.adds) != "[add-0 add-1 add-2]" || fmt.Sprint(w.labels) != "[label-done]" {
		t.Fatalf("adds %v labels %v", w.adds, w.labels)
	}
	// Three waits of the back-off's first step, on the workflow's clock.
	if got := env.Now().Sub(start); got < 3*time.Minute {
		t.Fatalf("workflow time %s: the waits did not wait", got)
	}
	if w.closes != 1 {
		t.Fatalf("closes %d, want the run's worktree released once", w.closes)
	}
}

func TestPR_S2_TemporalWakeSignalEndsAWaitEarly(t *testing.T) {
	w := &world{}
	env, k := newEnv(t, w)
	start := env.Now()
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		w.ready, w.value = true, 5
		w.mu.Unlock()
		env.SignalWorkflow(SignalWake, nil)
	}, 2*time.Minute)
	o := opts
	o.PollMin = 10 * time.Minute
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 5}, Options: o})
	r := result(t, env)
	if r.Terminal.Status != "done" {
		t.Fatalf("terminal %q", r.Terminal.Status)
	}
	// Decide asked for an hour's wait, the back-off for ten minutes; the
	// wake after two ended it.
	if got := env.Now().Sub(start); got >= 10*time.Minute {
		t.Fatalf("took %s of workflow time: the wake did not end the wait", got)
	}
}

func TestPR_G5_TemporalStopSignalIsAStopRequest(t *testing.T) {
	w := &world{}
	env, k := newEnv(t, w)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalStop, nil) }, 30*time.Second)
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 5}, Options: opts})
	if r := result(t, env); r.Terminal.Status != "stopped" {
		t.Fatalf("terminal %q, want stopped", r.Terminal.Status)
	}
}

func TestREL_1_TemporalRidesOutATransientFaultWithinItsBudget(t *testing.T) {
	w := &world{ready: true, failObs: 3}
	env, k := newEnv(t, w)
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 1}, Options: opts})
	if r := result(t, env); r.Terminal.Status != "done" {
		t.Fatalf("terminal %q, want done after the outage", r.Terminal.Status)
	}
	if w.observes < 5 {
		t.Fatalf("observes %d", w.observes)
	}
}

func TestREL_1_TemporalEndsErroredPastTheFaultBudget(t *testing.T) {
	w := &world{ready: true, failObs: 1000}
	env, k := newEnv(t, w)
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 1}, Options: opts})
	r := result(t, env)
	if r.Terminal.Status != "errored" || r.State.Message != "observe: outage" {
		t.Fatalf("terminal %q %q, want errored by the outage", r.Terminal.Status, r.State.Message)
	}
	// No observation reached the world: nothing to label.
	if len(w.labels) != 0 {
		t.Fatalf("labels %v", w.labels)
	}
}

func TestPR_T8_TemporalFailOfAnActTellsTheWorld(t *testing.T) {
	w := &world{ready: true, actErr: errors.New("push refused")}
	env, k := newEnv(t, w)
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 3}, Options: opts})
	r := result(t, env)
	if r.Terminal.Status != "errored" || r.State.Message != "push refused" {
		t.Fatalf("terminal %q %q", r.Terminal.Status, r.State.Message)
	}
	if fmt.Sprint(w.labels) != "[label-errored]" {
		t.Fatalf("labels %v, want the errored label", w.labels)
	}
}

func TestREL_2_TemporalLostActObservesAgainBeforeRepeating(t *testing.T) {
	w := &world{ready: true, panicOnce: true}
	env, k := newEnv(t, w)
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 2}, Options: opts})
	r := result(t, env)
	if r.Terminal.Status != "done" || w.value != 2 {
		t.Fatalf("terminal %q value %d", r.Terminal.Status, w.value)
	}
	// The lost attempt's write shows in the world; the retry did not
	// repeat it: one more add reached the goal.
	if fmt.Sprint(w.adds) != "[add-1]" {
		t.Fatalf("adds %v, want only add-1 after the lost add-0", w.adds)
	}
}

func TestLOOP_1_TemporalContinuesAsNewCarryingTheRun(t *testing.T) {
	w := &world{ready: true}
	env, k := newEnv(t, w)
	o := opts
	o.StepsPerRun = 2
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 5}, Options: o})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	var in Input[cParams, cSetup, cState, int]
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.State.Steps != 2 || in.Setup == nil || in.Carry.Runs != 1 || len(in.Carry.Done) != 2 || len(in.Carry.Log) == 0 {
		t.Fatalf("carried %+v", in)
	}
	// The next run goes on from the carried state, without a new setup.
	env2, k2 := newEnv(t, w)
	env2.ExecuteWorkflow(k2.WorkflowType(), in)
	var r Result[cState]
	for {
		err := env2.GetWorkflowError()
		if !errors.As(err, &can) {
			r = result(t, env2)
			break
		}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
		env2, k2 = newEnv(t, w)
		env2.ExecuteWorkflow(k2.WorkflowType(), in)
	}
	if r.Terminal.Status != "done" || w.value != 5 || r.Steps != 6 {
		t.Fatalf("terminal %q value %d steps %d", r.Terminal.Status, w.value, r.Steps)
	}
}

func TestUX_1_TemporalStatusAndLogQueriesWhileWaiting(t *testing.T) {
	w := &world{}
	env, k := newEnv(t, w)
	var st Status
	var log []engine.Event
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryStatus)
		if err == nil {
			err = v.Get(&st)
		}
		if err != nil {
			t.Error(err)
		}
		v, err = env.QueryWorkflow(QueryLog)
		if err == nil {
			err = v.Get(&log)
		}
		if err != nil {
			t.Error(err)
		}
		env.SignalWorkflow(SignalStop, nil)
	}, 90*time.Second)
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 5}, Options: opts})
	result(t, env)
	if !st.Waiting || st.Kind != "counter" || st.Target != "c" || st.Progress.Round < 1 || st.Terminal != nil {
		t.Fatalf("status %+v", st)
	}
	if len(log) == 0 || log[0].Kind != "round" {
		t.Fatalf("log %+v", log)
	}
}

func TestSEC_3_TemporalActivityResultsAreRedactedBeforeTheHistory(t *testing.T) {
	w := &world{ready: true}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	k := counterKind(w)
	bind := k.Bind
	k.Bind = func(ctx context.Context, b Binding[cParams, cSetup]) (*Bound[cState, cObs, cAction, int, cSetup], error) {
		bd, err := bind(ctx, b)
		if err != nil {
			return nil, err
		}
		b.Reporter.Report(engine.Event{Kind: "note", Message: "token s3cret-token in a CLI's output"})
		bd.Redact = func(s string) string { return strings.ReplaceAll(s, "s3cret-token", "[redacted]") }
		return bd, nil
	}
	k.Register(env, &Activities[cParams, cSetup, cState, cObs, cAction, int]{})
	env.ExecuteWorkflow(k.WorkflowType(), Input[cParams, cSetup, cState, int]{Params: cParams{Name: "c", Goal: 1}, Options: opts})
	r := result(t, env)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret-token") || !strings.Contains(string(b), "token [redacted] in") {
		t.Fatalf("the workflow's result (its log) holds %s", b)
	}
}
