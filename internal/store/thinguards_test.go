package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPR_G5_ALockHeldOnAnotherHostIsNotJudgedByTheLocalPID: a lock
// records the host and pid of the process that took it. This host cannot
// see another host's processes, so the pid of a lock taken there is never
// probed here (no process with that pid exists on this host, and that
// proves nothing): the lock stays live, and a second run on the target is
// refused, until the holder's run has finished.
func TestPR_G5_ALockHeldOnAnotherHostIsNotJudgedByTheLocalPID(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "l.db"))
	newRun(t, s, "r-1", "pr")
	newRun(t, s, "r-2", "pr")
	// A pid above every pid_max: no process on this host has it, so a
	// local probe of it says dead, every time.
	const remotePID = 2147483000
	if _, ok, err := s.AcquireLock(ctx, "pr", "r-1", remotePID); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	// The run that holds it runs on another host (another machine sharing
	// the store, or a store copied from one).
	if _, err := s.DB().ExecContext(ctx, `UPDATE locks SET host = 'build-host-2' WHERE target = 'pr'`); err != nil {
		t.Fatal(err)
	}
	if holder, live, err := s.LockLive(ctx, "pr"); err != nil || !live || holder != "r-1" {
		t.Fatalf("LockLive = %q %v %v; want r-1's lock live: its pid is on another host", holder, live, err)
	}
	if h, ok, err := s.AcquireLock(ctx, "pr", "r-2", os.Getpid()); err != nil || ok || h != "r-1" {
		t.Fatalf("AcquireLock by r-2 = %q %v %v; want refused, held by r-1", h, ok, err)
	}

	// Its run finished (the other host ended it): now it is stale.
	if _, err := s.DB().ExecContext(ctx, `UPDATE runs SET ended_at = '2026-01-01T00:00:00.000000000Z' WHERE id = 'r-1'`); err != nil {
		t.Fatal(err)
	}
	if _, live, err := s.LockLive(ctx, "pr"); err != nil || live {
		t.Fatalf("a finished run's lock: live %v, %v", live, err)
	}
	if h, ok, err := s.AcquireLock(ctx, "pr", "r-2", os.Getpid()); err != nil || !ok || h != "r-2" {
		t.Fatalf("takeover of a finished run's lock = %q %v %v", h, ok, err)
	}
}
