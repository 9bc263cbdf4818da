package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/store"
)

// The counter loop is the smallest loop kind: it raises a counter in a
// world it observes until the counter reaches its goal. It exists to show
// the engine knows nothing of pull requests.
type counterState struct {
	Goal   int  `json:"goal"`
	Steps  int  `json:"steps"`
	Failed bool `json:"failed,omitempty"`
	Done   bool `json:"done,omitempty"`
}

type counterObs struct {
	Value int
	Now   time.Time
	Stop  bool
	Seen  []string // results handed in
}

type counterAction struct {
	Kind  string // "inc", "wait", "flag"
	After time.Duration
}

func (a counterAction) Wait() (time.Duration, bool) { return a.After, a.Kind == "wait" }

type world struct {
	mu       sync.Mutex
	value    int
	flags    int
	observes int
	// observeErr, when set, is returned by the next observations while
	// failObserves > 0.
	observeErr   error
	failObserves int
	// moveAt is the observation at which the world raises the counter
	// itself (for loops that only wait).
	moveAt int
}

type counterLoop struct {
	w *world
	// waitOnly makes Decide wait for the world instead of acting.
	waitOnly bool
	after    time.Duration
	stepped  int
	inputs   []engine.Input[string]
}

func (l *counterLoop) Observe(_ context.Context, _ counterState, in engine.Input[string]) (counterObs, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	l.inputs = append(l.inputs, in)
	l.w.observes++
	if l.w.failObserves > 0 {
		l.w.failObserves--
		return counterObs{}, l.w.observeErr
	}
	if l.w.moveAt > 0 && l.w.observes >= l.w.moveAt {
		l.w.value = 1 << 20
	}
	return counterObs{Value: l.w.value, Now: in.Now, Stop: in.StopRequested, Seen: in.Results}, nil
}

func (l *counterLoop) Decide(st counterState, o counterObs) (counterState, []counterAction, bool) {
	st.Steps++
	if o.Value >= st.Goal || o.Stop {
		st.Done = true
		return st, nil, true
	}
	if l.waitOnly {
		return st, []counterAction{{Kind: "wait", After: l.after}}, false
	}
	return st, []counterAction{{Kind: "inc"}}, false
}

func (l *counterLoop) Act(_ context.Context, _ counterState, _ counterObs, a counterAction) (string, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	switch a.Kind {
	case "inc":
		l.w.value++
	case "flag":
		l.w.flags++
	}
	return a.Kind, nil
}

func (l *counterLoop) Stepped(prev, next counterState, _ counterObs) bool {
	l.stepped++
	return false
}

func (l *counterLoop) Fail(st counterState, _ counterObs, _ error) (counterState, []counterAction) {
	st.Failed, st.Done = true, true
	return st, []counterAction{{Kind: "flag"}}
}

var _ engine.Loop[counterState, counterObs, counterAction, string] = (*counterLoop)(nil)

type memJournal struct {
	mu     sync.Mutex
	states []counterState
}

func (j *memJournal) SaveState(_ context.Context, s counterState) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.states = append(j.states, s)
	return nil
}

// fakeClock records every wait and returns at once.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

var errOutage = errors.New("outage")

func transient(err error) bool { return errors.Is(err, errOutage) }

func TestEngine_RunsAnyLoopKindToDone(t *testing.T) {
	w := &world{}
	l := &counterLoop{w: w}
	j := &memJournal{}
	final, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), l, j, counterState{Goal: 3}, engine.Options{Clock: newClock()})
	if err != nil {
		t.Fatal(err)
	}
	if !final.Done || w.value != 3 || final.Steps != 4 {
		t.Fatalf("want done after 3 increments and 4 steps, got %+v value %d", final, w.value)
	}
	// Every step is persisted before its acts run, and told to the loop.
	if len(j.states) != 4 || l.stepped != 4 {
		t.Fatalf("want 4 persisted and stepped states, got %d and %d", len(j.states), l.stepped)
	}
	// An act's result reaches the next observation, and only that one.
	if got := l.inputs[1].Results; len(got) != 1 || got[0] != "inc" {
		t.Fatalf("second observation got results %v, want [inc]", got)
	}
	if got := l.inputs[0].Results; len(got) != 0 {
		t.Fatalf("first observation got results %v", got)
	}
}

// TestPR_S2_EngineBackOffDoublesToItsCap: while Decide only waits, each
// wait doubles up to PollMax; a deadline Decide knows cuts a wait short.
func TestPR_S2_EngineBackOffDoublesToItsCap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  []time.Duration
	}{
		{"back-off", 0, []time.Duration{1, 2, 4, 8, 8}},
		{"deadline", 3, []time.Duration{1, 2, 3, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			l := &counterLoop{w: &world{moveAt: 6}, waitOnly: true, after: tc.after * time.Second}
			_, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), l, &memJournal{}, counterState{Goal: 1}, engine.Options{Clock: clock, PollMin: time.Second, PollMax: 8 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(clock.waits) != len(tc.want) {
				t.Fatalf("waits %v, want %v seconds", clock.waits, tc.want)
			}
			for i, d := range clock.waits {
				if d != tc.want[i]*time.Second {
					t.Fatalf("waits %v, want %v seconds", clock.waits, tc.want)
				}
			}
		})
	}
}

// TestREL1_TransientFaultsAreRiddenOut: an outage shorter than the fault
// budget costs waits, not the run; the results of acts before the fault
// reach the observation after it.
func TestREL1_TransientFaultsAreRiddenOut(t *testing.T) {
	w := &world{observeErr: errOutage}
	l := &counterLoop{w: w}
	clock := newClock()
	j := &memJournal{}
	// One increment lands, then the world is unreachable for 4 observes.
	l2 := &faultAfterFirstAct{counterLoop: l, fails: 4}
	final, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), l2, j, counterState{Goal: 2}, engine.Options{
		Clock: clock, PollMin: time.Second, PollMax: 4 * time.Second, FaultBudget: time.Minute, Transient: transient,
	})
	if err != nil {
		t.Fatalf("an outage within the budget ended the run: %v", err)
	}
	if !final.Done || final.Failed || w.value != 2 {
		t.Fatalf("want done, not failed, value 2; got %+v value %d", final, w.value)
	}
	if got := clock.waits; len(got) != 4 || got[0] != time.Second || got[3] != 4*time.Second {
		t.Fatalf("want 4 doubling waits capped at 4s, got %v", got)
	}
	// The act before the outage reports to the first observation that
	// reached the world.
	var seen []string
	for _, in := range l.inputs {
		if len(in.Results) > 0 {
			seen = append(seen, in.Results...)
		}
	}
	if len(seen) < 5 {
		t.Fatalf("the result of the act before the outage was dropped: inputs %+v", l.inputs)
	}
}

// faultAfterFirstAct makes the world unreachable after the first act.
type faultAfterFirstAct struct {
	*counterLoop
	fails int
}

func (f *faultAfterFirstAct) Act(ctx context.Context, st counterState, o counterObs, a counterAction) (string, error) {
	r, err := f.counterLoop.Act(ctx, st, o, a)
	if f.fails > 0 {
		f.w.mu.Lock()
		f.w.failObserves, f.fails = f.fails, 0
		f.w.mu.Unlock()
	}
	return r, err
}

// TestREL1_FaultBeyondBudgetEndsRunErrored: a fault that outlasts the
// budget, or one that is not transient, ends the run with the loop's
// errored state persisted and its best-effort actions run.
func TestREL1_FaultBeyondBudgetEndsRunErrored(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"outage beyond budget", errOutage},
		{"not transient", errors.New("forbidden")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{observeErr: tc.err, failObserves: 1000}
			l := &counterLoop{w: w}
			j := &memJournal{}
			final, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), l, j, counterState{Goal: 2}, engine.Options{
				Clock: newClock(), PollMin: time.Second, PollMax: 4 * time.Second, FaultBudget: 30 * time.Second, Transient: transient,
			})
			if !errors.Is(err, tc.err) {
				t.Fatalf("want the fault returned, got %v", err)
			}
			if !final.Failed || len(j.states) == 0 || !j.states[len(j.states)-1].Failed {
				t.Fatalf("errored state not persisted: final %+v, journal %+v", final, j.states)
			}
			if w.flags != 1 {
				t.Fatalf("the loop's best-effort failure action ran %d times, want 1", w.flags)
			}
		})
	}
}

// TestPR_G5_StopRequestReachesObservation: a stop asked from outside is
// handed to Observe, and the loop decides how to end.
func TestPR_G5_StopRequestReachesObservation(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	l := &counterLoop{w: &world{}, waitOnly: true}
	final, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), l, &memJournal{}, counterState{Goal: 5}, engine.Options{Clock: newClock(), Stop: stop})
	if err != nil || !final.Done || final.Steps != 1 {
		t.Fatalf("want done at the first step on a stop, got %+v, %v", final, err)
	}
}

// TestEngine_CancelKeepsTheRunResumable: a cancelled run returns the
// context's error with its last state persisted, not an errored state.
func TestEngine_CancelKeepsTheRunResumable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &cancelOnWait{counterLoop: &counterLoop{w: &world{}, waitOnly: true}, cancel: cancel}
	j := &memJournal{}
	final, err := engine.Run[counterState, counterObs, counterAction, string](ctx, l, j, counterState{Goal: 5}, engine.Options{PollMin: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if final.Failed || final.Done || len(j.states) != 1 {
		t.Fatalf("want the running state persisted once, got %+v, %+v", final, j.states)
	}
}

type cancelOnWait struct {
	*counterLoop
	cancel func()
}

func (c *cancelOnWait) Stepped(prev, next counterState, o counterObs) bool {
	c.cancel()
	return false
}

// TestPR_G3_ClaimResumesTheStoredRun: a run that did not finish (killed)
// resumes from its stored state; --fresh starts a new run and records the
// old one interrupted; a live holder is refused.
func TestPR_G3_ClaimResumesTheStoredRun(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	resumable := func(s counterState) bool { return !s.Done && s.Steps > 0 }

	c1, err := engine.ClaimRun(ctx, db, "counter", "t1", false, resumable)
	if err != nil || c1.Resumed != nil {
		t.Fatalf("first claim: %+v, %v", c1, err)
	}
	j := &engine.StoreJournal[counterState]{DB: db, RunID: c1.RunID}
	if err := j.SaveState(ctx, counterState{Goal: 9, Steps: 4}); err != nil {
		t.Fatal(err)
	}
	// While c1 holds the lock (this live process), a second claim is busy.
	var busy *engine.BusyError
	if _, err := engine.ClaimRun(ctx, db, "counter", "t1", false, resumable); !errors.As(err, &busy) || busy.Holder != c1.RunID {
		t.Fatalf("want busy with holder %s, got %v", c1.RunID, err)
	}
	c1.Release(ctx) // the process died without finishing the run

	c2, err := engine.ClaimRun(ctx, db, "counter", "t1", false, resumable)
	if err != nil {
		t.Fatal(err)
	}
	if c2.RunID != c1.RunID || c2.Resumed == nil || c2.Resumed.Steps != 4 || c2.Resumed.Goal != 9 {
		t.Fatalf("want run %s resumed at 4 steps, got %s %+v", c1.RunID, c2.RunID, c2.Resumed)
	}
	c2.Release(ctx)

	c3, err := engine.ClaimRun(ctx, db, "counter", "t1", true, resumable)
	if err != nil {
		t.Fatal(err)
	}
	if c3.RunID == c1.RunID || c3.Resumed != nil {
		t.Fatalf("--fresh resumed: %+v", c3)
	}
	old, err := db.GetRun(ctx, c1.RunID)
	if err != nil || !old.Finished() || old.Status != "interrupted" {
		t.Fatalf("the abandoned run is not recorded interrupted: %+v, %v", old, err)
	}
	if err := c3.Finish(ctx, "complete", 0, map[string]int{"steps": 1}); err != nil {
		t.Fatal(err)
	}
	c3.Release(ctx)
	// A finished run never resumes.
	c4, err := engine.ClaimRun(ctx, db, "counter", "t1", false, resumable)
	if err != nil || c4.Resumed != nil || c4.RunID == c3.RunID {
		t.Fatalf("a finished run resumed: %+v, %v", c4, err)
	}
}
