package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations are applied in order; migration i has version i+1. Append
// only: never edit or reorder a migration that has shipped.
var migrations = []string{
	// 1: the initial schema.
	`
CREATE TABLE runs (
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	target     TEXT NOT NULL,
	state      TEXT,
	status     TEXT NOT NULL,
	exit_code  INTEGER,
	started_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	ended_at   TEXT,
	proof      TEXT
);
CREATE INDEX runs_target_started ON runs(target, started_at);
CREATE INDEX runs_started ON runs(started_at);

CREATE TABLE locks (
	target      TEXT PRIMARY KEY,
	run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	pid         INTEGER NOT NULL,
	host        TEXT NOT NULL,
	acquired_at TEXT NOT NULL
);

CREATE TABLE rounds (
	run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	n          INTEGER NOT NULL,
	head_sha   TEXT NOT NULL,
	started_at TEXT,
	ended_at   TEXT,
	summary    TEXT,
	commit_sha TEXT NOT NULL DEFAULT '',
	structural INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, n)
);

CREATE TABLE findings (
	run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	round       INTEGER NOT NULL,
	id          TEXT NOT NULL,
	thread_id   TEXT NOT NULL DEFAULT '',
	path        TEXT NOT NULL DEFAULT '',
	start_line  INTEGER NOT NULL DEFAULT 0,
	end_line    INTEGER NOT NULL DEFAULT 0,
	summary     TEXT NOT NULL DEFAULT '',
	verdict     TEXT NOT NULL DEFAULT '',
	source      TEXT NOT NULL DEFAULT '',
	author      TEXT NOT NULL DEFAULT '',
	disposition TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, round, id)
);

CREATE TABLE actions (
	key        TEXT PRIMARY KEY,
	run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	round      INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	target     TEXT NOT NULL DEFAULT '',
	status     TEXT NOT NULL,
	result     TEXT,
	started_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX actions_run ON actions(run_id);

CREATE TABLE events (
	seq     INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	time    TEXT NOT NULL,
	kind    TEXT NOT NULL,
	round   INTEGER NOT NULL DEFAULT 0,
	message TEXT NOT NULL DEFAULT '',
	data    TEXT
);
CREATE INDEX events_run ON events(run_id, seq);
`,
	// 2: `converge stop RUN` asks a running loop, in another process, to
	// end at its next step (PR-G5).
	`ALTER TABLE runs ADD COLUMN stop_requested INTEGER NOT NULL DEFAULT 0;`,
	// 3: tickets, the units of work a loop hands to child runs (LOOP-3):
	// `converge loop` makes each iteration a ticket <run>.iter.NN, claimed
	// exclusively in the child's name.
	`
CREATE TABLE tickets (
	id          TEXT PRIMARY KEY,
	run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	n           INTEGER NOT NULL DEFAULT 0,
	status      TEXT NOT NULL,
	owner       TEXT NOT NULL DEFAULT '',
	pid         INTEGER NOT NULL DEFAULT 0,
	host        TEXT NOT NULL DEFAULT '',
	result      TEXT,
	created_at  TEXT NOT NULL,
	claimed_at  TEXT,
	finished_at TEXT
);
CREATE INDEX tickets_run ON tickets(run_id, n);
`,
	// 4: server mode (SEC-4): webhook delivery ids already acted on, so a
	// redelivery after a restart is refused; repositories watched for
	// PRs to register.
	deliveriesSchema,
	// 5: converge serve's registered PRs, kept before their loops start.
	registrationsSchema,
	// 6: a lock's holder as a process identity (pid and start time): a
	// dead holder's pid, reused by another process, kept the lock live.
	`ALTER TABLE locks ADD COLUMN process TEXT NOT NULL DEFAULT '';`,
	// 7: what forge calls cost, per run and per identity (spend.go).
	spendSchema,
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }

// migrate applies the missing migrations, each in its own immediate
// transaction so that two processes opening a fresh file at once apply
// each migration exactly once.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for i, m := range migrations {
		if err := applyMigration(ctx, db, i+1, m); err != nil {
			return err
		}
	}
	var max sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&max); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if int(max.Int64) > len(migrations) {
		return fmt.Errorf("migrate: database schema version %d is newer than this converge (%d)", max.Int64, len(migrations))
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, version int, stmt string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate %d: %w", version, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return fmt.Errorf("migrate %d: %w", version, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("migrate %d: %w", version, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied_at) VALUES(?, ?)`,
		version, time.Now().UTC().Format(timeLayout)); err != nil {
		return fmt.Errorf("migrate %d: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate %d: %w", version, err)
	}
	return nil
}
