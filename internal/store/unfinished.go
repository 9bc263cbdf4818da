package store

import "context"

// UnfinishedRuns returns the runs that have not ended, of every kind and
// target, newest first: what a restarted manager resumes (engine.Manager's
// Resume). A run another live process holds is among them; its lock says so.
func (s *Store) UnfinishedRuns(ctx context.Context) ([]Run, error) {
	return queryAll(ctx, s, "list unfinished runs", scanRun,
		`SELECT `+runCols+` FROM runs WHERE ended_at IS NULL OR ended_at = '' ORDER BY started_at DESC, rowid DESC`)
}
