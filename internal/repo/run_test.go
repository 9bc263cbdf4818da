package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc/proctest"
	"github.com/convergeloop/converge/internal/repo"
)

func TestRunCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out, code, err := repo.RunCommand(ctx, dir, []string{"sh", "-c", "pwd; echo out; echo err >&2; exit 3"}, nil, 0)
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v", code, err)
	}
	if !strings.Contains(out, "out\n") || !strings.Contains(out, "err\n") || !strings.Contains(out, filepath.Base(dir)) {
		t.Errorf("output = %q", out)
	}
	out, code, err = repo.RunCommand(ctx, dir, []string{"sh", "-c", "echo $FOO"}, []string{"FOO=bar"}, 0)
	if err != nil || code != 0 || out != "bar\n" {
		t.Errorf("env: %q %d %v", out, code, err)
	}
	// Output is tail-limited: the end (where a test runner's verdict is) stays.
	out, _, _ = repo.RunCommand(ctx, dir, []string{"sh", "-c", "i=0; while [ $i -lt 500 ]; do echo line$i; i=$((i+1)); done"}, nil, 100)
	if !strings.HasSuffix(out, "line499\n") || strings.Contains(out, "line0\n") || len(out) > 100+60 || !strings.Contains(out, "dropped") {
		t.Errorf("tail output = %q", out)
	}
	if _, code, err := repo.RunCommand(ctx, dir, []string{"no-such-command-xyz"}, nil, 0); err == nil || code != -1 {
		t.Errorf("missing command: %d %v", code, err)
	}
}

func TestRunCommandKillsProcessGroupOnCancel(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	var code int
	start := time.Now()
	go func() {
		defer close(done)
		// The grandchild keeps stdout open: without a group kill the run
		// would wait for it.
		_, code, err = repo.RunCommand(ctx, dir, []string{"sh", "-c", "sleep 30 & echo $! > child.pid; wait"}, nil, 0)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _ := os.ReadFile(pidFile); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(4 * time.Second):
		t.Fatal("RunCommand did not return after cancel")
	}
	if !errors.Is(err, context.Canceled) || code != -1 {
		t.Errorf("cancelled run: code %d err %v", code, err)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	waitGone(t, pidFile)
}

// TestGitStopsItsProcessGroupAtTheDeadline: git runs through proc like
// every subprocess, so the context's deadline stops what git started too
// (here a shell alias's grandchild holding stdout open), and the error
// says the deadline ended it.
func TestGitStopsItsProcessGroupAtTheDeadline(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	g := &repo.Git{Dir: dir, Env: []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1"}}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := g.Run(ctx, "-c", "alias.hang=!sleep 30 & echo $! > child.pid; wait", "hang")
	var ge *repo.Error
	if !errors.As(err, &ge) || !errors.Is(err, context.DeadlineExceeded) || ge.Subcommand != "hang" || ge.ExitCode != -1 {
		t.Fatalf("err = %#v", err)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("git returned %s after its deadline", el)
	}
	waitGone(t, pidFile)
}

// waitGone waits for the process whose pid is in pidFile to end. A killed
// grandchild may linger as a zombie of its dead parent until init reaps
// it; that counts as gone.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("no pid in %s: %q", pidFile, b)
	}
	for i := 0; i < 100; i++ {
		if !proctest.Alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("grandchild %d still alive after its run was stopped", pid)
}
