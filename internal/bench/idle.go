package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	copilotbot "github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/store"
)

// idleLoops registers n PRs with an engine Manager, as `converge serve`
// holds them: each PR's registration is kept in the SQLite store, its run
// is claimed there (one loop per target), and its PR loop runs on the
// engine, journalling its state and events to the store, until it waits
// for a review that never starts, parked (no clone, no worktree). Once
// every loop waits, it reads what the process holds, then drains the
// Manager: every run stops at its wait, unfinished and resumable.
//
// The forge is the in-memory fake, in this process: its n PRs are made
// before the first reading, so the per-loop figures are the loops' alone,
// while the RSS is the whole process's, fake forge included.
func idleLoops(ctx context.Context, open func(context.Context, string) (*store.Store, error), dir string, n int) (IdleLoops, error) {
	if err := ctx.Err(); err != nil {
		return IdleLoops{}, err
	}
	db, err := open(ctx, filepath.Join(dir, "converge.db"))
	if err != nil {
		return IdleLoops{}, err
	}
	defer db.Close()
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	refs := make([]forge.PRRef, n)
	for i := range refs {
		refs[i] = ff.AddPR(fakeforge.PR{})
	}
	m := engine.NewManager(engine.Config{
		Store: db, WorkDir: filepath.Join(dir, "work"),
		Forges: map[string]forge.Forge{refs[0].Host: ff},
	})
	cfg := prloop.DefaultConfig()
	cfg.Bot, cfg.Self = copilotbot.New(), "converge"

	debug.FreeOSMemory()
	rss0, mem0 := prlooptest.RSS(), prlooptest.InUse()
	handles := make([]*engine.Handle, 0, n)
	// Registered in waves of idleWave, each parked before the next
	// starts. Started at once, every loop writes its claim, its first
	// state and its events to the one SQLite store together: at 10,000
	// at once on a loaded 2-core machine some waited past the store's
	// 10 s busy timeout and ended errored (SQLITE_BUSY). That is a limit
	// of a server that starts (or resumes) that many runs at once, which
	// this figure does not measure.
	for start := 0; start < n; start += idleWave {
		wave := refs[start:min(start+idleWave, n)]
		var parked sync.WaitGroup
		parked.Add(len(wave))
		for _, ref := range wave {
			if err := db.PutRegistration(ctx, ref.String()); err != nil {
				return IdleLoops{}, err
			}
			j := &idleJob{Adapter: prloop.Adapter{KindName: "pr", TargetName: ref.String()}, db: db, m: m, ref: ref, cfg: cfg, parked: parked.Done}
			h, err := m.Add(context.WithoutCancel(ctx), engine.NewSpec[prloop.State](j))
			if err != nil {
				return IdleLoops{}, err
			}
			handles = append(handles, h)
		}
		// A loop that ends before it waits is done with too, so the wait
		// cannot hang; its outcome is checked below.
		allParked := make(chan struct{})
		go func() { parked.Wait(); close(allParked) }()
		select {
		case <-allParked:
		case <-ctx.Done():
			_ = m.Drain(context.WithoutCancel(ctx))
			return IdleLoops{}, ctx.Err()
		}
	}
	peak := prlooptest.PeakRSS()
	// What a server that has waited a few minutes holds: the runtime
	// collects at least every two minutes when idle and its scavenger
	// gives freed pages back to the OS; FreeOSMemory does both now.
	debug.FreeOSMemory()
	runtime.GC()
	rss1, mem1 := prlooptest.RSS(), prlooptest.InUse()
	waiting := 0
	for _, r := range m.Snapshot() {
		if r.Phase != "ended" && r.Phase != "starting" {
			waiting++
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := m.Drain(dctx); err != nil {
		return IdleLoops{}, fmt.Errorf("drain: %w", err)
	}
	for _, h := range handles {
		if o := h.Wait(); o.Status != engine.StatusInterrupted || !errors.Is(o.Err, engine.ErrDrained) {
			return IdleLoops{}, fmt.Errorf("loop on %s ended %s before the drain: %v", o.Target, o.Status, o.Err)
		}
	}
	if waiting != n {
		return IdleLoops{}, fmt.Errorf("%d of %d loops were waiting when measured", waiting, n)
	}
	return IdleLoops{
		Loops:       n,
		PeakRSSMiB:  float64(peak) / (1 << 20),
		RSSMiB:      float64(rss1) / (1 << 20),
		KiBPerLoop:  float64(rss1-rss0) / float64(n) / 1024,
		HeapKiBLoop: float64(mem1-mem0) / float64(n) / 1024,
	}, nil
}

// idleWave is how many loops are registered at once: few enough that a
// wave's first writes fit in the store's busy timeout on a loaded machine.
const idleWave = 100

// idleJob is a PR loop's engine.Adapter as `converge serve` adds one
// (internal/cli's prJob), less what prints and the git workspace: the
// run's journal and events go to the store; the workspace holds nothing
// (a parked loop's worktree is given back; these never need one).
type idleJob struct {
	prloop.Adapter
	db     *store.Store
	m      *engine.Manager
	ref    forge.PRRef
	cfg    prloop.Config
	parked func()

	once sync.Once
	loop *prloop.Loop
}

var _ engine.Adapter[prloop.State] = (*idleJob)(nil)

func (j *idleJob) Fresh() bool                        { return false }
func (j *idleJob) Refuse(context.Context, bool) error { return nil }

func (j *idleJob) Begin(ctx context.Context, c *engine.Claim[prloop.State]) (prloop.State, error) {
	f, err := j.m.Forge(j.ref.Host)
	if err != nil {
		return prloop.State{}, err
	}
	runID := c.RunID
	report := engine.ReporterFunc(func(e engine.Event) {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		_ = j.db.AppendEvent(context.Background(), runID, store.Event{Time: e.Time, Kind: e.Kind, Round: e.Round, Message: e.Message})
		if e.Kind == "wait" {
			j.once.Do(j.parked)
		}
	})
	j.loop = prloop.NewLoop(j.ref, prloop.Deps{
		Forge: f, Workspace: prlooptest.ParkedWorkspace{}, Journal: prloop.StoreJournal(j.db, runID),
		Reporter: report, Config: j.cfg,
	})
	return prloop.Initial(c), nil
}

func (j *idleJob) Drive(ctx context.Context, st prloop.State, opt engine.Options) (prloop.State, error) {
	// An hour between polls: nothing wakes these loops while measured.
	opt.PollMin, opt.PollMax = time.Hour, time.Hour
	term, err := j.loop.Run(ctx, st, opt)
	st.Terminal = term
	return st, err
}

// End is told how the run ended; a loop that ended before it waited
// releases the measurement (its outcome is checked after the drain).
func (j *idleJob) End(_ context.Context, o engine.Outcome) error {
	j.once.Do(j.parked)
	return o.Err
}
