package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
)

// TestPR_T14_OneDriverPerPRAcrossStateStores: a laptop (the author's
// token, its own state store) drives the demo PR; a second converge with
// another store and another identity (the reviewer's: the Action, say)
// reads the first one's lease on the head and refuses with one line
// naming the run and --take-over, writing nothing. With --take-over it
// drives the PR to its end, and the first run yields: it ends taken-over
// (exit 3) and writes nothing after the take-over's first write, read at
// the emulator by identity.
func TestPR_T14_OneDriverPerPRAcrossStateStores(t *testing.T) {
	t.Parallel()                            // each test has its own emulator and state
	hub, demo := startHub(t, 2*time.Second) // Copilot slow: the laptop is mostly waiting
	buildConverge(t)
	laptop := exec.Command("converge", prArgs(hub, demo, t.TempDir())...)
	laptop.Env = cleanEnv(authorEnv(hub))
	var lout syncBuffer
	laptop.Stdout, laptop.Stderr = &lout, &lout
	if err := laptop.Start(); err != nil {
		t.Fatal(err)
	}
	ldone := make(chan error, 1)
	go func() { ldone <- laptop.Wait() }()
	defer func() { _ = laptop.Process.Kill() }()
	events, cancel := hub.Subscribe()
	defer cancel()
	deadline := time.After(2 * time.Minute)
	for !leaseOnHead(t, hub, demo) {
		select {
		case <-events:
		case <-time.After(200 * time.Millisecond):
		case err := <-ldone:
			t.Fatalf("the laptop's run ended (%v) before it held the PR:\n%s", err, lout.String())
		case <-deadline:
			t.Fatalf("no lease on the head:\n%s", lout.String())
		}
	}
	reviewerEnv := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Reviewer}
	before := writesBy(hub, fakehub.LoginReviewer)
	code, out := runBin(t, reviewerEnv, prArgs(hub, demo, t.TempDir())...)
	if code != exitcode.Usage || !strings.Contains(out, "is driven by converge run") || !strings.Contains(out, "--take-over") {
		t.Fatalf("a second driver: exit %d, want 2 naming the holder and --take-over:\n%s", code, out)
	}
	if n := writesBy(hub, fakehub.LoginReviewer); n != before {
		t.Fatalf("the refused driver wrote %d time(s) at the forge", n-before)
	}

	code, out = runBin(t, reviewerEnv, append(prArgs(hub, demo, t.TempDir()), "--take-over")...)
	if code != exitcode.OK {
		t.Fatalf("the take-over: exit %d, want two-stable:\n%s\nlaptop:\n%s", code, out, lout.String())
	}
	select {
	case <-ldone:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the laptop's run did not yield:\n%s", lout.String())
	}
	if c := exitcode.Code(laptop.ProcessState.ExitCode()); c != exitcode.Human || !strings.Contains(lout.String(), "taken-over") {
		t.Fatalf("the laptop: exit %d, want taken-over (3):\n%s", c, lout.String())
	}
	// Who drove: once the take-over pushed, the laptop wrote nothing. (A
	// lease is on the head commit: a laptop mid-round when the take-over
	// began finishes that step — its push and replies — and may start its
	// next round before its head shows the take-over's lease.)
	ws := hub.Writes()
	first := slices.IndexFunc(ws, func(w fakehub.Write) bool { return w.Actor == fakehub.LoginReviewer && w.Surface == "git" })
	if first < 0 {
		t.Fatal("the take-over pushed nothing")
	}
	if n := laterAuthorWrites(ws[first:]); n > 0 {
		t.Fatalf("the laptop wrote %d time(s) after the take-over's first push: %+v", n, ws[first:])
	}
}

func laterAuthorWrites(ws []fakehub.Write) int {
	n := 0
	for _, w := range ws {
		if w.Actor == fakehub.LoginAuthor {
			n++
		}
	}
	return n
}

func writesBy(hub *fakehub.Hub, login string) int {
	n := 0
	for _, w := range hub.Writes() {
		if w.Actor == login {
			n++
		}
	}
	return n
}

// leaseOnHead reports a pending `converge` status with a lease on the
// demo PR's head.
func leaseOnHead(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo) bool {
	t.Helper()
	st, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := hub.Statuses(demo.Owner, demo.Repo, st.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Context == "converge" && s.State == "pending" && strings.Contains(s.Description, "[lease ") {
			return true
		}
	}
	return false
}
