package store

import (
	"context"
	"fmt"
)

// RunsHeldBy lists the unfinished runs whose locks the process pid holds
// on this host, oldest lock first: what a converge started as that
// process is running. A converge started elsewhere (converge mcp starts
// runs as child processes) learns its child's runs from it.
func (s *Store) RunsHeldBy(ctx context.Context, pid int) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT l.run_id FROM locks l JOIN runs r ON r.id = l.run_id
		WHERE l.pid = ? AND l.host = ? AND r.ended_at IS NULL ORDER BY l.acquired_at, l.rowid`, pid, s.host)
	if err != nil {
		return nil, fmt.Errorf("runs held by %d: %w", pid, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("runs held by %d: %w", pid, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
