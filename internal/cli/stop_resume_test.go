package cli

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
)

// TestPR_G3_InterruptThenTheSameCommandResumes: SIGTERM (or Ctrl-C's
// SIGINT, the same path) right after round 1's push stops the run cleanly
// (stopped-by-human, exit 3, the fix's replies first); the same command
// then resumes that run with its round count, so with --max-iterations 2
// the demo's third round never starts: cap-exhausted, as after a crash.
func TestPR_G3_InterruptThenTheSameCommandResumes(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	state := t.TempDir()
	args := append(prArgs(hub, demo, state), "--max-iterations", "2")
	stopped := signalAtFirstPush(t, hub, cleanEnv(authorEnv(hub)), args, syscall.SIGTERM)
	if !strings.Contains(stopped, "stopped-by-human") {
		t.Fatalf("SIGINT did not stop the run cleanly:\n%s", stopped)
	}
	code, rerun := runBin(t, authorEnv(hub), args...)
	if !strings.Contains(rerun, "resumed at round 1") {
		t.Fatalf("the same command did not resume the stopped run:\nstopped:\n%s\nrerun:\n%s", stopped, rerun)
	}
	if code != exitcode.Bound || !strings.Contains(rerun, "cap-exhausted") {
		t.Fatalf("want cap-exhausted (exit 4) with the round cap counted across the stop, got %d:\nstopped:\n%s\nrerun:\n%s", code, stopped, rerun)
	}
	assertNotReady(t, observe(t, hub, demo.PRURL))
}
