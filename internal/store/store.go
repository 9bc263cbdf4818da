// Package store keeps converge's run records in an embedded SQLite file:
// runs and their persisted loop state, the per-PR lock (PR-G5), rounds,
// findings, idempotent actions (PR-G3, REL-2) and the event log.
//
// Every text and JSON value written passes through the store's Redactor
// first, so a secret handed to the store by mistake never reaches the file
// (SEC-3). Lookups by id or key are redacted the same way, so they still
// match what was written.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// Redactor rewrites a string so that no secret remains in it.
type Redactor func(string) string

// Option configures a Store at Open.
type Option func(*Store)

// WithRedactor adds r to the redaction applied to every value written.
func WithRedactor(r Redactor) Option {
	return func(s *Store) {
		if r != nil {
			s.redactors = append(s.redactors, r)
		}
	}
}

// WithSecrets redacts each non-empty secret wherever it appears in a value
// written. It is shorthand for WithRedactor(SecretRedactor(secrets...)).
func WithSecrets(secrets ...string) Option {
	return WithRedactor(SecretRedactor(secrets...))
}

// Redacted replaces secrets in stored values.
const Redacted = "[REDACTED]"

// SecretRedactor returns a Redactor replacing every occurrence of the given
// secrets with Redacted. Longer secrets are replaced first so that a secret
// containing another is never left half-visible.
func SecretRedactor(secrets ...string) Redactor {
	var ss []string
	for _, s := range secrets {
		if s != "" {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return func(v string) string { return v }
	}
	sort.Slice(ss, func(i, j int) bool { return len(ss[i]) > len(ss[j]) })
	pairs := make([]string, 0, 2*len(ss))
	for _, s := range ss {
		pairs = append(pairs, s, Redacted)
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// WithClock sets the clock used for timestamps the store fills in itself
// (updated_at, ended_at, lock acquisition). Tests use it; the default is
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// Store is a handle on one database file. It is safe for concurrent use,
// and several processes may open the same file.
type Store struct {
	db        *sql.DB
	redactors []Redactor
	now       func() time.Time
	host      string
}

// ErrNotFound is matched (errors.Is) by every *NotFoundError.
var ErrNotFound = errors.New("not found")

// NotFoundError reports a missing record.
type NotFoundError struct {
	What string // "run", "action"
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.What, e.ID) }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// DefaultPath is where converge keeps its database:
// $XDG_STATE_HOME/converge/converge.db, else
// $HOME/.local/state/converge/converge.db. It returns "" when neither
// variable is set. env is usually os.Getenv.
func DefaultPath(env func(string) string) string {
	if d := env("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "converge", "converge.db")
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "converge", "converge.db")
	}
	return ""
}

// Open opens (creating if needed) the database at path, with its parent
// directories, and brings its schema up to date.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// 0700: run records hold PR content and loop state that need not be
	// world-readable.
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	q := url.Values{}
	// busy_timeout lets concurrent processes queue instead of failing with
	// SQLITE_BUSY; immediate transactions take the write lock up front so
	// two writers never deadlock upgrading a read lock.
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	host, _ := os.Hostname()
	s := &Store{db: db, now: time.Now, host: host}
	for _, o := range opts {
		o(s)
	}
	if err := whileBusy(ctx, func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	// The file may hold run content: keep it private even when the
	// directory already existed with looser permissions.
	_ = os.Chmod(abs, 0o600)
	if err := whileBusy(ctx, func() error { return migrate(ctx, db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	return s, nil
}

// openBusyWait bounds whileBusy, as busy_timeout bounds a statement.
const openBusyWait = 10 * time.Second

// whileBusy runs f again while it fails with SQLITE_BUSY, for at most
// openBusyWait. A new connection's setup (the switch to WAL on a fresh
// file) can fail with SQLITE_BUSY at once, without waiting out
// busy_timeout, when another process sets up the same file: two
// converges starting together on a new store.
func whileBusy(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(openBusyWait)
	wait := 5 * time.Millisecond
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// Close releases the database.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the underlying handle for read-only reporting (dashboard,
// status). Writes must go through the methods so redaction applies.
func (s *Store) DB() *sql.DB { return s.db }

func (s *Store) red(v string) string {
	for _, r := range s.redactors {
		v = r(v)
	}
	return v
}

// redJSON redacts a JSON (or any byte) value; empty values are stored as
// NULL.
func (s *Store) redJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return s.red(string(b))
}

// timeLayout is fixed width so that text order is time order in SQL.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(ns sql.NullString) time.Time {
	if !ns.Valid || ns.String == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, ns.String)
	if err != nil {
		return time.Time{}
	}
	return t
}

func bytesOf(ns sql.NullString) []byte {
	if !ns.Valid {
		return nil
	}
	return []byte(ns.String)
}

// NewRunID returns a fresh run id such as "r-20261130-abcdef": sortable by
// day, unique by its random suffix.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "r-" + now.UTC().Format("20060102") + "-" + hex.EncodeToString(b[:])
}

// queryAll runs a query and scans every row with scan; what names the
// query in errors.
func queryAll[T any](ctx context.Context, s *Store, what string, scan func(interface{ Scan(...any) error }) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
