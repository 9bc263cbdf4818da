package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
)

// secondDemoPR opens another PR on the demo repository, from its own
// branch with the demo's changes and Copilot script.
func secondDemoPR(t *testing.T, hub *fakehub.Hub) string {
	t.Helper()
	n, err := hub.CreatePR(fakehub.DemoOwner, fakehub.DemoRepo, fakehub.NewPR{
		Head: "summary-stats-2", Title: "Add summary statistics, again", Author: fakehub.LoginAuthor,
		Files: fakehub.DemoPRFiles(), Message: "Add summary statistics",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.SetCopilotScript(fakehub.DemoOwner, fakehub.DemoRepo, n, fakehub.DemoScript()); err != nil {
		t.Fatal(err)
	}
	return hub.PRURL(fakehub.DemoOwner, fakehub.DemoRepo, n)
}

// closePR closes the PR as its author does, through the REST API.
func closePR(t *testing.T, hub *fakehub.Hub, prURL string) {
	t.Helper()
	ref, err := forge.ParsePRURL(prURL)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = restAs(t, hub, hub.Tokens().Author).PullRequests.Edit(context.Background(), ref.Owner, ref.Repo, ref.Number, &github.PullRequest{State: new("closed")})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEngine_ManyPRsInOneProcess: one `converge pr` with two PRs of one
// repository runs both loops at once on one store, one forge client and
// one shared clone; both end two-stable, proven at the forge, and every
// line names its PR.
func TestEngine_ManyPRsInOneProcess(t *testing.T) {
	t.Parallel() // its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	second := secondDemoPR(t, hub)
	args := append(prArgs(hub, demo, t.TempDir()), second)
	code, out := runBin(t, authorEnv(hub), args...)
	if code != exitcode.OK {
		t.Fatalf("want both PRs two-stable (exit 0), got %d:\n%s", code, out)
	}
	for _, u := range []string{demo.PRURL, second} {
		assertProven(t, observe(t, hub, u), false, out)
		if !strings.Contains(out, u+"  round 1  fix") {
			t.Errorf("no progress line names %s:\n%s", u, out)
		}
	}
	if got := strings.Count(out, "converge: two-stable (exit 0)"); got != 2 {
		t.Fatalf("want two terminals, got %d:\n%s", got, out)
	}
	// At once, not one after the other: both were fixing before either
	// ended.
	first := strings.Index(out, "converge: two-stable")
	for _, u := range []string{demo.PRURL, second} {
		if i := strings.Index(out, u+"  round 1  fix"); i < 0 || i > first {
			t.Fatalf("%s started fixing only after a loop ended:\n%s", u, out)
		}
	}
}

// TestEngine_ManyPRsExitCodeIsTheFirstFailure: a PR that cannot converge
// (closed) beside one that can: the other still converges, and the exit
// code is the closed PR's.
func TestEngine_ManyPRsExitCodeIsTheFirstFailure(t *testing.T) {
	t.Parallel()
	hub, demo := startHub(t, 100*time.Millisecond)
	second := secondDemoPR(t, hub)
	closePR(t, hub, second)
	args := append(prArgs(hub, demo, t.TempDir()), second)
	code, out := runBin(t, authorEnv(hub), args...)
	if code != exitcode.ForReason("pr-closed") {
		t.Fatalf("want the closed PR's exit %d, got %d:\n%s", exitcode.ForReason("pr-closed"), code, out)
	}
	assertProven(t, observe(t, hub, demo.PRURL), false, out)
}
