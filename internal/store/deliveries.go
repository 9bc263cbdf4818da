package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// deliveriesSchema is migration 4.
const deliveriesSchema = `
CREATE TABLE deliveries (
	id          TEXT PRIMARY KEY,
	event       TEXT NOT NULL DEFAULT '',
	received_at TEXT NOT NULL
);
CREATE INDEX deliveries_received ON deliveries(received_at);

CREATE TABLE repo_watches (
	repo       TEXT PRIMARY KEY,
	label      TEXT NOT NULL DEFAULT '',
	authors    TEXT NOT NULL DEFAULT '[]',
	created_at TEXT NOT NULL
);
`

// RecordDelivery records a webhook delivery id (GitHub's X-GitHub-Delivery,
// which a redelivery repeats) and reports whether this call recorded it:
// false means the id was seen before and the delivery must cause no second
// action (SEC-4). The check and the record are one statement, so two
// concurrent deliveries of one id cannot both be first.
func (s *Store) RecordDelivery(ctx context.Context, id, event string) (bool, error) {
	if id == "" {
		return false, errors.New("record delivery: empty id")
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO deliveries(id, event, received_at) VALUES (?, ?, ?)
		ON CONFLICT(id) DO NOTHING`, s.red(id), s.red(event), fmtTime(s.now()))
	if err != nil {
		return false, fmt.Errorf("record delivery %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record delivery %s: %w", id, err)
	}
	return n == 1, nil
}

// PruneDeliveries forgets delivery ids received more than age ago, by the
// store's clock, and returns how many it removed. GitHub redelivers only
// deliveries of the last three days, so older ids can never come back.
func (s *Store) PruneDeliveries(ctx context.Context, age time.Duration) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM deliveries WHERE received_at < ?`, fmtTime(s.now().Add(-age)))
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// RepoWatch is a repository whose open PRs server mode registers: those
// carrying Label, or opened by one of Authors (either matches; both empty
// means every open PR).
type RepoWatch struct {
	Repo      string // owner/name; on GitLab the project's full path, group[/sub...]/name
	Label     string
	Authors   []string
	CreatedAt time.Time
}

// PutRepoWatch adds w, or replaces the watch of the same repository.
func (s *Store) PutRepoWatch(ctx context.Context, w RepoWatch) error {
	if !strings.Contains(w.Repo, "/") || strings.HasPrefix(w.Repo, "/") || strings.HasSuffix(w.Repo, "/") || strings.Contains(w.Repo, "//") {
		return fmt.Errorf("put repo watch: %q is not owner/name (or a GitLab group/.../project)", w.Repo)
	}
	authors := w.Authors
	if authors == nil {
		authors = []string{}
	}
	b, err := json.Marshal(authors)
	if err != nil {
		return fmt.Errorf("put repo watch %s: %w", w.Repo, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO repo_watches(repo, label, authors, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(repo) DO UPDATE SET label = excluded.label, authors = excluded.authors`,
		s.red(w.Repo), s.red(w.Label), s.red(string(b)), fmtTime(s.now()))
	if err != nil {
		return fmt.Errorf("put repo watch %s: %w", w.Repo, err)
	}
	return nil
}

// RepoWatches lists the watched repositories by name.
func (s *Store) RepoWatches(ctx context.Context) ([]RepoWatch, error) {
	return queryAll(ctx, s, "repo watches", func(sc interface{ Scan(...any) error }) (RepoWatch, error) {
		var (
			w       RepoWatch
			authors string
			created sql.NullString
		)
		if err := sc.Scan(&w.Repo, &w.Label, &authors, &created); err != nil {
			return RepoWatch{}, err
		}
		if err := json.Unmarshal([]byte(authors), &w.Authors); err != nil {
			return RepoWatch{}, fmt.Errorf("authors of %s: %w", w.Repo, err)
		}
		w.CreatedAt = parseTime(created)
		return w, nil
	}, `SELECT repo, label, authors, created_at FROM repo_watches ORDER BY repo`)
}
