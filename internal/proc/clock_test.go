//go:build unix

package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/proc/proctest"
)

// waitFile waits, bounded, for a file the process under test writes.
func waitFile(t *testing.T, p string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never written", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAG_T1_BudgetAndGraceOnAnInjectedClock: the time-box is the
// clock's, not the wall's. Nothing stops the process before its budget
// fires, however long it runs; at the budget the group gets SIGTERM (the
// cue to print its record) and a grace timer of Spec.Grace starts; a
// process deaf to SIGTERM is killed only when the grace fires, with the
// child it started.
func TestAG_T1_BudgetAndGraceOnAnInjectedClock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	clock := proctest.NewManualClock()
	type ran struct {
		r   proc.Result
		err error
	}
	out := make(chan ran, 1)
	go func() {
		r, err := proc.Run(context.Background(), proc.Spec{
			Argv:   []string{"sh", "-c", `trap 'echo got-term' TERM; sleep 1000 & echo "$$ $!" > ` + pids + `; while :; do sleep 0.05; done`},
			Budget: 5 * time.Minute, Grace: 10 * time.Second, Clock: clock,
			// The pids it writes are read here: the host's, uncontained.
			Trusted: true,
		})
		out <- ran{r, err}
	}()
	budget := clock.Next(t)
	if budget.D != 5*time.Minute {
		t.Fatalf("budget timer %s, want the Spec's 5m", budget.D)
	}
	ids := strings.Fields(waitFile(t, pids))
	if len(ids) != 2 {
		t.Fatalf("pids %q", ids)
	}
	select {
	case r := <-out:
		t.Fatalf("stopped before its budget fired: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	budget.Fire()
	grace := clock.Next(t)
	if grace.D != 10*time.Second {
		t.Fatalf("grace timer %s, want the Spec's 10s", grace.D)
	}
	// The shell traps SIGTERM and goes on: only the grace ends it.
	select {
	case r := <-out:
		t.Fatalf("a process deaf to SIGTERM ended before the grace fired: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	grace.Fire()
	var got ran
	select {
	case got = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("not stopped after the grace fired")
	}
	if got.err != nil || !got.r.TimedOut || got.r.ExitCode != -1 || !strings.Contains(got.r.Stdout, "got-term") {
		t.Fatalf("result %+v, %v; want timed out, killed, after the SIGTERM cue", got.r, got.err)
	}
	for _, id := range ids {
		pid, err := strconv.Atoi(id)
		if err != nil {
			t.Fatal(err)
		}
		if proctest.Alive(pid) {
			t.Errorf("pid %d is alive after the stop", pid)
		}
	}
}
