package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// The Manager runs many loops, of every kind, in one process, as
// controller-runtime's manager runs its reconcilers: it holds the store,
// the forge clients per host and the clone cache they share, and it owns
// the one lifecycle of a run — refuse or claim (new or resumed, PR-G3;
// one loop per target, PR-G5), run on the engine, record the end — so a
// loop kind brings only an Adapter for what is its own: its state, its
// start, its loop, its terminal and how it prints it. `converge pr`,
// `converge loop`, `converge plan run` and `converge serve` all run their
// loops through it.

// Kind names a loop kind to the Manager.
type Kind struct {
	// Name is the kind as the store records it: "pr", "loop", "plan".
	Name string
	// Errored is the kind's terminal for a fault that ended the run
	// without one of its own: "errored" (a PR), "failed" (loop, plan).
	Errored string
}

// Terminal is how a run ended, as the store records it.
type Terminal struct {
	Status string        // the kind's terminal reason: two-stable, complete, blocked...
	Code   exitcode.Code // its IF-1 exit code
	Proof  any           // recorded with the run; nil: none
}

// Adapter is one loop kind bound to one target: what the Manager's one
// lifecycle asks of a kind. Its methods are called in order, from the
// run's goroutine: Refuse, then (once claimed) Begin, Drive, Terminal,
// and End always, last.
type Adapter[S any] interface {
	Kind() Kind
	// Target is what the loop works on; one loop per target (PR-G5).
	Target() string
	// Fresh starts a new run even when an unfinished one could resume.
	Fresh() bool
	// Resumable reports whether a stored state continues (PR-G3).
	Resumable(S) bool
	// Refuse is asked, before anything is recorded, whether the run may
	// start (a dirty tree, a disposal while a loop runs); wouldResume
	// says whether the claim would resume an unfinished run.
	Refuse(ctx context.Context, wouldResume bool) error
	// Begin makes the run's first state from its claim: the stored one
	// when c.Resumed is set, a new one otherwise; it reports the start.
	// An error leaves the run unfinished.
	Begin(ctx context.Context, c *Claim[S]) (S, error)
	// Drive runs the loop on the engine from st with opt, cleans up what
	// the run alone used, and returns its last state. A *HumanNeeded
	// error leaves the run unfinished; so does ctx's, or ErrDrained.
	Drive(ctx context.Context, st S, opt Options) (S, error)
	// Terminal reads the terminal of a last state; ok is false when it
	// holds none (the run then ends Kind().Errored).
	Terminal(S) (t Terminal, ok bool)
	// Progress is where a state stands, for Snapshot.
	Progress(S) Progress
	// End is told how the run ended, once it is recorded: it prints what
	// its command prints and returns the run's error for it (Outcome.Err).
	End(ctx context.Context, o Outcome) error
}

// Progress is where a run stands: its phase and round, and where the
// kind knows them, the commit it last observed and that commit's branch
// and base (a PR's), so an event naming one finds the loop (a webhook's
// check run, status or push).
type Progress struct {
	Phase  string
	Round  int
	Head   string
	Branch string
	Base   string
}

// HumanNeeded is a fault a run cannot get past without a human who puts
// the world right (a plan's branch rewritten under a killed task): the
// run is left unfinished, so the same command resumes it (exit 3).
type HumanNeeded struct {
	Why string
	Err error
}

func (e *HumanNeeded) Error() string { return e.Why }
func (e *HumanNeeded) Unwrap() error { return e.Err }

// Outcome statuses of runs that ended without a recorded terminal.
const (
	// StatusRefused: nothing was run: the adapter refused, another live
	// loop holds the target (a *BusyError), or the store failed the claim.
	StatusRefused = "refused"
	// StatusInterrupted: cancelled or drained; unfinished, resumable.
	StatusInterrupted = "interrupted"
	// StatusHumanNeeded: unfinished until a human acts (*HumanNeeded).
	StatusHumanNeeded = "human-needed"
)

// Outcome is how one run ended.
type Outcome struct {
	RunID  string // "" when refused before a claim
	Kind   string
	Target string
	// Status is the recorded terminal, or one of the Status* above, or
	// the kind's Errored with Unfinished when Begin failed (nothing ran).
	Status string
	Code   exitcode.Code
	Proof  any
	// Resumed: the run continued a stored one (PR-G3).
	Resumed bool
	// Unfinished: the store holds the run unfinished, to resume.
	Unfinished bool
	// Err is the fault, refusal or interruption that ended the run; once
	// End returned, the run's error as End made it: nil at success.
	Err error
	// RecordErr: the store could not record the run's terminal.
	RecordErr error
}

// Spec is one loop to Add: an Adapter with its types erased.
type Spec struct {
	kind   string
	target string
	run    func(ctx context.Context, m *Manager, r *Handle) Outcome
}

// NewSpec makes a's Spec.
func NewSpec[S any](a Adapter[S]) Spec {
	return Spec{kind: a.Kind().Name, target: a.Target(), run: func(ctx context.Context, m *Manager, r *Handle) Outcome {
		return lifecycle(ctx, m, r, a)
	}}
}

// Kind is the spec's kind; Target its target.
func (s Spec) Kind() string   { return s.kind }
func (s Spec) Target() string { return s.target }

// Reviver makes the Spec that resumes a stored unfinished run of its kind
// after a restart (Manager.Resume); it must not be Fresh.
type Reviver func(ctx context.Context, r store.Run) (Spec, error)

// Config is a Manager's.
type Config struct {
	// Store is the state store every run shares; its opener closes it.
	Store *store.Store
	// WorkDir is the clone cache: <state>/work, every run's clones and
	// worktrees under it.
	WorkDir string
	// Forges are forge clients already made, by host; NewForge makes the
	// others on first use.
	Forges   map[string]forge.Forge
	NewForge func(host string) (forge.Forge, error)
	// CodeOf is the IF-1 exit code of a fault; nil: 1.
	CodeOf func(error) exitcode.Code
	// Stop, when closed, is a stop request to every run (the first
	// SIGINT): each loop decides how to end.
	Stop <-chan struct{}
	// Revive, by kind, makes the specs Resume restarts; a kind without
	// one is left to its own command.
	Revive map[string]Reviver
	// Polls, when set, is the fleet's budget of fallback polls every run
	// shares (pollbudget.go); Clock, when set, every run's clock.
	Polls PollBudget
	Clock Clock
	// Prune, when set, removes from the clone cache what no live run
	// uses; it reports its own failures (prune.go).
	Prune Pruner
}

// ErrDraining refuses an Add after Drain began.
var ErrDraining = errors.New("the manager is draining: no new loop starts")

// Manager runs loops; see Add.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	runs     map[string]*Handle // by target, while running
	forges   map[string]forge.Forge
	draining bool
	stopped  bool
	wg       sync.WaitGroup

	drain     chan struct{}
	drainOnce sync.Once
	stopOnce  sync.Once
	pruneMu   sync.Mutex // one prune at a time
}

// NewManager makes a Manager of cfg.
func NewManager(cfg Config) *Manager {
	if cfg.CodeOf == nil {
		cfg.CodeOf = func(err error) exitcode.Code {
			if err == nil {
				return exitcode.OK
			}
			return exitcode.Error
		}
	}
	m := &Manager{cfg: cfg, runs: map[string]*Handle{}, forges: map[string]forge.Forge{}, drain: make(chan struct{})}
	for h, f := range cfg.Forges {
		m.forges[h] = f
	}
	return m
}

// Store is the state store every run shares.
func (m *Manager) Store() *store.Store { return m.cfg.Store }

// WorkDir is the clone cache every run shares.
func (m *Manager) WorkDir() string { return m.cfg.WorkDir }

// Forge is the forge client of host, made once.
func (m *Manager) Forge(host string) (forge.Forge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.forges[host]; ok {
		return f, nil
	}
	if m.cfg.NewForge == nil {
		return nil, fmt.Errorf("no forge client for %s", host)
	}
	f, err := m.cfg.NewForge(host)
	if err != nil {
		return nil, fmt.Errorf("forge client for %s: %w", host, err)
	}
	m.forges[host] = f
	return f, nil
}

// Add starts spec's loop in its own goroutine and returns its Handle. It is
// idempotent per target: while a loop runs on the target in this Manager,
// Add returns that loop's Handle and starts nothing (PR-G5); a live loop on
// it in another process ends the new run refused (a *BusyError). ctx
// bounds the run, not the call: cancelling it interrupts the run
// (resumable); Drain is the graceful end.
func (m *Manager) Add(ctx context.Context, spec Spec) (*Handle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining {
		return nil, ErrDraining
	}
	if r, ok := m.runs[spec.target]; ok {
		return r, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Handle{
		kind: spec.kind, target: spec.target, cancel: cancel,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		info: RunInfo{Kind: spec.kind, Target: spec.target, Phase: "starting"},
	}
	if m.stopped {
		r.requestStop()
	}
	m.runs[spec.target] = r
	if m.cfg.Stop != nil {
		m.stopOnce.Do(func() { go m.stopOn(m.cfg.Stop) })
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		out := spec.run(ctx, m, r)
		r.mu.Lock()
		r.out, r.info.Phase = out, "ended"
		r.mu.Unlock()
		// Gone from the table before Done: whoever waited may add the
		// target again and gets a new loop.
		m.mu.Lock()
		if m.runs[spec.target] == r {
			delete(m.runs, spec.target)
		}
		m.mu.Unlock()
		// A finished run leaves nothing in the clone cache (prune.go).
		m.Prune(context.WithoutCancel(ctx))
		close(r.done)
	}()
	return r, nil
}

func (m *Manager) stopOn(stop <-chan struct{}) {
	<-stop
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	for _, r := range m.runs {
		r.requestStop()
	}
}

// Get is the loop running on target, nil when none is.
func (m *Manager) Get(target string) *Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[target]
}

// Wake ends the wait of the loop on target now: it observes the world
// again (a webhook's event is never trusted, only re-read). A wake while
// the loop works is kept for its next wait. False: no loop on target.
func (m *Manager) Wake(target string) bool {
	r := m.Get(target)
	if r == nil {
		return false
	}
	select {
	case r.wake <- struct{}{}:
	default: // one pending wake is as good as many (PR-S2)
	}
	return true
}

// Stop asks the loop on target to stop at its next step, as `converge
// stop` does; the loop decides how it ends. False: no loop on target.
func (m *Manager) Stop(target string) bool {
	r := m.Get(target)
	if r == nil {
		return false
	}
	r.requestStop()
	return true
}

// Wait waits for every loop added so far to end.
func (m *Manager) Wait() { m.wg.Wait() }

// Drain ends every loop at its next step boundary, its state persisted
// and its run left unfinished, so Resume (or the same command) continues
// it; no new loop starts. Loops still in an action when ctx ends are
// cancelled, which leaves them resumable too (REL-2), and Drain returns
// ctx's error once they have returned.
func (m *Manager) Drain(ctx context.Context) error {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
	m.drainOnce.Do(func() { close(m.drain) })
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	for _, r := range m.runs {
		r.cancel()
	}
	m.mu.Unlock()
	<-done
	return ctx.Err()
}

// Resume restarts every unfinished run in the store whose kind has a
// Reviver, once per target (the newest run on it), unless a loop runs on
// the target already, here or in another live process. It returns the
// loops it started; an error names the runs it could not revive, the
// others start regardless.
func (m *Manager) Resume(ctx context.Context) ([]*Handle, error) {
	runs, err := m.cfg.Store.UnfinishedRuns(ctx)
	if err != nil {
		return nil, err
	}
	var (
		errs []error
		seen = map[string]bool{}
		todo []store.Run
	)
	for _, sr := range runs {
		if seen[sr.Target] {
			continue
		}
		seen[sr.Target] = true
		if m.cfg.Revive[sr.Kind] == nil || m.Get(sr.Target) != nil {
			continue
		}
		if _, live, err := m.cfg.Store.LockLive(ctx, sr.Target); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", sr.ID, err))
			continue
		} else if live {
			continue // another process drives it
		}
		todo = append(todo, sr)
	}
	// Reviving is a few forge reads per run: one at a time, the last of
	// a fleet's runs would wait minutes for the first's.
	handles, rerrs := make([]*Handle, len(todo)), make([]error, len(todo))
	var wg sync.WaitGroup
	slots := make(chan struct{}, resumeConcurrency)
	for i, sr := range todo {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			spec, err := m.cfg.Revive[sr.Kind](ctx, sr)
			if err != nil {
				rerrs[i] = fmt.Errorf("revive run %s on %s: %w", sr.ID, sr.Target, err)
				return
			}
			if handles[i], err = m.Add(ctx, spec); err != nil {
				rerrs[i] = fmt.Errorf("resume run %s: %w", sr.ID, err)
			}
		}()
	}
	wg.Wait()
	var started []*Handle
	for i := range todo {
		if rerrs[i] != nil {
			errs = append(errs, rerrs[i])
		} else if handles[i] != nil {
			started = append(started, handles[i])
		}
	}
	return started, errors.Join(errs...)
}

// resumeConcurrency bounds the runs Resume revives at once.
const resumeConcurrency = 4

// RunInfo is a loop's snapshot, for metrics and the API.
type RunInfo struct {
	RunID   string    `json:"run,omitempty"` // "" until claimed
	Kind    string    `json:"kind"`
	Target  string    `json:"target"`
	Phase   string    `json:"phase"` // "starting" until its first state, "ended" at its end
	Round   int       `json:"round"`
	Head    string    `json:"head,omitempty"`
	Branch  string    `json:"branch,omitempty"`
	Base    string    `json:"base,omitempty"`
	Resumed bool      `json:"resumed,omitempty"`
	Since   time.Time `json:"since,omitzero"` // when it was claimed
}

// Snapshot is every running loop's RunInfo, by target.
func (m *Manager) Snapshot() []RunInfo {
	m.mu.Lock()
	runs := make([]*Handle, 0, len(m.runs))
	for _, r := range m.runs {
		runs = append(runs, r)
	}
	m.mu.Unlock()
	out := make([]RunInfo, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.Info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// Handle is one loop the Manager runs.
type Handle struct {
	kind, target string
	cancel       context.CancelFunc
	wake, stop   chan struct{}
	stopOnce     sync.Once
	done         chan struct{}

	mu   sync.Mutex
	info RunInfo
	out  Outcome
}

// Kind and Target name the loop.
func (r *Handle) Kind() string   { return r.kind }
func (r *Handle) Target() string { return r.target }

// Done is closed when the loop has ended.
func (r *Handle) Done() <-chan struct{} { return r.done }

// Wait waits for the loop to end and returns how it ended.
func (r *Handle) Wait() Outcome {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out
}

// Info is the loop's snapshot now.
func (r *Handle) Info() RunInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.info
}

func (r *Handle) requestStop() { r.stopOnce.Do(func() { close(r.stop) }) }

func (r *Handle) set(f func(*RunInfo)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.info)
}

// lifecycle is the one lifecycle of a run, for every kind: refuse or
// claim, begin (new or resumed), drive, record the end, tell the adapter.
func lifecycle[S any](ctx context.Context, m *Manager, r *Handle, a Adapter[S]) (o Outcome) {
	k, db := a.Kind(), m.cfg.Store
	o = Outcome{Kind: k.Name, Target: r.target}
	defer func() { o.Err = a.End(ctx, o) }()

	if ro, ok := any(a).(Reopener[S]); ok && !a.Fresh() {
		if err := ReopenStopped(ctx, db, r.target, ro.Reopens); err != nil {
			o.Status, o.Code, o.Err = StatusRefused, m.cfg.CodeOf(err), err
			return o
		}
	}
	would := !a.Fresh() && WouldResume(ctx, db, r.target, a.Resumable)
	if err := a.Refuse(ctx, would); err != nil {
		o.Status, o.Code, o.Err = StatusRefused, m.cfg.CodeOf(err), err
		return o
	}
	c, err := ClaimRun(ctx, db, k.Name, r.target, a.Fresh(), a.Resumable)
	if err != nil {
		o.Status, o.Code, o.Err = StatusRefused, m.cfg.CodeOf(err), err
		var busy *BusyError
		if errors.As(err, &busy) {
			o.Code = exitcode.Usage
		}
		return o
	}
	defer c.Release(ctx)
	o.RunID, o.Resumed = c.RunID, c.Resumed != nil
	r.set(func(i *RunInfo) { i.RunID, i.Resumed, i.Since = c.RunID, c.Resumed != nil, time.Now() })

	st, err := a.Begin(ctx, c)
	if err != nil {
		o.Status, o.Code, o.Err, o.Unfinished = k.Errored, m.cfg.CodeOf(err), err, true
		return o
	}
	phase := func(st S) {
		p := a.Progress(st)
		r.set(func(i *RunInfo) {
			i.Phase, i.Round, i.Head, i.Branch, i.Base = p.Phase, p.Round, p.Head, p.Branch, p.Base
		})
	}
	phase(st)
	opt := Options{
		Wake:          r.wake,
		Stop:          r.stop,
		Drain:         m.drain,
		StopRequested: c.StopRequested,
		OnStep: func(s any) {
			if st, ok := s.(S); ok {
				phase(st)
			}
		},
	}
	opt.Clock, opt.Polls = m.cfg.Clock, m.cfg.Polls
	final, runErr := a.Drive(ctx, st, opt)
	var hn *HumanNeeded
	switch {
	case runErr != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, ErrDrained)):
		// The last state is persisted: the next start resumes (PR-G3).
		o.Status, o.Code, o.Err, o.Unfinished = StatusInterrupted, exitcode.Error, runErr, true
		return o
	case errors.As(runErr, &hn):
		o.Status, o.Code, o.Err, o.Unfinished = StatusHumanNeeded, exitcode.Human, runErr, true
		return o
	}
	t, ok := a.Terminal(final)
	if !ok {
		if runErr == nil {
			runErr = errors.New("the loop ended without a terminal")
		}
		t = Terminal{Status: k.Errored, Code: m.cfg.CodeOf(runErr)}
	}
	o.Status, o.Code, o.Proof, o.Err = t.Status, t.Code, t.Proof, runErr
	if err := c.Finish(ctx, t.Status, t.Code, t.Proof); err != nil {
		o.RecordErr = fmt.Errorf("record the end of run %s: %w", c.RunID, err)
	}
	return o
}

// WouldResume reports whether ClaimRun would resume a run of state S on
// target: its newest run is unfinished and its state resumable.
func WouldResume[S any](ctx context.Context, db *store.Store, target string, resumable func(S) bool) bool {
	last, err := db.LatestRunFor(ctx, target)
	if err != nil || last.Finished() || len(last.State) == 0 {
		return false
	}
	var st S
	return json.Unmarshal(last.State, &st) == nil && resumable(st)
}
