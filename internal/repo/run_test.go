package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestRunCommandKillsProcessGroupOnCancel: cancelling the context stops
// the command and the grandchild it left holding stdout; neither would end
// by itself within the test, so RunCommand returns, and the grandchild is
// gone, only because of the cancel. The waits are backstops, minutes
// away, against a cancel that stops nothing.
func TestRunCommandKillsProcessGroupOnCancel(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var err error
	var code int
	go func() {
		defer close(done)
		// The grandchild keeps stdout open: without a group kill the run
		// would wait for it.
		_, code, err = repo.RunCommand(ctx, dir, []string{"sh", "-c", "sleep 1000 & echo $! > child.pid; wait"}, nil, 0)
	}()
	for {
		if b, _ := os.ReadFile(pidFile); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		select {
		case <-done:
			t.Fatalf("the command ended before its child started: code %d err %v", code, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("RunCommand did not return after cancel")
	}
	if !errors.Is(err, context.Canceled) || code != -1 {
		t.Errorf("cancelled run: code %d err %v", code, err)
	}
	waitGone(t, pidFile)
}

// deadline is a context whose deadline passes when the test calls pass:
// the code under test sees context.DeadlineExceeded, at the moment the
// test chose rather than on the wall clock.
type deadline struct {
	context.Context
	done chan struct{}
}

func newDeadline() *deadline {
	return &deadline{Context: context.Background(), done: make(chan struct{})}
}

func (d *deadline) pass()                 { close(d.done) }
func (d *deadline) Done() <-chan struct{} { return d.done }
func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestGitStopsItsProcessGroupAtTheDeadline: git runs through proc like
// every subprocess, so the context's deadline stops what git started too
// (here a shell alias's grandchild holding stdout open), and the error
// says the deadline ended it. The deadline passes once the grandchild
// runs; it would outlive the test, so git returns, and it is gone, only
// because of the deadline.
func TestGitStopsItsProcessGroupAtTheDeadline(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	g := &repo.Git{Dir: dir, Env: []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1"}}
	ctx := newDeadline()
	done := make(chan error, 1)
	go func() {
		_, err := g.Run(ctx, "-c", "alias.hang=!sleep 1000 & echo $! > child.pid; wait", "hang")
		done <- err
	}()
	for {
		if b, _ := os.ReadFile(pidFile); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("git ended before its alias's child started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	ctx.pass()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("git did not return after its deadline")
	}
	var ge *repo.Error
	if !errors.As(err, &ge) || !errors.Is(err, context.DeadlineExceeded) || ge.Subcommand != "hang" || ge.ExitCode != -1 {
		t.Fatalf("err = %#v", err)
	}
	waitGone(t, pidFile)
}

// waitGone waits for the process whose pid is in pidFile to end. A killed
// grandchild may linger as a zombie of its dead parent until init reaps
// it; that counts as gone. The wait is bounded by a minute, a backstop
// against a kill that never came (the grandchildren here would live on).
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("no pid in %s: %q", pidFile, b)
	}
	if !proctest.WaitGone(pid, time.Minute) {
		t.Errorf("grandchild %d still alive after its run was stopped", pid)
	}
}
