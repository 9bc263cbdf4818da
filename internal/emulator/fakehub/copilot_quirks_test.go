package fakehub

import (
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	reviewsig "github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/review/copilot"
)

// copilotReview requests Copilot on p and waits for its review to land.
func copilotReview(t *testing.T, h *Hub, p *pr, events <-chan Event) ReviewState {
	t.Helper()
	requestCopilot(t, h, p)
	waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
	st, err := h.PR("acme", "widget", p.number)
	if err != nil || len(st.ReviewList) == 0 {
		t.Fatalf("no review: %v", err)
	}
	return st.ReviewList[len(st.ReviewList)-1]
}

// readAsConverge reads a stored Copilot review as converge does.
func readAsConverge(rv ReviewState) reviewsig.Signal {
	s, _ := copilot.New().Read(forge.Review{ID: rv.ID, Author: rv.Author, State: forge.ReviewCommented, CommitSHA: rv.CommitSHA, Body: rv.Body, CommentCount: rv.Comments}, &forge.PullRequest{HeadSHA: rv.CommitSHA})
	return s
}

// TestPR_O3_CopilotCannotReviewAnEmptyDiff: on a PR whose head tree is
// its base tree, or whose changes are all binary, GitHub's Copilot posts
// "Copilot wasn't able to review any files in this pull request." and no
// comment, whatever it would have found: not a clean review, and converge
// reads it as no signal.
func TestPR_O3_CopilotCannotReviewAnEmptyDiff(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	bye := Finding{Path: "main.go", Anchor: "println", Body: "Say goodbye."}
	if err := h.SetCopilotScript("acme", "widget", n, CopilotScript{Rounds: []CopilotRound{{Findings: []Finding{bye}}, {Findings: []Finding{bye}}}}); err != nil {
		t.Fatal(err)
	}
	events, cancel := h.Subscribe()
	defer cancel()

	// The PR's change undone: head tree = base tree.
	if _, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"}, "undo"); err != nil {
		t.Fatal(err)
	}
	rv := copilotReview(t, h, p, events)
	st, _ := h.PR("acme", "widget", n)
	if rv.Body != CopilotNoFilesBody || rv.Comments != 0 || st.Threads != 0 {
		t.Fatalf("empty diff: body %q, %d comments, %d threads; want %q and none", rv.Body, rv.Comments, st.Threads, CopilotNoFilesBody)
	}
	if s := readAsConverge(rv); s != reviewsig.NoSignal {
		t.Fatalf("converge reads the empty-diff review as %s, want no signal", s)
	}

	// Only a binary file changed: nothing Copilot can read.
	if _, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"logo.png": "\x89PNG\r\n\x1a\n\x00\x00\x00binary"}, "logo"); err != nil {
		t.Fatal(err)
	}
	rv = copilotReview(t, h, p, events)
	if rv.Body != CopilotNoFilesBody || rv.Comments != 0 {
		t.Fatalf("binary-only diff: body %q, %d comments", rv.Body, rv.Comments)
	}
	if s := readAsConverge(rv); s != reviewsig.NoSignal {
		t.Fatalf("converge reads the binary-only review as %s, want no signal", s)
	}
}

// TestPR_O3_CopilotReRaisesAnsweredUnfixedFindings: with ReRaise, a
// later review raises again, on the same line with the same text, a
// finding whose code is unchanged — though the loop replied and resolved
// it — and not one whose lines were changed.
func TestPR_O3_CopilotReRaisesAnsweredUnfixedFindings(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	if err := h.SetCopilotScript("acme", "widget", n, CopilotScript{ReRaise: true, Rounds: []CopilotRound{{Findings: []Finding{
		{Path: "main.go", Anchor: `println("hello, world")`, Body: "Greeting is too loud."},
		{Path: "main.go", Anchor: `println("bye")`, Body: "Say goodbye properly."},
	}}}}); err != nil {
		t.Fatal(err)
	}
	events, cancel := h.Subscribe()
	defer cancel()
	first := copilotReview(t, h, p, events)
	if first.Comments != 2 {
		t.Fatalf("first review: %+v", first)
	}
	// The loop answers and resolves both, but fixes only the second
	// (same line count: line numbers stay put).
	h.mu.Lock()
	for _, th := range p.threads {
		th.resolved = true
	}
	h.mu.Unlock()
	if _, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n\tprintln(\"goodbye\")\n}\n"}, "fix bye"); err != nil {
		t.Fatal(err)
	}
	second := copilotReview(t, h, p, events)
	st, _ := h.PR("acme", "widget", n)
	var raised []string
	for _, th := range st.ThreadList {
		if th.ReviewID == second.ID {
			raised = append(raised, th.Path+": "+th.Bodies[0])
		}
	}
	if second.Comments != 1 || strings.Join(raised, "|") != "main.go: Greeting is too loud." || !strings.Contains(second.Body, "generated 1 comment.") {
		t.Fatalf("second review raised %q (%d comments, body %q); want only the unfixed finding again", raised, second.Comments, second.Body)
	}
	h.mu.RLock()
	lines := []int{}
	for _, th := range p.threads {
		if th.path == "main.go" && th.comments[0].body == "Greeting is too loud." {
			lines = append(lines, th.line)
		}
	}
	h.mu.RUnlock()
	if len(lines) != 2 || lines[0] != lines[1] {
		t.Fatalf("the finding was re-raised on lines %v, want the same line twice", lines)
	}

	// Without ReRaise a finding is never raised again unscripted.
	if err := h.SetCopilotScript("acme", "widget", n, CopilotScript{}); err != nil {
		t.Fatal(err)
	}
	if rv := copilotReview(t, h, p, events); rv.Comments != 0 {
		t.Fatalf("without ReRaise: %d comments", rv.Comments)
	}
}
