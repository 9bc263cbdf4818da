package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
)

// Run statuses the store itself knows about; terminal reasons ("two-stable",
// "human-push", ...) belong to the loops and are stored as given.
const (
	StatusRunning = "running"
)

// Run is one invocation of a loop against one target.
type Run struct {
	ID     string // e.g. "r-20261130-abcdef"
	Kind   string // "pr"
	Target string // e.g. the PR URL
	// State is the loop's persisted state, opaque to the store.
	State json.RawMessage
	// Status is StatusRunning or the terminal reason.
	Status    string
	ExitCode  exitcode.Code // meaningful once EndedAt is set
	StartedAt time.Time
	UpdatedAt time.Time
	EndedAt   time.Time // zero while running
	Proof     json.RawMessage
}

// Finished reports whether the run has ended.
func (r Run) Finished() bool { return !r.EndedAt.IsZero() }

// ListOptions filters ListRuns.
type ListOptions struct {
	Limit  int    // <= 0: no limit
	Target string // "" : all targets
}

// CreateRun records a new run. Empty Status means StatusRunning; a zero
// StartedAt means now.
func (s *Store) CreateRun(ctx context.Context, r Run) error {
	if r.ID == "" {
		return errors.New("create run: empty id")
	}
	if r.Status == "" {
		r.Status = StatusRunning
	}
	now := s.now()
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.StartedAt
	}
	var exit any
	if !r.EndedAt.IsZero() {
		exit = int(r.ExitCode)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs
		(id, kind, target, state, status, exit_code, started_at, updated_at, ended_at, proof)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.red(r.ID), s.red(r.Kind), s.red(r.Target), s.redJSON(r.State), s.red(r.Status), exit,
		fmtTime(r.StartedAt), fmtTime(r.UpdatedAt), fmtTime(r.EndedAt), s.redJSON(r.Proof))
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

const runCols = `id, kind, target, state, status, exit_code, started_at, updated_at, ended_at, proof`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var (
		r                           Run
		state, proof                sql.NullString
		exit                        sql.NullInt64
		started, updated, endedText sql.NullString
	)
	if err := sc.Scan(&r.ID, &r.Kind, &r.Target, &state, &r.Status, &exit, &started, &updated, &endedText, &proof); err != nil {
		return Run{}, err
	}
	r.State = bytesOf(state)
	r.Proof = bytesOf(proof)
	r.ExitCode = exitcode.Code(exit.Int64)
	r.StartedAt = parseTime(started)
	r.UpdatedAt = parseTime(updated)
	r.EndedAt = parseTime(endedText)
	return r, nil
}

// GetRun returns the run with the given id, or a *NotFoundError.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, s.red(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, &NotFoundError{What: "run", ID: id}
	}
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns returns runs newest first.
func (s *Store) ListRuns(ctx context.Context, o ListOptions) ([]Run, error) {
	q := `SELECT ` + runCols + ` FROM runs`
	var args []any
	if o.Target != "" {
		q += ` WHERE target = ?`
		args = append(args, s.red(o.Target))
	}
	q += ` ORDER BY started_at DESC, rowid DESC`
	if o.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, o.Limit)
	}
	return queryAll(ctx, s, "list runs", scanRun, q, args...)
}

// LatestRunFor returns the newest run for target, or a *NotFoundError.
func (s *Store) LatestRunFor(ctx context.Context, target string) (Run, error) {
	runs, err := s.ListRuns(ctx, ListOptions{Target: target, Limit: 1})
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 0 {
		return Run{}, &NotFoundError{What: "run for target", ID: target}
	}
	return runs[0], nil
}

// SaveState replaces the run's persisted loop state and status. The loop
// calls it after every step, before acting on the next, so a crash resumes
// from the last decision (PR-G3, PR-T8).
func (s *Store) SaveState(ctx context.Context, id string, state []byte, status string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET state = ?, status = ?, updated_at = ? WHERE id = ?`,
		s.redJSON(state), s.red(status), fmtTime(s.now()), s.red(id))
	return s.checkOne(res, err, "save state", "run", id)
}

// FinishRun marks the run ended with its terminal status, exit code and
// proof, and releases any lock it holds.
func (s *Store) FinishRun(ctx context.Context, id, status string, exitCode exitcode.Code, proof []byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	defer tx.Rollback()
	now := fmtTime(s.now())
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, exit_code = ?, proof = ?, ended_at = ?, updated_at = ? WHERE id = ?`,
		s.red(status), int(exitCode), s.redJSON(proof), now, now, s.red(id))
	if err := s.checkOne(res, err, "finish run", "run", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE run_id = ?`, s.red(id)); err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	return nil
}

// ReopenRun makes a finished run unfinished again, its stop request
// cleared: a run a human stopped (a signal, `converge stop`) that the same
// command resumes with its counts and clock (PR-G3).
func (s *Store) ReopenRun(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, exit_code = 0, ended_at = NULL, stop_requested = 0, updated_at = ? WHERE id = ? AND ended_at IS NOT NULL`,
		StatusRunning, fmtTime(s.now()), s.red(id))
	return s.checkOne(res, err, "reopen run", "run", id)
}

// RequestStop asks the run to end cleanly at its next step (PR-G5). A
// finished run cannot be stopped: the error says how it ended.
func (s *Store) RequestStop(ctx context.Context, id string) error {
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if r.Finished() {
		return fmt.Errorf("run %s already ended %s", id, r.Status)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET stop_requested = 1, updated_at = ? WHERE id = ?`, fmtTime(s.now()), s.red(id))
	return s.checkOne(res, err, "request stop", "run", id)
}

// StopRequested reports whether RequestStop was called for the run.
func (s *Store) StopRequested(ctx context.Context, id string) (bool, error) {
	var stop bool
	err := s.db.QueryRowContext(ctx, `SELECT stop_requested FROM runs WHERE id = ?`, s.red(id)).Scan(&stop)
	if errors.Is(err, sql.ErrNoRows) {
		return false, &NotFoundError{What: "run", ID: id}
	}
	if err != nil {
		return false, fmt.Errorf("read stop request of %s: %w", id, err)
	}
	return stop, nil
}

func (s *Store) checkOne(res sql.Result, err error, op, what, id string) error {
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	if n == 0 {
		return &NotFoundError{What: what, ID: id}
	}
	return nil
}
