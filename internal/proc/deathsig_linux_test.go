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

// parentEnv makes the test binary the parent in
// TestREL2_ChildDiesWithConverge: it runs a long child through Run and
// never returns.
const parentEnv = "CONVERGE_PROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if pidFile := os.Getenv(parentEnv); pidFile != "" {
		_, _ = proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 1000"}})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestREL2_ChildDiesWithConverge: converge killed by SIGKILL, which it
// cannot catch, takes the agent it was running with it; otherwise the
// agent would go on editing a tree the resumed run is resetting, with no
// budget to stop it.
func TestREL2_ChildDiesWithConverge(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"="+pidFile)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(10 * time.Second)
	for child == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			_ = parent.Process.Kill()
			t.Fatal("the child never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for proctest.Alive(child) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d outlived its SIGKILLed parent", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
