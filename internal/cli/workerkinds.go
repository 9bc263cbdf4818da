package cli

import (
	"context"
	"errors"
	"path/filepath"

	"go.temporal.io/sdk/worker"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// registerLocalKinds registers the kinds that work in a repository on
// this machine's filesystem: converge loop and converge plan run.
func (rt *workerRuntime) registerLocalKinds(r worker.Registry) {
	kinds.Check(rt.bindLoop).Register(r, &temporal.Activities[kinds.LoopParams, kinds.LoopSetup, checkloop.State, checkloop.Observation, checkloop.Action, checkloop.ActResult]{CodeOf: cmdutil.ExitCodeOf})
	kinds.Plan(rt.bindPlan).Register(r, &temporal.Activities[kinds.PlanParams, kinds.PlanSetup, plan.State, plan.Observation, plan.Action, plan.ActResult]{CodeOf: cmdutil.ExitCodeOf})
}

// tickets is the store of the tickets of the loop and plan runs this
// worker serves (a local run's are in its state store), with the run
// recorded there: <state>/worker.db, apart from converge.db, so that
// converge status on this machine does not list a workflow's run as its
// own. A worker that takes a run over from a worker with another state
// directory does not see the tickets in flight there (README).
func (rt *workerRuntime) tickets(ctx context.Context, kind, target, runID string) (*store.Store, error) {
	rt.dbMu.Lock()
	defer rt.dbMu.Unlock()
	if rt.db == nil {
		if err := cmdutil.WritableDir(rt.opts.StateDir); err != nil {
			return nil, err
		}
		path := filepath.Join(rt.opts.StateDir, "worker.db")
		db, err := rt.opts.factory.OrDefault(rt.ios).OpenStoreFile(ctx, path)
		if err != nil {
			return nil, err
		}
		rt.db = db
	}
	_, err := rt.db.GetRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		err = rt.db.CreateRun(ctx, store.Run{ID: runID, Kind: kind, Target: localTarget(kind, target)})
	}
	if err != nil {
		return nil, err
	}
	return rt.db, nil
}

// close closes what the worker opened.
func (rt *workerRuntime) close() {
	rt.dbMu.Lock()
	defer rt.dbMu.Unlock()
	if rt.db != nil {
		_ = rt.db.Close()
		rt.db = nil
	}
}
