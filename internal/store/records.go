package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Round is one observe-decide-act round of a run.
type Round struct {
	RunID      string
	N          int    // 1-based round number
	HeadSHA    string // PR head observed at the start of the round
	StartedAt  time.Time
	EndedAt    time.Time
	Summary    json.RawMessage
	CommitSHA  string // the loop's commit this round, "" if none
	Structural bool   // counted by PR-T6's consecutive-structural guard
}

// AddRound records round r.N of r.RunID. Recording the same round again
// replaces it, so a resumed round can be written when it really ends.
func (s *Store) AddRound(ctx context.Context, r Round) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO rounds
		(run_id, n, head_sha, started_at, ended_at, summary, commit_sha, structural)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(run_id, n) DO UPDATE SET head_sha = excluded.head_sha,
			started_at = excluded.started_at, ended_at = excluded.ended_at,
			summary = excluded.summary, commit_sha = excluded.commit_sha,
			structural = excluded.structural`,
		s.red(r.RunID), r.N, s.red(r.HeadSHA), fmtTime(r.StartedAt), fmtTime(r.EndedAt),
		s.redJSON(r.Summary), s.red(r.CommitSHA), r.Structural)
	if err != nil {
		return fmt.Errorf("add round %d of %s: %w", r.N, r.RunID, err)
	}
	return nil
}

// Rounds returns the run's rounds in order.
func (s *Store) Rounds(ctx context.Context, runID string) ([]Round, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, n, head_sha, started_at, ended_at, summary, commit_sha, structural
		FROM rounds WHERE run_id = ? ORDER BY n`, s.red(runID))
	if err != nil {
		return nil, fmt.Errorf("rounds of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Round
	for rows.Next() {
		var (
			r                 Round
			started, ended, m sql.NullString
		)
		if err := rows.Scan(&r.RunID, &r.N, &r.HeadSHA, &started, &ended, &m, &r.CommitSHA, &r.Structural); err != nil {
			return nil, fmt.Errorf("rounds of %s: %w", runID, err)
		}
		r.StartedAt, r.EndedAt, r.Summary = parseTime(started), parseTime(ended), bytesOf(m)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rounds of %s: %w", runID, err)
	}
	return out, nil
}

// Finding is one review finding as triaged in a round.
type Finding struct {
	ID          string // stable finding id (dedupe key)
	Round       int    // set by Findings; AddFindings takes the round separately
	ThreadID    string // forge review thread, "" for local findings
	Path        string
	StartLine   int
	EndLine     int
	Summary     string
	Verdict     string // classification, e.g. "structural", "minor"
	Source      string // e.g. "copilot", "local-review"
	Author      string
	Disposition string // e.g. "addressed", "stale", "escalated"
}

// AddFindings records the findings triaged in a round. A finding already
// recorded for the same run, round and id is replaced (its disposition may
// change within the round).
func (s *Store) AddFindings(ctx context.Context, runID string, round int, fs []Finding) error {
	if len(fs) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add findings to %s: %w", runID, err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO findings
		(run_id, round, id, thread_id, path, start_line, end_line, summary, verdict, source, author, disposition)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(run_id, round, id) DO UPDATE SET thread_id = excluded.thread_id,
			path = excluded.path, start_line = excluded.start_line, end_line = excluded.end_line,
			summary = excluded.summary, verdict = excluded.verdict, source = excluded.source,
			author = excluded.author, disposition = excluded.disposition`)
	if err != nil {
		return fmt.Errorf("add findings to %s: %w", runID, err)
	}
	defer stmt.Close()
	for _, f := range fs {
		if _, err := stmt.ExecContext(ctx, s.red(runID), round, s.red(f.ID), s.red(f.ThreadID), s.red(f.Path),
			f.StartLine, f.EndLine, s.red(f.Summary), s.red(f.Verdict), s.red(f.Source), s.red(f.Author),
			s.red(f.Disposition)); err != nil {
			return fmt.Errorf("add finding %s to %s: %w", f.ID, runID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add findings to %s: %w", runID, err)
	}
	return nil
}

// Findings returns the run's findings by round, in insertion order.
func (s *Store) Findings(ctx context.Context, runID string) ([]Finding, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT round, id, thread_id, path, start_line, end_line, summary, verdict, source, author, disposition
		FROM findings WHERE run_id = ? ORDER BY round, rowid`, s.red(runID))
	if err != nil {
		return nil, fmt.Errorf("findings of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Finding
	for rows.Next() {
		var f Finding
		if err := rows.Scan(&f.Round, &f.ID, &f.ThreadID, &f.Path, &f.StartLine, &f.EndLine, &f.Summary,
			&f.Verdict, &f.Source, &f.Author, &f.Disposition); err != nil {
			return nil, fmt.Errorf("findings of %s: %w", runID, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("findings of %s: %w", runID, err)
	}
	return out, nil
}

// Action statuses. The loop may store others through FinishAction.
const (
	ActionStarted = "started"
	ActionDone    = "done"
	ActionFailed  = "failed"
)

// Action is one side effect of a run, keyed for idempotency: the same Key
// is never acted on twice (PR-G3, REL-2).
type Action struct {
	Key       string // deterministic: see ActionKey
	RunID     string
	Round     int
	Kind      string // e.g. "reply", "resolve", "commit", "push"
	Target    string // e.g. a thread id or a ref
	Status    string // ActionStarted, ActionDone, ...
	Result    json.RawMessage
	StartedAt time.Time
	UpdatedAt time.Time
}

// ActionKey is the deterministic idempotency key of an action.
func ActionKey(runID string, round int, kind, target string) string {
	return fmt.Sprintf("%s/%d/%s/%s", runID, round, kind, target)
}

// BeginAction records a as started unless an action with its key exists.
// It returns the stored action and whether it already existed; when it
// did, the caller must reconcile with the recorded status (and the trace
// on the forge or in git) instead of acting again. An empty Key is
// filled in with ActionKey.
func (s *Store) BeginAction(ctx context.Context, a Action) (already Action, existed bool, err error) {
	if a.Key == "" {
		a.Key = ActionKey(a.RunID, a.Round, a.Kind, a.Target)
	}
	now := fmtTime(s.now())
	res, err := s.db.ExecContext(ctx, `INSERT INTO actions(key, run_id, round, kind, target, status, result, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?) ON CONFLICT(key) DO NOTHING`,
		s.red(a.Key), s.red(a.RunID), a.Round, s.red(a.Kind), s.red(a.Target), ActionStarted, now, now)
	if err != nil {
		return Action{}, false, fmt.Errorf("begin action %s: %w", a.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Action{}, false, fmt.Errorf("begin action %s: %w", a.Key, err)
	}
	got, err := s.action(ctx, a.Key)
	if err != nil {
		return Action{}, false, fmt.Errorf("begin action %s: %w", a.Key, err)
	}
	return got, n == 0, nil
}

// FinishAction records the outcome of an action begun with BeginAction.
func (s *Store) FinishAction(ctx context.Context, key, status string, result []byte) error {
	res, err := s.db.ExecContext(ctx, `UPDATE actions SET status = ?, result = ?, updated_at = ? WHERE key = ?`,
		s.red(status), s.redJSON(result), fmtTime(s.now()), s.red(key))
	return s.checkOne(res, err, "finish action", "action", key)
}

const actionCols = `key, run_id, round, kind, target, status, result, started_at, updated_at`

func scanAction(sc interface{ Scan(...any) error }) (Action, error) {
	var (
		a                        Action
		result, started, updated sql.NullString
	)
	if err := sc.Scan(&a.Key, &a.RunID, &a.Round, &a.Kind, &a.Target, &a.Status, &result, &started, &updated); err != nil {
		return Action{}, err
	}
	a.Result, a.StartedAt, a.UpdatedAt = bytesOf(result), parseTime(started), parseTime(updated)
	return a, nil
}

func (s *Store) action(ctx context.Context, key string) (Action, error) {
	a, err := scanAction(s.db.QueryRowContext(ctx, `SELECT `+actionCols+` FROM actions WHERE key = ?`, s.red(key)))
	if errors.Is(err, sql.ErrNoRows) {
		return Action{}, &NotFoundError{What: "action", ID: key}
	}
	return a, err
}

// Actions returns the run's actions in the order they were begun.
func (s *Store) Actions(ctx context.Context, runID string) ([]Action, error) {
	return queryAll(ctx, s, "actions of "+runID, scanAction, `SELECT `+actionCols+` FROM actions WHERE run_id = ? ORDER BY rowid`, s.red(runID))
}

// Event is one line of a run's event log (rendered as NDJSON by
// `converge log`).
type Event struct {
	Seq     int64           `json:"seq,omitempty"` // set by Events: append order
	Time    time.Time       `json:"time"`
	Kind    string          `json:"kind"`
	Round   int             `json:"round,omitempty"`
	Message string          `json:"message,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// AppendEvent adds e to the run's log. A zero Time means now.
func (s *Store) AppendEvent(ctx context.Context, runID string, e Event) error {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO events(run_id, time, kind, round, message, data) VALUES (?, ?, ?, ?, ?, ?)`,
		s.red(runID), fmtTime(e.Time), s.red(e.Kind), e.Round, s.red(e.Message), s.redJSON(e.Data)); err != nil {
		return fmt.Errorf("append event to %s: %w", runID, err)
	}
	return nil
}

// Events returns the run's log in append order.
func (s *Store) Events(ctx context.Context, runID string) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, time, kind, round, message, data FROM events WHERE run_id = ? ORDER BY seq`, s.red(runID))
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e       Event
			t, data sql.NullString
		)
		if err := rows.Scan(&e.Seq, &t, &e.Kind, &e.Round, &e.Message, &data); err != nil {
			return nil, fmt.Errorf("events of %s: %w", runID, err)
		}
		e.Time, e.Data = parseTime(t), bytesOf(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of %s: %w", runID, err)
	}
	return out, nil
}
