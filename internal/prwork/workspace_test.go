package prwork_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent/suggest"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

const calcGo = `package calc

// Double doubles n.
func Double(n int) int {
	return n * 2
}

// Half halves n.
func Half(n int) int {
	return n / 2
}
`

const calcTest = `package calc

import "testing"

func TestDouble(t *testing.T) {
	if Double(2) != 4 {
		t.Fatal("Double(2) != 4")
	}
}
`

func suggestion(s string) string { return "Please change this.\n\n```suggestion\n" + s + "\n```\n" }

// TestPR_S10_RedBuildIsNeverPushed: of two suggested fixes, the one that
// turns the repository's tests red is blocked; the green one is committed
// with the round trailer and pushed to the PR's head branch (PR-S11).
func TestPR_S10_RedBuildIsNeverPushed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub, n, ref := calcPR(t)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	ws := calcWorkspace(hub, tok, t.TempDir(), "r-ws")
	if _, err := ws.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	findings := []prloop.Finding{
		// Breaks TestDouble: must not be pushed.
		{ID: "T-red", ThreadID: "T-red", Path: "calc.go", StartLine: 5, EndLine: 5, Summary: suggestion("\treturn n * 3")},
		// Harmless and green.
		{ID: "T-green", ThreadID: "T-green", Path: "calc.go", StartLine: 8, EndLine: 8, Summary: suggestion("// Half halves n, rounding toward zero.")},
	}
	res, err := ws.Fix(ctx, pr, 1, findings)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 1 || res.Addressed[0] != "T-green" {
		t.Fatalf("addressed %v, want only T-green", res.Addressed)
	}
	if len(res.Blocked) != 1 || res.Blocked[0].ID != "T-red" || !strings.Contains(res.Blocked[0].Reason, "tests fail") {
		t.Fatalf("blocked %+v, want T-red blocked by failing tests", res.Blocked)
	}
	if res.CommitSHA == "" || res.LinesChanged != 2 {
		t.Fatalf("commit %q lines %d, want a pushed commit changing 2 lines", res.CommitSHA, res.LinesChanged)
	}
	st, _ := hub.PR("acme", "calc", n)
	if st.HeadSHA != res.CommitSHA {
		t.Fatalf("PR head %s, want the pushed fix %s", st.HeadSHA, res.CommitSHA)
	}
	after, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	last := after.Commits[len(after.Commits)-1]
	if !repo.HasTrailer(last.Message, prloop.CommitTrailer) || !strings.Contains(last.Message, "Converge-Round: 1") {
		t.Errorf("the loop's commit lacks its trailer:\n%s", last.Message)
	}
	if conclusion, err := hub.WaitCI(ctx, "acme", "calc", res.CommitSHA); err != nil || conclusion != "success" {
		t.Errorf("CI on the pushed fix: %q %v", conclusion, err)
	}
}

// calcPR is the emulator with acme/calc (Double and Half, tested by `go
// test ./...` as CI) and a PR that adds Third.
// calcWorkspace is a workspace on the emulator's acme/calc as tok's user:
// the suggest agent, a minute's budget, converge as the committer.
func calcWorkspace(hub *fakehub.Hub, tok, root, runID string) *prwork.GitWorkspace {
	return &prwork.GitWorkspace{
		Checkout: prwork.Checkout{
			Root:     root,
			RunID:    runID,
			CloneURL: hub.GitURL("acme", "calc"),
			GitEnv:   repo.AuthEnvFor(hub.GitURL("acme", "calc"), tok, hub.CAFile()),
		},
		Agent:  suggest.New(),
		Budget: time.Minute,
		Author: "converge",
		Email:  "converge@example.com",
	}
}

func calcPR(t *testing.T) (*fakehub.Hub, int, forge.PRRef) {
	t.Helper()
	hub := hubtest.Start(t, 0)
	if err := hub.CreateRepo("acme", "calc", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": calcGo, "calc_test.go": calcTest}, fakehub.RepoOptions{TestCommand: []string{"go", "test", "./..."}}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "calc", fakehub.NewPR{Head: "feature/half", Title: "Half", Files: map[string]string{"calc.go": calcGo + "\n// Third thirds n.\nfunc Third(n int) int { return n / 3 }\n"}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(hub.PRURL("acme", "calc", n))
	if err != nil {
		t.Fatal(err)
	}
	return hub, n, ref
}

// TestPR_O1_OneFetchPerObservation: the steps that work on one
// observation share its fetch (Prepare, then a fix of the same
// observation, which here pushes nothing), and a new observation fetches
// again, so a human's push since is what the next fix starts from.
func TestPR_O1_OneFetchPerObservation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub, n, ref := calcPR(t)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	ws := calcWorkspace(hub, tok, t.TempDir(), "r-fetch")
	gitRequests := func() int { return hub.RequestCount().Git }
	before := gitRequests()
	if _, err := ws.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if gitRequests() == before {
		t.Fatal("Prepare fetched nothing from the forge")
	}
	// A finding the suggestion agent has nothing to apply to: no push.
	unfixable := []prloop.Finding{{ID: "T-x", ThreadID: "T-x", Path: "calc.go", StartLine: 5, EndLine: 5, Summary: "Consider a better name."}}
	before = gitRequests()
	res, err := ws.Fix(ctx, pr, 1, unfixable)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommitSHA != "" {
		t.Fatalf("the fix pushed %s; the test needs one that pushes nothing", res.CommitSHA)
	}
	if got := gitRequests() - before; got != 0 {
		t.Errorf("a fix of the observation Prepare fetched for made %d git request(s), want none", got)
	}
	if err := ws.ReleaseWorktree(ctx); err != nil {
		t.Fatal(err)
	}

	human, err := hub.PushFiles("acme", "calc", "feature/half", map[string]string{"NOTES.md": "a human's note\n"}, "docs: a note")
	if err != nil {
		t.Fatal(err)
	}
	pr2, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if pr2.HeadSHA != human {
		t.Fatalf("observed head %s, want the human's %s", pr2.HeadSHA, human)
	}
	before = gitRequests()
	green := []prloop.Finding{{ID: "T-green", ThreadID: "T-green", Path: "calc.go", StartLine: 8, EndLine: 8, Summary: suggestion("// Half halves n, rounding toward zero.")}}
	res, err = ws.Fix(ctx, pr2, 2, green)
	if err != nil {
		t.Fatal(err)
	}
	if gitRequests() == before || res.CommitSHA == "" {
		t.Fatalf("the fix of a new observation: %d git requests, commit %q", gitRequests()-before, res.CommitSHA)
	}
	st, _ := hub.PR("acme", "calc", n)
	if st.HeadSHA != res.CommitSHA {
		t.Fatalf("PR head %s, want the pushed fix %s", st.HeadSHA, res.CommitSHA)
	}
	g := &repo.Git{Dir: t.TempDir(), Env: append(os.Environ(), hub.GitEnv(tok)...)}
	if _, err := g.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, "fetch", "-q", hub.GitURL("acme", "calc"), res.CommitSHA); err != nil {
		t.Fatal(err)
	}
	if parent, err := g.Run(ctx, "rev-parse", res.CommitSHA+"^"); err != nil || strings.TrimSpace(parent) != human {
		t.Fatalf("the fix's parent is %q (%v), want the human's push %s", parent, err, human)
	}
}
