package cli

import (
	"os/exec"
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
	events, cancel := hub.Subscribe()
	defer cancel()
	cmd := exec.Command("converge", args...)
	cmd.Env = cleanEnv(authorEnv(hub))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	for killed := false; !killed; {
		select {
		case e := <-events:
			if e.Kind == "push" {
				_ = cmd.Process.Kill()
				killed = true
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("no push within 60s:\n%s", out.String())
		}
	}
	_ = cmd.Wait()
	code, rerun := runBin(t, authorEnv(hub), args...)
	if !strings.Contains(rerun, "resumed at round 1") {
		t.Fatalf("the rerun did not resume the killed run:\n%s", rerun)
	}
	if code != exitcode.Bound || !strings.Contains(rerun, "cap-exhausted") {
		t.Fatalf("want cap-exhausted (exit 4) with the round cap counted across the crash, got %d:\nkilled:\n%s\nrerun:\n%s", code, out.String(), rerun)
	}
	assertNotReady(t, observeAs(t, hub, demo.PRURL, hub.Tokens().Reviewer))
}

// TestREL1_ForgeOutageDuringAWaitIsRiddenOut: the forge answers 503 to
// every API request for 10 seconds while converge waits for a review; the
// run rides it out and ends two-stable once the forge is back, proven at
// the forge.
func TestREL1_ForgeOutageDuringAWaitIsRiddenOut(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 2*time.Second)
	events, cancel := hub.Subscribe()
	defer cancel()
	go func() {
		for e := range events {
			if e.Kind == "copilot_started" {
				hub.Outage(10 * time.Second)
				return
			}
		}
	}()
	start := time.Now()
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
	if code != 0 {
		t.Fatalf("want two-stable after the outage, got exit %d:\n%s", code, out)
	}
	if time.Since(start) < 10*time.Second || !strings.Contains(out, "forge fault") {
		t.Fatalf("the outage was not exercised (%s):\n%s", time.Since(start), out)
	}
	if why := forgeVerdict(observeAs(t, hub, demo.PRURL, hub.Tokens().Reviewer), false); why != "" {
		t.Fatalf("exit 0 but the forge does not prove it: %s", why)
	}
}

// TestREL1_PersistingOutageEndsErrored: past the fault budget the run
// ends errored with the cause (exit 7), never a hang.
func TestREL1_PersistingOutageEndsErrored(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 2*time.Second)
	events, cancel := hub.Subscribe()
	defer cancel()
	go func() {
		for e := range events {
			if e.Kind == "copilot_started" {
				hub.Outage(time.Minute)
				return
			}
		}
	}()
	code, out := runBin(t, authorEnv(hub), append(prArgs(hub, demo, t.TempDir()), "--fault-budget", "3s")...)
	if code != exitcode.Unreachable {
		t.Fatalf("want exit 7 once the fault budget is spent, got %d:\n%s", code, out)
	}
	hub.Outage(0)
	assertNotReady(t, observeAs(t, hub, demo.PRURL, hub.Tokens().Reviewer))
}
