package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
)

// TestPR_G3_RoundCapCountsAcrossACrash: converge is killed (SIGKILL) right
// after round 1's push; the rerun continues the stored run, so with
// --max-iterations 2 the demo's third round never starts: cap-exhausted.
// Started over, the same rerun would have had two fresh rounds.
func TestPR_G3_RoundCapCountsAcrossACrash(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	state := t.TempDir()
	args := append(prArgs(hub, demo, state), "--max-iterations", "2")
	killed := killAtFirstPush(t, hub, cleanEnv(authorEnv(hub)), args)
	code, rerun := runBin(t, authorEnv(hub), args...)
	if !strings.Contains(rerun, "resumed at round 1") {
		t.Fatalf("the rerun did not resume the killed run:\n%s", rerun)
	}
	if code != exitcode.Bound || !strings.Contains(rerun, "cap-exhausted") {
		t.Fatalf("want cap-exhausted (exit 4) with the round cap counted across the crash, got %d:\nkilled:\n%s\nrerun:\n%s", code, killed, rerun)
	}
	assertNotReady(t, observe(t, hub, demo.PRURL))
}

// TestREL1_ForgeOutageDuringAWaitIsRiddenOut: the forge answers 503 to
// every API request for 10 seconds while converge waits for a review; the
// run rides it out and ends two-stable once the forge is back, proven at
// the forge. Copilot's delay only paces the later rounds: the outage
// starts when the first review does, whatever the delay.
func TestREL1_ForgeOutageDuringAWaitIsRiddenOut(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 200*time.Millisecond)
	outageOnReviewStart(hub, 10*time.Second)
	start := time.Now()
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
	if code != 0 {
		t.Fatalf("want two-stable after the outage, got exit %d:\n%s", code, out)
	}
	if time.Since(start) < 10*time.Second || !strings.Contains(out, "transient fault") {
		t.Fatalf("the outage was not exercised (%s):\n%s", time.Since(start), out)
	}
	assertProven(t, observe(t, hub, demo.PRURL), false, "")
}

// TestREL1_PersistingOutageEndsErrored: past the fault budget the run
// ends errored with the cause (exit 7), never a hang.
func TestREL1_PersistingOutageEndsErrored(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 2*time.Second)
	outageOnReviewStart(hub, time.Minute)
	code, out := runBin(t, authorEnv(hub), append(prArgs(hub, demo, t.TempDir()), "--fault-budget", "3s")...)
	if code != exitcode.Unreachable {
		t.Fatalf("want exit 7 once the fault budget is spent, got %d:\n%s", code, out)
	}
	hub.Outage(0)
	assertNotReady(t, observe(t, hub, demo.PRURL))
}
