package engine

import (
	"context"
	"errors"

	"github.com/convergeloop/converge/internal/store"
)

// Pruner removes from the clone cache (Config.WorkDir) what no live run
// uses: registrations of runs that live says are over, with their
// worktrees, then each clone no live run is registered in (`converge
// serve` gives prwork.PruneClones). Like Parker, it reports its own
// failures: pruning is an economy, never a fault.
type Pruner func(ctx context.Context, live func(runID string) bool)

// Prune prunes the clone cache, when the Manager has a Pruner: a run is
// live while a loop of this Manager runs it, or while the store holds it
// unfinished (a run another process drives, or one to resume: the
// Pruner's own check of the registering process still drops a dead
// one's). A finished run, or one the store never had, is not. The
// Manager prunes as each loop ends; its owner calls Prune on start, for
// what runs before it left (`converge serve`).
func (m *Manager) Prune(ctx context.Context) {
	if m.cfg.Prune == nil {
		return
	}
	m.pruneMu.Lock()
	defer m.pruneMu.Unlock()
	m.cfg.Prune(ctx, func(run string) bool { return m.liveRun(ctx, run) })
}

func (m *Manager) liveRun(ctx context.Context, run string) bool {
	m.mu.Lock()
	handles := make([]*Handle, 0, len(m.runs))
	for _, r := range m.runs {
		handles = append(handles, r)
	}
	m.mu.Unlock()
	for _, r := range handles {
		if r.Info().RunID == run {
			return true
		}
	}
	sr, err := m.cfg.Store.GetRun(ctx, run)
	var nf *store.NotFoundError
	switch {
	case errors.As(err, &nf):
		return false // no run of this state directory
	case err != nil:
		return true // cannot tell: keep
	}
	return !sr.Finished()
}
