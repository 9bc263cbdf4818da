package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	_ "modernc.org/sqlite"
)

// TestREL_2_ALockWhosePIDWasReusedIsStale: the process that took a lock
// died, and its pid now belongs to another process (pids wrap within
// minutes on a busy machine: 32768 of them here). The lock is stale, and
// a resumed run takes it over; by its pid alone it looked live, and the
// resumed run was refused as busy (converge serve's restart lost a loop
// that way, silently). The reuse is simulated: the lock records this
// test's pid with a start time that is not this process's.
func TestREL_2_ALockWhosePIDWasReusedIsStale(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a process's start time is read from /proc")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	s := openT(t, path)
	newRun(t, s, "r-1", "pr")
	newRun(t, s, "r-2", "pr")
	if _, ok, err := s.AcquireLock(ctx, "pr", "r-1", os.Getpid()); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if _, live, err := s.LockLive(ctx, "pr"); err != nil || !live {
		t.Fatalf("a lock this process holds: live %v, %v", live, err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `UPDATE locks SET process = ? WHERE target = 'pr'`, fmt.Sprintf("%d.1", os.Getpid())); err != nil {
		t.Fatal(err)
	}
	if holder, live, err := s.LockLive(ctx, "pr"); err != nil || live {
		t.Fatalf("a lock whose pid is another process's now: holder %q live %v, %v; want stale", holder, live, err)
	}
	if h, ok, err := s.AcquireLock(ctx, "pr", "r-2", os.Getpid()); err != nil || !ok || h != "r-2" {
		t.Fatalf("takeover of the reused pid's lock = %q %v %v", h, ok, err)
	}
}
