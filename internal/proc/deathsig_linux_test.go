package proc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/proc/proctest"
)

// parentEnv makes the test binary a converge to kill: it runs a long
// child through Run and never returns. The child writes its pid to the
// file parentEnv names; with grandchildEnv set it starts a grandchild
// that writes its pid to that file instead. With directEnv set the child
// runs without the supervisor (Spec.Direct).
const (
	parentEnv     = "CONVERGE_PROC_TEST_PARENT"
	grandchildEnv = "CONVERGE_PROC_TEST_GRANDCHILD"
	directEnv     = "CONVERGE_PROC_TEST_DIRECT"
	// scriptEnv, when set, is the child's script instead (it must write
	// its pid to the file parentEnv names).
	scriptEnv = "CONVERGE_PROC_TEST_SCRIPT"
)

func TestMain(m *testing.M) {
	proc.Supervise()
	if pidFile := os.Getenv(parentEnv); pidFile != "" {
		script := "echo $$ > " + pidFile + "; exec sleep 1000"
		if g := os.Getenv(grandchildEnv); g != "" {
			script = "sleep 1000 & echo $! > " + g + "; echo $$ > " + pidFile + "; wait"
		}
		if s := os.Getenv(scriptEnv); s != "" {
			script = s
		}
		_, _ = proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", script}, Direct: os.Getenv(directEnv) != "", Trusted: true})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startParent starts the test binary as a converge running a child (see
// parentEnv) and returns it with the pid the child wrote to pidFile.
func startParent(t *testing.T, pidFile string, env ...string) (*exec.Cmd, int) {
	t.Helper()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(append(os.Environ(), parentEnv+"="+pidFile), env...)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return parent, pid
			}
		}
		if time.Now().After(deadline) {
			_ = parent.Process.Kill()
			t.Fatal("the child never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestREL2_ChildDiesWithConverge: converge killed by SIGKILL, which it
// cannot catch, takes the agent it was running with it; otherwise the
// agent would go on editing a tree the resumed run is resetting, with no
// budget to stop it.
func TestREL2_ChildDiesWithConverge(t *testing.T) {
	parent, child := startParent(t, filepath.Join(t.TempDir(), "child.pid"))
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !proctest.WaitGone(child, 10*time.Second) {
		t.Fatalf("child %d outlived its SIGKILLed parent", child)
	}
}

// TestREL2_OrphansOfAKilledConvergeAreReaped: Pdeathsig takes only the
// direct child of a converge killed by SIGKILL; what that child started
// lives on, orphaned, until the next converge's ReapOrphans kills it. A
// process whose converge is alive is left alone.
func TestREL2_OrphansOfAKilledConvergeAreReaped(t *testing.T) {
	// A process of this live converge, started as Run starts them.
	mine := exec.Command("sleep", "1000")
	mine.Env = append(os.Environ(), proc.OwnerEnv+"="+proc.Owner())
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mine.Process.Kill(); _ = mine.Wait() })

	// Every converge on this machine reaps orphans when it claims a run,
	// and tests of other packages claim runs beside this one: one of them
	// may kill this orphan first, and this ReapOrphans then finds none.
	// So the scenario runs again until this ReapOrphans killed it, five
	// times at most.
	const tries = 5
	for try := 1; ; try++ {
		grandchild := orphanOfAKilledConverge(t)
		n := proc.ReapOrphans()
		// Killed by another converge, it may not be gone yet: wait.
		if !proctest.WaitGone(grandchild, 10*time.Second) {
			t.Fatalf("the orphan %d of the killed converge lives on (ReapOrphans killed %d)", grandchild, n)
		}
		if n >= 1 {
			break
		}
		if try == tries {
			t.Fatalf("ReapOrphans killed 0 processes in %d tries, want the orphan at least", tries)
		}
		t.Logf("try %d: another converge reaped the orphan first", try)
	}
	if !proctest.Alive(mine.Process.Pid) {
		t.Error("a process of a live converge was killed")
	}
}

// orphanOfAKilledConverge starts a converge-like parent whose child starts
// a grandchild, SIGKILLs the parent (Pdeathsig takes the child), and
// returns the grandchild, orphaned. Direct: the supervisor would kill the
// grandchild itself (AG-K1); ReapOrphans is the second line, for what
// escaped the first.
func orphanOfAKilledConverge(t *testing.T) int {
	t.Helper()
	dir := t.TempDir()
	gFile := filepath.Join(dir, "grandchild.pid")
	parent, _ := startParent(t, filepath.Join(dir, "child.pid"), grandchildEnv+"="+gFile, directEnv+"=1")
	grandchild := readPids(t, gFile)[0]
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	return grandchild
}
