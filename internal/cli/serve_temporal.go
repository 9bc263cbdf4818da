package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// temporalFleet is `converge serve --engine temporal`: one webhook
// receiver for a fleet. A registered PR's loop is a workflow on the
// cluster, run by whichever `converge worker` takes it; a webhook event
// signals it. Nothing of a loop lives in this process, so a restart has
// nothing to resume: the workflows went on. The local store keeps the
// server's own records (registrations, watches, deliveries).
type temporalFleet struct {
	ios   *cmdutil.IOStreams
	opts  *serveOptions
	db    *store.Store
	c     client.Client
	kind  *kinds.PRKind
	queue string

	mu   sync.Mutex
	live map[string]server.RunInfo // running workflows, as last queried
	stop chan struct{}
	wg   sync.WaitGroup
	// printMu keeps one target's error on one line.
	printMu sync.Mutex
}

var _ serveEngine = (*temporalFleet)(nil)

func newTemporalFleet(ctx context.Context, ios *cmdutil.IOStreams, opts *serveOptions, db *store.Store) (*temporalFleet, error) {
	c, err := opts.engine.dial(ctx)
	if err != nil {
		return nil, err
	}
	return &temporalFleet{
		ios: ios, opts: opts, db: db, c: c, kind: prKind(nil), queue: opts.engine.TaskQueue,
		live: map[string]server.RunInfo{}, stop: make(chan struct{}),
	}, nil
}

func (t *temporalFleet) close() {
	close(t.stop)
	t.wg.Wait()
	t.c.Close()
}

// store reads a PR's latest run from its workflow (the rearm of a
// finished PR, PR-T10, asks it); the rest is the local store.
func (t *temporalFleet) store() server.Store { return workflowStore{Store: t.db, c: t.c} }

// Register starts the PR's workflow, or attaches to the one running
// (PR-G5); the PR is kept first, so a crash still serves it next start.
func (t *temporalFleet) Register(ctx context.Context, target string) error {
	ref, err := forge.ParsePRURL(target)
	if err != nil {
		return err
	}
	if err := t.db.PutRegistration(ctx, ref.String()); err != nil {
		return err
	}
	run, err := t.kind.Start(ctx, t.c, t.queue, fleetPRParams(ctx, t.c, &t.opts.pr, ref.String()), temporal.Options{})
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.live[ref.String()] = server.RunInfo{Target: ref.String(), Kind: "pr", RunID: run.GetRunID(), Phase: "starting"}
	t.mu.Unlock()
	return nil
}

// Wake signals the PR's workflow to observe again; it never blocks.
func (t *temporalFleet) Wake(target string) {
	ref, err := forge.ParsePRURL(target)
	if err != nil {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := temporal.Wake(ctx, t.c, "pr", ref.String()); err != nil {
			t.printMu.Lock()
			fmt.Fprintf(t.ios.ErrOut, "%s: wake: %v\n", ref, err)
			t.printMu.Unlock()
		}
	}()
}

// Snapshot lists the workflows running, as last queried.
func (t *temporalFleet) Snapshot() []server.RunInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]server.RunInfo, 0, len(t.live))
	for _, r := range t.live {
		out = append(out, r)
	}
	return out
}

// start starts every registered PR that has no workflow yet (the server
// died between keeping and starting it), then those named now; the
// workflows of the others went on without this process, and are woken
// once for the events it missed while down.
func (t *temporalFleet) start(ctx context.Context, refs []forge.PRRef) error {
	regs, err := t.db.Registrations(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var pending []string
	for _, r := range regs {
		run, err := workflowStore{Store: t.db, c: t.c}.LatestRunFor(ctx, r)
		var nf *store.NotFoundError
		switch {
		case errors.As(err, &nf):
			pending = append(pending, r)
		case err == nil && !run.Finished():
			t.mu.Lock()
			t.live[r] = server.RunInfo{Target: r, Kind: "pr", Phase: "running"}
			t.mu.Unlock()
			// What was delivered while no receiver listened is lost
			// (GitHub does not retry): the loop reads the world now, as
			// a resumed local loop does, not at its next poll.
			t.Wake(r)
		}
	}
	for _, r := range refs {
		pending = append(pending, r.String())
		if err := t.db.PutRegistration(context.WithoutCancel(ctx), r.String()); err != nil {
			return err
		}
	}
	registerEach(ctx, t.ios, &t.printMu, pending, t.Register)
	t.wg.Add(1)
	go t.refresh()
	return nil
}

func (t *temporalFleet) started(context.Context) {}

func (t *temporalFleet) drain(context.Context) error {
	fmt.Fprintln(t.ios.Out, "stopped serving: the loops go on on the Temporal cluster")
	return nil
}

// refresh keeps the live list current: a workflow that ended leaves it,
// so the server's rearm (PR-T10) sees its PR as finished.
func (t *temporalFleet) refresh() {
	defer t.wg.Done()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		t.mu.Lock()
		targets := make([]string, 0, len(t.live))
		for k := range t.live {
			targets = append(targets, k)
		}
		t.mu.Unlock()
		for _, target := range targets {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s, err := temporal.QueryStatusOf(ctx, t.c, temporal.WorkflowID("pr", target))
			cancel()
			t.mu.Lock()
			switch {
			case err != nil:
				// Ended (a closed workflow answers queries only through a
				// worker's replay) or unreachable: read it as a run.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				run, rerr := (workflowStore{Store: t.db, c: t.c}).LatestRunFor(ctx, target)
				cancel()
				if rerr == nil && run.Finished() {
					delete(t.live, target)
				}
			case s.Terminal != nil:
				delete(t.live, target)
			default:
				t.live[target] = server.RunInfo{Target: target, Kind: "pr", RunID: s.RunID, Phase: s.Progress.Phase, Head: s.Progress.Head}
			}
			t.mu.Unlock()
		}
	}
}

// workflowStore is the server's store with runs read from the cluster.
type workflowStore struct {
	*store.Store
	c client.Client
}

// LatestRunFor is the PR's workflow as a run (a *store.NotFoundError when
// it has none).
func (w workflowStore) LatestRunFor(ctx context.Context, target string) (store.Run, error) {
	run, _, err := temporal.RunOf(ctx, w.c, temporal.WorkflowID("pr", target))
	if errors.Is(err, temporal.ErrNoRun) {
		return store.Run{}, &store.NotFoundError{What: "run", ID: target}
	}
	return run, err
}
