package store

import (
	"context"
	"fmt"
)

// registrationsSchema is migration 5: the PRs `converge serve` was asked
// to drive, kept before their loop starts, so a process killed between a
// registration and its run's first save still drives the PR after a
// restart (REL-2).
const registrationsSchema = `
CREATE TABLE registrations (
	target     TEXT PRIMARY KEY,
	created_at TEXT NOT NULL
);
`

// PutRegistration records that target (a PR's URL) is to be driven; a
// second registration of it is no error.
func (s *Store) PutRegistration(ctx context.Context, target string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO registrations(target, created_at) VALUES (?, ?) ON CONFLICT(target) DO NOTHING`,
		s.red(target), fmtTime(s.now()))
	if err != nil {
		return fmt.Errorf("put registration %s: %w", target, err)
	}
	return nil
}

// Registrations lists every registered target, oldest first.
func (s *Store) Registrations(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT target FROM registrations ORDER BY created_at, target`)
	if err != nil {
		return nil, fmt.Errorf("list registrations: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("list registrations: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
