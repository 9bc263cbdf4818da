package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestPR_G5_RunsHeldByAProcess: the runs a process holds are those whose
// lock it took and that have not ended, in the order it took them; a
// finished run's lock is gone, and another process's runs are not its.
func TestPR_G5_RunsHeldByAProcess(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range []struct {
		id, target string
		pid        int
	}{{"r-1", "pr/1", 100}, {"r-2", "pr/2", 100}, {"r-3", "pr/3", 100}, {"r-4", "pr/4", 200}} {
		if err := s.CreateRun(ctx, Run{ID: r.id, Kind: "pr", Target: r.target}); err != nil {
			t.Fatal(err)
		}
		// The pids are not alive: a lock is taken over only by another run.
		if _, ok, err := s.AcquireLock(ctx, r.target, r.id, r.pid); err != nil || !ok {
			t.Fatalf("lock %s: %v %v", r.id, ok, err)
		}
	}
	if err := s.FinishRun(ctx, "r-2", "two-stable", 0, nil); err != nil {
		t.Fatal(err)
	}
	for pid, want := range map[int][]string{100: {"r-1", "r-3"}, 200: {"r-4"}, 300: nil} {
		got, err := s.RunsHeldBy(ctx, pid)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("RunsHeldBy(%d) = %v, %v; want %v", pid, got, err, want)
		}
	}
}
