package prwork_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

const (
	humanReview  = "# Review instructions\n\nFlag unchecked errors.\n"
	humanCopilot = "Prefer table tests.\n"
)

// memoryPR is acme/calc with a PR whose branch holds both instruction
// files, written by humans.
func memoryPR(t *testing.T) (*fakehub.Hub, int, forge.PRRef) {
	t.Helper()
	hub := hubtest.Start(t, 0)
	if err := hub.CreateRepo("acme", "calc", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": calcGo, "calc_test.go": calcTest}, fakehub.RepoOptions{TestCommand: []string{"go", "test", "./..."}}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "calc", fakehub.NewPR{Head: "feature/half", Title: "Half", Files: map[string]string{
		"calc.go":                         calcGo + "\n// Third thirds n.\nfunc Third(n int) int { return n / 3 }\n",
		".github/review-instructions.md":  humanReview,
		".github/copilot-instructions.md": humanCopilot,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(hub.PRURL("acme", "calc", n))
	if err != nil {
		t.Fatal(err)
	}
	return hub, n, ref
}

// atForge reads path at the PR's head from a fresh clone: what anyone
// fetching the branch sees.
func atForge(t *testing.T, hub *fakehub.Hub, n int, path string) string {
	t.Helper()
	ctx := context.Background()
	st, err := hub.PR("acme", "calc", n)
	if err != nil {
		t.Fatal(err)
	}
	g, err := repo.Clone(ctx, hub.GitURL("acme", "calc"), t.TempDir(), append(os.Environ(), hub.GitEnv(hub.Tokens().Reviewer)...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, "fetch", "origin", "+refs/heads/*:refs/remotes/origin/*"); err != nil {
		t.Fatal(err)
	}
	out, err := g.Run(ctx, "show", st.HeadSHA+":"+path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPR_S4_ReviewMemoryRidesOnTheRoundsCommit: with review_memory the
// settled section goes into the review instructions and, the same
// section, into Copilot's, in the round's own commit beside the fix; the
// humans' text stays; its lines are not the loop's diff growth (PR-T6)
// nor hunks a later round compares with (PR-S8). A round that commits no
// fix commits no section either: it never makes a commit of its own.
func TestPR_S4_ReviewMemoryRidesOnTheRoundsCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub, n, ref := memoryPR(t)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	ws := calcWorkspace(hub, tok, t.TempDir(), "r-mem")
	if _, err := ws.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	mem := &prloop.ReviewMemory{Entries: []prloop.MemoryEntry{{ID: "T1", URL: "https://example.com/pull/1#discussion_r1", Path: "calc.go", Start: 5, End: 5,
		Point: "Double should saturate", Decision: prloop.DispDeferred, Why: "it conflicts with T2 on the same lines"}}}

	// A round whose only fix turns the tests red commits nothing.
	ws.SetReviewMemory(mem)
	red := prloop.Finding{ID: "T-red", ThreadID: "T-red", Path: "calc.go", StartLine: 5, EndLine: 5, Summary: suggestion("\treturn n * 3")}
	res, err := ws.Fix(ctx, pr, 1, []prloop.Finding{red})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := hub.PR("acme", "calc", n); res.CommitSHA != "" || st.HeadSHA != pr.HeadSHA {
		t.Fatalf("a round with no fix committed %q (head %s)", res.CommitSHA, st.HeadSHA)
	}

	// A round with a fix carries the section.
	ws.SetReviewMemory(mem)
	green := prloop.Finding{ID: "T-green", ThreadID: "T-green", Path: "calc.go", StartLine: 8, EndLine: 8, Summary: suggestion("// Half halves n, rounding toward zero.")}
	if res, err = ws.Fix(ctx, pr, 2, []prloop.Finding{green}); err != nil {
		t.Fatal(err)
	}
	if res.CommitSHA == "" || res.LinesChanged != 2 {
		t.Fatalf("commit %q, %d lines: want the fix's 2, the section not counted", res.CommitSHA, res.LinesChanged)
	}
	for _, h := range res.Hunks {
		if strings.HasPrefix(h.Path, ".github/") {
			t.Fatalf("the section's hunks are kept: %+v", res.Hunks)
		}
	}
	entry := "- `calc.go` line 5: Double should saturate — deferred: it conflicts with T2 on the same lines ([thread](https://example.com/pull/1#discussion_r1)) <!-- converge:settled id=T1 -->"
	review := atForge(t, hub, n, prwork.ReviewInstructionsFile)
	copilot := atForge(t, hub, n, prwork.CopilotInstructionsFile)
	if !strings.HasPrefix(review, humanReview) || !strings.HasPrefix(copilot, humanCopilot) {
		t.Fatalf("the humans' text is not kept:\n%s\n---\n%s", review, copilot)
	}
	if !strings.Contains(review, entry) || review[len(humanReview):] != copilot[len(humanCopilot):] {
		t.Fatalf("not the same section in both:\n%s\n---\n%s", review, copilot)
	}
	st, _ := hub.PR("acme", "calc", n)
	if st.HeadSHA != res.CommitSHA {
		t.Fatalf("head %s, want the round's commit %s", st.HeadSHA, res.CommitSHA)
	}
	// Without memory the next fix leaves the section as it is.
	pr, err = client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReviewMemory(nil)
	third := prloop.Finding{ID: "T-3", ThreadID: "T-3", Path: "calc.go", StartLine: 3, EndLine: 3, Summary: suggestion("// Double doubles n; it may overflow.")}
	if res, err = ws.Fix(ctx, pr, 3, []prloop.Finding{third}); err != nil || res.CommitSHA == "" {
		t.Fatalf("fix: %v %+v", err, res)
	}
	if got := atForge(t, hub, n, prwork.ReviewInstructionsFile); got != review {
		t.Fatalf("changed without memory:\n%s", got)
	}
}
