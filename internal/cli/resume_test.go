package cli

import (
	"os"
	"os/exec"
	"path/filepath"
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
	// A short request back-off: the client's own retries (a change probe,
	// then a whole read, each retried) must not sit the outage out alone.
	code, out := runBin(t, authorEnv(hub), append(prArgs(hub, demo, t.TempDir()), "--forge-backoff", "10ms")...)
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

// TestREL2_KilledMidAgentRunLeavesNothingRunningAfterTheRerun: converge
// is killed (SIGKILL) while its fixer runs, with a child the fixer started
// in the background. Under the supervisor (AG-K1) the child dies with
// converge; reaping at the next claim is the second line: either way,
// nothing of the killed run's fixer outlives the rerun.
func TestREL2_KilledMidAgentRunLeavesNothingRunningAfterTheRerun(t *testing.T) {
	t.Parallel() // its own emulator and state
	k := killMidAgent(t, timeboxHang, "attempts")
	rerun := k.rerun()
	for _, pid := range []int{k.first.pid, k.first.child} {
		if live(pid) {
			t.Errorf("pid %d of the killed run's fixer outlived the rerun:\nkilled run:\n%s\nrerun:\n%s", pid, k.out, rerun)
		}
	}
	if left := groupMembers(k.first.pgid); len(left) > 0 {
		t.Errorf("processes %v of the killed fixer's group outlived the rerun", left)
	}
}

// killedRun is a `converge pr` SIGKILLed while its fixer ran.
type killedRun struct {
	first timeboxAttempt // the fixer's first attempt
	out   string         // what the killed converge printed
	// rerun runs converge again on the same state with a fixer that
	// gives up at once, and returns what it printed.
	rerun func() string
}

// killMidAgent runs `converge pr` on a demo PR of its own with fixer (a
// timebox script, %DIR% its log directory) and SIGKILLs converge once
// the fixer wrote a line to marker in that directory.
func killMidAgent(t *testing.T, fixer, marker string) killedRun {
	t.Helper()
	hub, demo := startHub(t, 100*time.Millisecond)
	r := &timeboxRun{dir: t.TempDir(), prURL: demo.PRURL, hub: hub}
	t.Cleanup(r.killLeftovers)
	agent := filepath.Join(r.dir, "agent.sh")
	giveUp := filepath.Join(r.dir, "give-up.sh")
	for path, script := range map[string]string{
		agent:  strings.ReplaceAll(fixer, "%DIR%", shellQuote(r.dir)),
		giveUp: "#!/bin/sh\ncat >/dev/null\n" + `echo '{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"gave up","files_changed":[],"reason":"gave up at once"}'` + "\n",
	} {
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	args := func(agentCmd string) []string {
		return append(prArgs(hub, demo, state), "--agent", "command", "--agent-cmd", agentCmd,
			"--review-agent", "suggest", "--agent-timeout", "5m", uncontainedForPIDs)
	}

	cmd := exec.Command("converge", args(agent)...)
	cmd.Env = cleanEnv(authorEnv(hub))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(r.dir, marker)); err == nil && strings.Count(string(b), "\n") > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the fixer never wrote %s:\n%s", marker, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return killedRun{first: r.attempts(t)[0], out: out.String(), rerun: func() string {
		_, rerun := runBin(t, authorEnv(hub), args(giveUp)...)
		return rerun
	}}
}
