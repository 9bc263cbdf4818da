package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/store"
)

// The gate kind is the Manager's test kind: a loop that waits until its
// world's gate opens, then ends "open"; a stop ends it "stopped". Its
// waits last an hour, so only the Manager (Wake, Stop, Drain) ends them.
type gateState struct {
	Started  bool          `json:"started"`
	Steps    int           `json:"steps"`
	Terminal string        `json:"terminal,omitempty"`
	Code     exitcode.Code `json:"code,omitempty"`
}

type gateWorld struct {
	mu     sync.Mutex
	open   map[string]bool
	fail   map[string]error // Observe's error, per target
	refuse error
	begins map[string]int
	steps  chan string // the target of every wait the Manager saw decided
}

func newGateWorld() *gateWorld {
	return &gateWorld{open: map[string]bool{}, fail: map[string]error{}, begins: map[string]int{}, steps: make(chan string, 100)}
}

func (w *gateWorld) set(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

type gateLoop struct {
	w      *gateWorld
	target string
}

type gateObs struct {
	Open bool
	Stop bool
}

func (l *gateLoop) Observe(_ context.Context, _ gateState, in engine.Input[string]) (gateObs, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	if err := l.w.fail[l.target]; err != nil {
		return gateObs{}, err
	}
	return gateObs{Open: l.w.open[l.target], Stop: in.StopRequested}, nil
}

func (l *gateLoop) Decide(st gateState, o gateObs) (gateState, []counterAction, bool) {
	st.Steps++
	switch {
	case o.Stop:
		st.Terminal, st.Code = "stopped", exitcode.Human
		return st, nil, true
	case o.Open:
		st.Terminal, st.Code = "open", exitcode.OK
		return st, nil, true
	}
	return st, []counterAction{{Kind: "wait"}}, false
}

func (l *gateLoop) Act(context.Context, gateState, gateObs, counterAction) (string, error) {
	return "", nil
}
func (l *gateLoop) Stepped(_, _ gateState, _ gateObs) bool { return false }

// Fail leaves no terminal: the run ends the kind's Errored.
func (l *gateLoop) Fail(st gateState, _ gateObs, _ error) (gateState, []counterAction) {
	return st, nil
}

// gateJob is the gate kind's engine.Adapter.
type gateJob struct {
	w      *gateWorld
	db     *store.Store
	target string
	fresh  bool
	runID  string
}

func (j *gateJob) Kind() engine.Kind          { return engine.Kind{Name: "gate", Errored: "errored"} }
func (j *gateJob) Target() string             { return j.target }
func (j *gateJob) Fresh() bool                { return j.fresh }
func (j *gateJob) Resumable(s gateState) bool { return s.Started && s.Terminal == "" }
func (j *gateJob) Refuse(context.Context, bool) error {
	j.w.mu.Lock()
	defer j.w.mu.Unlock()
	return j.w.refuse
}
func (j *gateJob) Begin(_ context.Context, c *engine.Claim[gateState]) (gateState, error) {
	j.w.set(func() { j.w.begins[j.target]++ })
	j.runID = c.RunID
	if c.Resumed != nil {
		return *c.Resumed, nil
	}
	return gateState{Started: true}, nil
}
func (j *gateJob) Drive(ctx context.Context, st gateState, opt engine.Options) (gateState, error) {
	opt.PollMin = time.Hour
	inner := opt.OnStep
	opt.OnStep = func(s any) {
		inner(s)
		// A test waits for the loop's wait, once the Manager saw it.
		if st := s.(gateState); st.Terminal == "" {
			j.w.steps <- j.target
		}
	}
	journal := &engine.StoreJournal[gateState]{DB: j.db, RunID: j.runID}
	return engine.Run[gateState, gateObs, counterAction, string](ctx, &gateLoop{w: j.w, target: j.target}, journal, st, opt)
}
func (j *gateJob) Terminal(s gateState) (engine.Terminal, bool) {
	return engine.Terminal{Status: s.Terminal, Code: s.Code}, s.Terminal != ""
}
func (j *gateJob) Progress(s gateState) engine.Progress {
	if s.Terminal != "" {
		return engine.Progress{Phase: s.Terminal, Round: s.Steps}
	}
	return engine.Progress{Phase: "waiting", Round: s.Steps, Head: "head-" + j.target}
}
func (j *gateJob) End(_ context.Context, o engine.Outcome) error { return o.Err }

type gateFixture struct {
	t  *testing.T
	db *store.Store
	w  *gateWorld
}

func newGateFixture(t *testing.T) *gateFixture {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &gateFixture{t: t, db: db, w: newGateWorld()}
}

func (f *gateFixture) spec(target string) engine.Spec {
	return engine.NewSpec[gateState](&gateJob{w: f.w, db: f.db, target: target})
}

func (f *gateFixture) manager() *engine.Manager {
	return engine.NewManager(engine.Config{
		Store: f.db,
		Revive: map[string]engine.Reviver{"gate": func(_ context.Context, r store.Run) (engine.Spec, error) {
			return f.spec(r.Target), nil
		}},
	})
}

// parked waits until the loop on each target has decided to wait, so a
// test acts on a loop that is parked, not one still starting.
func (f *gateFixture) parked(m *engine.Manager, targets ...string) {
	f.t.Helper()
	want := map[string]bool{}
	for _, target := range targets {
		want[target] = true
	}
	for len(want) > 0 {
		select {
		case target := <-f.w.steps:
			delete(want, target)
		case <-time.After(30 * time.Second):
			f.t.Fatalf("the loops on %v never parked", want)
		}
	}
}

func ended(t *testing.T, h *engine.Handle) engine.Outcome {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the loop on %s never ended", h.Target())
	}
	return h.Wait()
}

func (f *gateFixture) runs(target string) []store.Run {
	f.t.Helper()
	runs, err := f.db.ListRuns(context.Background(), store.ListOptions{Target: target})
	if err != nil {
		f.t.Fatal(err)
	}
	return runs
}

// TestPR_G5_ManagerAddIsIdempotentPerTarget: adding a target whose loop
// runs returns that loop and starts nothing: one Begin, one run recorded
// (never a second loop, nor a refused run beside it).
func TestPR_G5_ManagerAddIsIdempotentPerTarget(t *testing.T) {
	f := newGateFixture(t)
	m := f.manager()
	ctx := context.Background()
	h1, err := m.Add(ctx, f.spec("acme/calc#1"))
	if err != nil {
		t.Fatal(err)
	}
	f.parked(m, "acme/calc#1")
	h2, err := m.Add(ctx, f.spec("acme/calc#1"))
	if err != nil {
		t.Fatal(err)
	}
	if h1 != h2 {
		t.Errorf("a second Add of a running target made another loop")
	}
	f.w.set(func() { f.w.open["acme/calc#1"] = true })
	m.Wake("acme/calc#1")
	if o := ended(t, h1); o.Status != "open" || o.Err != nil {
		t.Fatalf("want the loop to end open, got %+v", o)
	}
	m.Wait()
	if got := f.w.begins["acme/calc#1"]; got != 1 {
		t.Errorf("want one loop begun on the target, got %d", got)
	}
	if runs := f.runs("acme/calc#1"); len(runs) != 1 || runs[0].Status != "open" {
		t.Errorf("want one run recorded, ended open, got %+v", runs)
	}
	// Once it ended, the target may run again: a new loop.
	h3, err := m.Add(ctx, f.spec("acme/calc#1"))
	if err != nil {
		t.Fatal(err)
	}
	if h3 == h1 {
		t.Errorf("an ended loop was returned for a new Add")
	}
	ended(t, h3)
}

// TestPR_S2_ManagerWakeEndsTheWaitNow: a loop parked in an hour's wait
// observes again as soon as it is woken, and sees the world changed.
func TestPR_S2_ManagerWakeEndsTheWaitNow(t *testing.T) {
	f := newGateFixture(t)
	m := f.manager()
	h, err := m.Add(context.Background(), f.spec("t"))
	if err != nil {
		t.Fatal(err)
	}
	f.parked(m, "t")
	if m.Wake("nobody") {
		t.Errorf("Wake of a target without a loop reported one")
	}
	f.w.set(func() { f.w.open["t"] = true })
	if !m.Wake("t") {
		t.Fatal("Wake found no loop on t")
	}
	if o := ended(t, h); o.Status != "open" || o.Code != 0 {
		t.Fatalf("want open, got %+v", o)
	}
}

// TestREL2_ManagerDrainThenResume: Drain ends every loop at a step
// boundary, unfinished with its state; Add is refused; a new Manager's
// Resume restarts every unfinished run — the same runs, resumed — except
// the one a live process holds; and Snapshot shows each loop's phase.
func TestREL2_ManagerDrainThenResume(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	m := f.manager()
	targets := []string{"a", "b", "c"}
	ids := map[string]string{}
	for _, target := range targets {
		if _, err := m.Add(ctx, f.spec(target)); err != nil {
			t.Fatal(err)
		}
	}
	f.parked(m, targets...)
	snap := m.Snapshot()
	if len(snap) != 3 {
		t.Fatalf("want 3 loops in the snapshot, got %+v", snap)
	}
	for i, s := range snap {
		if s.Target != targets[i] || s.Kind != "gate" || s.Phase != "waiting" || s.Round != 1 || s.RunID == "" || s.Head != "head-"+s.Target {
			t.Errorf("snapshot %d: %+v", i, s)
		}
		ids[s.Target] = s.RunID
	}
	var hs []*engine.Handle
	for _, target := range targets {
		hs = append(hs, m.Get(target))
	}
	if err := m.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if o := h.Wait(); o.Status != engine.StatusInterrupted || !o.Unfinished || !errors.Is(o.Err, engine.ErrDrained) {
			t.Errorf("%s: want drained, unfinished, got %+v", h.Target(), o)
		}
	}
	if _, err := m.Add(ctx, f.spec("d")); !errors.Is(err, engine.ErrDraining) {
		t.Errorf("Add while draining: want ErrDraining, got %v", err)
	}
	for _, target := range targets {
		if runs := f.runs(target); len(runs) != 1 || runs[0].Finished() || len(runs[0].State) == 0 {
			t.Errorf("%s: want one unfinished run with its state, got %+v", target, runs)
		}
	}
	// Another live process holds c: Resume leaves it alone.
	if _, ok, err := f.db.AcquireLock(ctx, "c", ids["c"], os.Getppid()); err != nil || !ok {
		t.Fatalf("hold c's lock for a live process: %v %v", ok, err)
	}

	m2 := f.manager()
	started, err := m2.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 2 {
		t.Fatalf("want a and b resumed, got %d loops", len(started))
	}
	f.parked(m2, "a", "b")
	if m2.Get("c") != nil {
		t.Errorf("Resume started a loop on c, which a live process holds")
	}
	// Resume again is a no-op: the loops run.
	if again, err := m2.Resume(ctx); err != nil || len(again) != 0 {
		t.Errorf("a second Resume started %d loops (%v)", len(again), err)
	}
	f.w.set(func() { f.w.open["a"], f.w.open["b"] = true, true })
	for _, h := range started {
		m2.Wake(h.Target())
		o := ended(t, h)
		if o.Status != "open" || !o.Resumed || o.RunID != ids[h.Target()] {
			t.Errorf("%s: want run %s resumed and ended open, got %+v", h.Target(), ids[h.Target()], o)
		}
	}
}

// TestPR_G3_G5_REL2_ManagerLifecycle is the lifecycle of one run on the
// gate kind, case by case: claim new, resume, refuse busy, refuse, stop,
// errored, human-needed. (internal/cli runs the same cases on the PR
// loop, the done-check loop and the plan executor.)
func TestPR_G3_G5_REL2_ManagerLifecycle(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *gateFixture, m *engine.Manager) // before Add
		act   func(f *gateFixture, m *engine.Manager) // once parked; nil: not parked
		check func(t *testing.T, f *gateFixture, o engine.Outcome)
	}{
		{name: "PR-G3 claim new", act: open, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.Status != "open" || o.Code != 0 || o.Resumed || o.Err != nil {
				t.Errorf("got %+v", o)
			}
			if runs := f.runs("t"); len(runs) != 1 || runs[0].Status != "open" || !runs[0].Finished() {
				t.Errorf("runs %+v", runs)
			}
		}},
		{name: "PR-G3 resume", setup: func(f *gateFixture, _ *engine.Manager) {
			seedRun(f, "r-old", gateState{Started: true, Steps: 7})
		}, act: open, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.RunID != "r-old" || !o.Resumed || o.Status != "open" {
				t.Errorf("got %+v", o)
			}
			var st gateState
			if r, _ := f.db.GetRun(context.Background(), "r-old"); r.Status != "open" {
				t.Errorf("the resumed run ended %q", r.Status)
			} else if err := json.Unmarshal(r.State, &st); err != nil || st.Steps != 9 {
				t.Errorf("the resumed run did not continue its state: %+v %v", st, err)
			}
		}},
		{name: "PR-G5 refuse busy", setup: func(f *gateFixture, _ *engine.Manager) {
			seedRun(f, "r-live", gateState{Started: true})
			if _, ok, err := f.db.AcquireLock(context.Background(), "t", "r-live", os.Getppid()); err != nil || !ok {
				f.t.Fatalf("lock: %v %v", ok, err)
			}
		}, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			var busy *engine.BusyError
			if o.Status != engine.StatusRefused || o.Code != exitcode.Usage || !errors.As(o.Err, &busy) || busy.Holder != "r-live" {
				t.Errorf("got %+v", o)
			}
			if f.w.begins["t"] != 0 {
				t.Errorf("a refused run began")
			}
		}},
		{name: "IF-4 refuse", setup: func(f *gateFixture, _ *engine.Manager) {
			f.w.refuse = errors.New("dirty tree")
		}, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.Status != engine.StatusRefused || o.RunID != "" || len(f.runs("t")) != 0 {
				t.Errorf("got %+v, runs %+v", o, f.runs("t"))
			}
		}},
		{name: "PR-G5 stop", act: func(f *gateFixture, m *engine.Manager) { m.Stop("t") }, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.Status != "stopped" || o.Code != exitcode.Human || o.Unfinished {
				t.Errorf("got %+v", o)
			}
		}},
		{name: "PR-G5 converge stop RUN", act: func(f *gateFixture, m *engine.Manager) {
			if err := f.db.RequestStop(context.Background(), m.Get("t").Info().RunID); err != nil {
				f.t.Fatal(err)
			}
			m.Wake("t")
		}, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.Status != "stopped" || o.Code != exitcode.Human {
				t.Errorf("got %+v", o)
			}
		}},
		{name: "REL-1 errored", act: func(f *gateFixture, m *engine.Manager) {
			f.w.set(func() { f.w.fail["t"] = errors.New("boom") })
			m.Wake("t")
		}, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.Status != "errored" || o.Code != exitcode.Error || o.Err == nil || o.Unfinished {
				t.Errorf("got %+v", o)
			}
			if runs := f.runs("t"); len(runs) != 1 || runs[0].Status != "errored" || !runs[0].Finished() {
				t.Errorf("runs %+v", runs)
			}
		}},
		{name: "REL-2 human-needed", act: func(f *gateFixture, m *engine.Manager) {
			f.w.set(func() { f.w.fail["t"] = &engine.HumanNeeded{Why: "a human must put the branch right"} })
			m.Wake("t")
		}, check: func(t *testing.T, f *gateFixture, o engine.Outcome) {
			if o.Status != engine.StatusHumanNeeded || o.Code != exitcode.Human || !o.Unfinished {
				t.Errorf("got %+v", o)
			}
			if runs := f.runs("t"); len(runs) != 1 || runs[0].Finished() {
				t.Errorf("want the run left unfinished, got %+v", runs)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newGateFixture(t)
			f.t = t
			m := f.manager()
			if c.setup != nil {
				c.setup(f, m)
			}
			h, err := m.Add(context.Background(), f.spec("t"))
			if err != nil {
				t.Fatal(err)
			}
			if c.act != nil {
				f.parked(m, "t")
				c.act(f, m)
			}
			c.check(t, f, ended(t, h))
		})
	}
}

func open(f *gateFixture, m *engine.Manager) {
	f.w.set(func() { f.w.open["t"] = true })
	m.Wake("t")
}

func seedRun(f *gateFixture, id string, st gateState) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.db.CreateRun(ctx, store.Run{ID: id, Kind: "gate", Target: "t"}); err != nil {
		f.t.Fatal(err)
	}
	j := &engine.StoreJournal[gateState]{DB: f.db, RunID: id}
	if err := j.SaveState(ctx, st); err != nil {
		f.t.Fatal(err)
	}
}
