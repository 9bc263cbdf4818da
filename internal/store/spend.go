package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// spendSchema is migration 7: what forge calls cost, as the forge said
// (forge.Charge), kept per run and per identity (a GitHub App's
// installation, else the token's user: never the token), by the rate
// limit each counts against, as the calls are made. The limit's columns
// are the last answer's that said them.
const spendSchema = `
CREATE TABLE forge_spend (
	run_id       TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	identity     TEXT NOT NULL,
	resource     TEXT NOT NULL,
	calls        INTEGER NOT NULL DEFAULT 0,
	points       INTEGER NOT NULL DEFAULT 0,
	estimated    INTEGER NOT NULL DEFAULT 0,
	not_modified INTEGER NOT NULL DEFAULT 0,
	rate_limit   INTEGER NOT NULL DEFAULT 0,
	used         INTEGER NOT NULL DEFAULT 0,
	remaining    INTEGER NOT NULL DEFAULT 0,
	reset_at     TEXT,
	read_at      TEXT,
	updated_at   TEXT NOT NULL,
	PRIMARY KEY (run_id, identity, resource)
);
CREATE TABLE forge_identity_spend (
	identity     TEXT NOT NULL,
	resource     TEXT NOT NULL,
	calls        INTEGER NOT NULL DEFAULT 0,
	points       INTEGER NOT NULL DEFAULT 0,
	estimated    INTEGER NOT NULL DEFAULT 0,
	not_modified INTEGER NOT NULL DEFAULT 0,
	rate_limit   INTEGER NOT NULL DEFAULT 0,
	used         INTEGER NOT NULL DEFAULT 0,
	remaining    INTEGER NOT NULL DEFAULT 0,
	reset_at     TEXT,
	read_at      TEXT,
	updated_at   TEXT NOT NULL,
	PRIMARY KEY (identity, resource)
);
`

// ForgeSpend is what calls to a forge cost on one of its rate limits
// (Resource), for one identity: in one run (RunID set) or in all
// (RunID "").
type ForgeSpend struct {
	RunID    string
	Identity string // "HOST/LOGIN" or "HOST/installation/ID"
	Resource string // the forge's name of the limit (graphql, core, api, …)
	// Calls are the requests answered; Points what they spent, Estimated
	// of it what no answer said; NotModified the requests answered 304.
	Calls, Points, Estimated, NotModified int
	// The limit as the last answer that said it did (ReadAt zero: none).
	Limit, Used, Remaining int
	ResetAt                time.Time
	ReadAt                 time.Time
	UpdatedAt              time.Time
}

// spendUpsert adds one charge to a row of table keyed by keys; the
// limit's columns move only to an answer at least as new as the last.
func spendUpsert(table, keys string, n int) string {
	marks := "?"
	for range n - 1 {
		marks += ", ?"
	}
	newer := `excluded.read_at IS NOT NULL AND (read_at IS NULL OR excluded.read_at >= read_at)`
	return fmt.Sprintf(`INSERT INTO %[1]s (%[2]s, calls, points, estimated, not_modified, rate_limit, used, remaining, reset_at, read_at, updated_at)
		VALUES (%[3]s, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(%[2]s) DO UPDATE SET
			calls = calls + 1,
			points = points + excluded.points,
			estimated = estimated + excluded.estimated,
			not_modified = not_modified + excluded.not_modified,
			rate_limit = CASE WHEN %[4]s THEN excluded.rate_limit ELSE rate_limit END,
			used = CASE WHEN %[4]s THEN excluded.used ELSE used END,
			remaining = CASE WHEN %[4]s THEN excluded.remaining ELSE remaining END,
			reset_at = CASE WHEN %[4]s THEN excluded.reset_at ELSE reset_at END,
			read_at = CASE WHEN %[4]s THEN excluded.read_at ELSE read_at END,
			updated_at = excluded.updated_at`, table, keys, marks, newer)
}

// AddForgeSpend counts one answered request's charge for identity, and
// for runID's run when runID is not "", in one transaction.
func (s *Store) AddForgeSpend(ctx context.Context, runID, identity string, c forge.Charge) error {
	est, nm := 0, 0
	if c.Estimated {
		est = c.Points
	}
	if c.NotModified {
		nm = 1
	}
	var readAt, resetAt any
	if c.Budget.Known() {
		at := c.At
		if at.IsZero() {
			at = s.now()
		}
		readAt, resetAt = fmtTime(at), fmtTime(c.Budget.ResetAt)
	}
	vals := []any{c.Points, est, nm, c.Budget.Limit, c.Budget.Used, c.Budget.Remaining, resetAt, readAt, fmtTime(s.now())}
	id, res := s.red(identity), s.red(c.Resource)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add forge spend: %w", err)
	}
	defer tx.Rollback()
	if runID != "" {
		if _, err := tx.ExecContext(ctx, spendUpsert("forge_spend", "run_id, identity, resource", 3), append([]any{s.red(runID), id, res}, vals...)...); err != nil {
			return fmt.Errorf("add forge spend of run %s: %w", runID, err)
		}
	}
	if _, err := tx.ExecContext(ctx, spendUpsert("forge_identity_spend", "identity, resource", 2), append([]any{id, res}, vals...)...); err != nil {
		return fmt.Errorf("add forge spend of %s: %w", identity, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add forge spend: %w", err)
	}
	return nil
}

const spendCols = `identity, resource, calls, points, estimated, not_modified, rate_limit, used, remaining, reset_at, read_at, updated_at`

func scanSpend(sc interface{ Scan(...any) error }, withRun bool) (ForgeSpend, error) {
	var (
		f                    ForgeSpend
		reset, read, updated sql.NullString
		dest                 []any
	)
	if withRun {
		dest = append(dest, &f.RunID)
	}
	dest = append(dest, &f.Identity, &f.Resource, &f.Calls, &f.Points, &f.Estimated, &f.NotModified,
		&f.Limit, &f.Used, &f.Remaining, &reset, &read, &updated)
	if err := sc.Scan(dest...); err != nil {
		return f, err
	}
	f.ResetAt, f.ReadAt, f.UpdatedAt = parseTime(reset), parseTime(read), parseTime(updated)
	return f, nil
}

// RunForgeSpend is what runIDs' runs spent, by run, identity and
// resource (every run's when runIDs is empty).
func (s *Store) RunForgeSpend(ctx context.Context, runIDs ...string) (map[string][]ForgeSpend, error) {
	q := `SELECT run_id, ` + spendCols + ` FROM forge_spend`
	var args []any
	if len(runIDs) > 0 {
		q += ` WHERE run_id IN (?`
		for i, id := range runIDs {
			if i > 0 {
				q += `, ?`
			}
			args = append(args, s.red(id))
		}
		q += `)`
	}
	q += ` ORDER BY run_id, identity, resource`
	rows, err := queryAll(ctx, s, "run forge spend", func(sc interface{ Scan(...any) error }) (ForgeSpend, error) {
		return scanSpend(sc, true)
	}, q, args...)
	if err != nil {
		return nil, err
	}
	out := map[string][]ForgeSpend{}
	for _, f := range rows {
		out[f.RunID] = append(out[f.RunID], f)
	}
	return out, nil
}

// IdentityForgeSpend is every identity's spend across runs, by resource.
func (s *Store) IdentityForgeSpend(ctx context.Context) ([]ForgeSpend, error) {
	return queryAll(ctx, s, "identity forge spend", func(sc interface{ Scan(...any) error }) (ForgeSpend, error) {
		return scanSpend(sc, false)
	}, `SELECT `+spendCols+` FROM forge_identity_spend ORDER BY identity, resource`)
}
