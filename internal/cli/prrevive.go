package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// prReviver is the PR kind's engine.Reviver, for a Manager that resumes
// its loops after a restart (converge serve): a stored PR run's target is
// its PR's URL; params makes the loop's parameters for that PR as for one
// registered anew, and the PR passes pre-flight again, since the world may
// have moved while nothing ran. Dry runs and disposals are other kinds and
// never resume. shared is the print lock of loops that share one output
// (serve's): a revived loop's lines then name its PR, and a run that ends
// in an error says so, as a registered one does.
func prReviver(ios *cmdutil.IOStreams, db *store.Store, workDir string, shared *sync.Mutex, params func(ctx context.Context, ref forge.PRRef) (loopParams, error)) engine.Reviver {
	return func(ctx context.Context, r store.Run) (engine.Spec, error) {
		ref, err := forge.ParsePRURL(r.Target)
		if err != nil {
			return engine.Spec{}, fmt.Errorf("run %s: %w", r.ID, err)
		}
		p, err := params(ctx, ref)
		if err != nil {
			return engine.Spec{}, err
		}
		p.Fresh, p.DryRun, p.DisposeOnly = false, false, false
		if err := preflight(ctx, &p); err != nil {
			return engine.Spec{}, err
		}
		return engine.NewSpec(newPRJob(ios, db, workDir, p, shared)), nil
	}
}
