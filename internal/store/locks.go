package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/proc"
)

// AcquireLock takes the one-loop-per-target lock (PR-G5) for runID, whose
// process is pid. It returns the holder's run id and whether runID now
// holds the lock. Acquiring a lock runID already holds succeeds.
//
// A lock is stale, and taken over, when its run has finished or when it
// was taken on this host by a process that is no longer alive (the same
// pid and start time: a pid alone is soon another process's). A lock
// taken on another host is only stale once its run has finished: we
// cannot see that host's processes.
//
// Every change is a compare-and-swap on the previous holder, so two
// concurrent callers never both win.
func (s *Store) AcquireLock(ctx context.Context, target, runID string, pid int) (holder string, ok bool, err error) {
	t, rid := s.red(target), s.red(runID)
	process := proc.Identity(pid)
	for attempt := 0; attempt < 8; attempt++ {
		now := fmtTime(s.now())
		res, err := s.db.ExecContext(ctx, `INSERT INTO locks(target, run_id, pid, process, host, acquired_at)
			VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO NOTHING`, t, rid, pid, process, s.host, now)
		if err != nil {
			return "", false, fmt.Errorf("acquire lock %s: %w", target, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return runID, true, nil
		}
		cur, found, err := s.lockHolder(ctx, t)
		if err != nil {
			return "", false, fmt.Errorf("acquire lock %s: %w", target, err)
		}
		if !found {
			continue // released meanwhile: try to insert again
		}
		curRun, curPID, curHost := cur.run, cur.pid, cur.host
		if curRun == rid {
			if curPID != pid || cur.process != process || curHost != s.host {
				// The same run resumed in a new process: record the live one.
				if _, err := s.db.ExecContext(ctx, `UPDATE locks SET pid = ?, process = ?, host = ? WHERE target = ? AND run_id = ?`,
					pid, process, s.host, t, rid); err != nil {
					return "", false, fmt.Errorf("acquire lock %s: %w", target, err)
				}
			}
			return runID, true, nil
		}
		if !cur.stale {
			return curRun, false, nil
		}
		res, err = s.db.ExecContext(ctx, `UPDATE locks SET run_id = ?, pid = ?, process = ?, host = ?, acquired_at = ?
			WHERE target = ? AND run_id = ? AND pid = ? AND host = ?`, rid, pid, process, s.host, now, t, curRun, curPID, curHost)
		if err != nil {
			return "", false, fmt.Errorf("acquire lock %s: %w", target, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return runID, true, nil
		}
		// Someone else changed the lock between our read and write: look again.
	}
	return "", false, fmt.Errorf("acquire lock %s: too much contention", target)
}

// ReleaseLock drops runID's lock on target. Releasing a lock held by
// another run, or not held at all, does nothing.
func (s *Store) ReleaseLock(ctx context.Context, target, runID string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM locks WHERE target = ? AND run_id = ?`, s.red(target), s.red(runID)); err != nil {
		return fmt.Errorf("release lock %s: %w", target, err)
	}
	return nil
}

// LockLive reports the run holding target's lock and whether that lock is
// live: held by a process alive on this host, or by an unfinished run on
// another host. A stale or absent lock is not live.
func (s *Store) LockLive(ctx context.Context, target string) (runID string, live bool, err error) {
	cur, found, err := s.lockHolder(ctx, s.red(target))
	if err != nil {
		return "", false, fmt.Errorf("read lock %s: %w", target, err)
	}
	if !found {
		return "", false, nil
	}
	return cur.run, !cur.stale, nil
}

// lockRow is who holds a lock, as its row and its run say.
type lockRow struct {
	run, host string
	pid       int
	process   string // proc.Identity of pid when taken; "" in older rows
	// stale: its run finished, or was taken on this host by a process
	// that is no longer alive. A lock taken on another host is only stale
	// once its run has finished: we cannot see that host's processes.
	stale bool
}

// alive reports whether the process that took the lock runs still: its
// pid alone would take a later process given the same pid for it.
func (h lockRow) alive() bool {
	if strings.Contains(h.process, ".") {
		return proc.IdentityLive(h.process)
	}
	return pidAlive(h.pid)
}

// lockHolder reads the lock on t (an already redacted target).
func (s *Store) lockHolder(ctx context.Context, t string) (lockRow, bool, error) {
	var (
		h         lockRow
		ended     sql.NullString
		runExists bool
	)
	err := s.db.QueryRowContext(ctx, `SELECT l.run_id, l.pid, l.process, l.host, r.ended_at, r.id IS NOT NULL
		FROM locks l LEFT JOIN runs r ON r.id = l.run_id WHERE l.target = ?`, t).
		Scan(&h.run, &h.pid, &h.process, &h.host, &ended, &runExists)
	if errors.Is(err, sql.ErrNoRows) {
		return lockRow{}, false, nil
	}
	if err != nil {
		return lockRow{}, false, err
	}
	h.stale = !runExists || ended.Valid || (h.host == s.host && !h.alive())
	return h, true, nil
}
