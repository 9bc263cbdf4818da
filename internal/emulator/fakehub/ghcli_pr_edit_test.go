package fakehub

import (
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// prSnap is what the forge holds of a PR for the gh write commands.
type prSnap struct {
	title, body string
	draft       bool
	labels      []string
	requested   []string
	events      []string
	comments    []string // author: body
}

func snapPR(h *Hub, p *pr) prSnap {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := prSnap{title: p.title, body: p.body, draft: p.draft}
	for _, l := range p.labels {
		s.labels = append(s.labels, l.name)
	}
	for _, u := range p.requested {
		s.requested = append(s.requested, u.login)
	}
	for _, ev := range p.events {
		s.events = append(s.events, ev.event)
	}
	for _, c := range p.issueComments {
		s.comments = append(s.comments, c.author.login+": "+c.body)
	}
	return s
}

// listNumbers is the PR numbers `gh pr list` printed, in order.
func listNumbers(out string) []string {
	var ns []string
	for _, row := range strings.Split(strings.TrimSpace(out), "\n") {
		if n, _, ok := strings.Cut(row, "\t"); ok {
			ns = append(ns, n)
		}
	}
	return ns
}

// TestREL_4_GhPRCommandsAgainstSandbox runs the gh 2.23 commands that
// change a PR's metadata or filter the PR list against the emulator, as
// they work on github.com: each must succeed and its effect must show at
// the forge, and every GraphQL document gh sent must be valid, with its
// variables, against GitHub's public schema.
func TestREL_4_GhPRCommandsAgainstSandbox(t *testing.T) {
	ghPath, err := exec.LookPath("gh")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("gh CLI not on PATH under CI=true: install gh")
		}
		t.Skip("gh CLI not on PATH")
	}
	capture := &gqlCapture{}
	h := newHub(t, Options{Logger: slog.New(capture)})
	seedPR(t, h, RepoOptions{})
	for _, np := range []NewPR{
		{Head: "docs/readme", Title: "Document Add", Body: "Docs.", Draft: true, Files: map[string]string{"README.md": "# widget\n"}},
		{Head: "fix/lib", Title: "Fix Add overflow", Body: "Checks bounds.", Author: LoginReviewer, Files: map[string]string{"lib.go": "package main\n"}},
	} {
		if _, err := h.CreatePR("acme", "widget", np); err != nil {
			t.Fatal(err)
		}
	}
	p1, p2 := h.prForTest(t, "acme", "widget", 1), h.prForTest(t, "acme", "widget", 2)
	tok := h.Tokens()
	// The repository's labels: REST creates a label it does not know, and
	// PR 2 keeps both.
	if st, body := do(t, h, tok.Author, "POST", h.APIURL()+"/repos/acme/widget/issues/2/labels",
		map[string]any{"labels": []string{"bug", "help wanted"}}); st != 200 {
		t.Fatalf("label PR 2: %d %s", st, body)
	}
	gh := ghRunner{t: t, path: ghPath, h: h}
	repo := h.Host() + "/acme/widget"
	// list is the PR numbers gh pr list printed with args, or nil after
	// reporting why it failed.
	list := func(t *testing.T, args ...string) []string {
		t.Helper()
		out, errOut, err := gh.run(t, tok.Author, append([]string{"pr", "list", "-R", repo}, args...)...)
		if err != nil {
			t.Errorf("gh pr list %s: %v\n%s", strings.Join(args, " "), err, errOut)
			return nil
		}
		return listNumbers(out)
	}
	wantList := func(t *testing.T, what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("gh pr list %s: PRs %q, want %q", what, got, want)
		}
	}

	t.Run("pr edit labels", func(t *testing.T) {
		out := gh.ok(t, tok.Author, "pr", "edit", "1", "-R", repo, "--add-label", "bug", "--add-label", "help wanted")
		wantContains(t, "gh pr edit --add-label", out, "/acme/widget/pull/1")
		if s := snapPR(h, p1); !slices.Equal(s.labels, []string{"bug", "help wanted"}) ||
			!slices.Equal(s.events, []string{"labeled", "labeled"}) {
			t.Errorf("after --add-label: labels %q, events %q", s.labels, s.events)
		}
		// A label the repository lacks is refused by gh itself, as on
		// github.com: gh edits only with labels it found.
		if _, errOut, err := gh.run(t, tok.Author, "pr", "edit", "1", "-R", repo, "--add-label", "nonesuch"); err == nil ||
			!strings.Contains(errOut, "'nonesuch' not found") {
			t.Errorf("--add-label of an unknown label: %v %s", err, errOut)
		}
		gh.ok(t, tok.Author, "pr", "edit", "1", "-R", repo, "--remove-label", "bug")
		if s := snapPR(h, p1); !slices.Equal(s.labels, []string{"help wanted"}) || s.events[len(s.events)-1] != "unlabeled" {
			t.Errorf("after --remove-label: labels %q, events %q", s.labels, s.events)
		}
		if s := snapPR(h, p2); !slices.Equal(s.labels, []string{"bug", "help wanted"}) {
			t.Errorf("PR 2's labels changed: %q", s.labels)
		}
	})

	t.Run("pr edit title and body", func(t *testing.T) {
		gh.ok(t, tok.Author, "pr", "edit", "1", "-R", repo, "--title", "Greet warmly", "--body", "Says hello warmly.")
		if s := snapPR(h, p1); s.title != "Greet warmly" || s.body != "Says hello warmly." || !slices.Equal(s.labels, []string{"help wanted"}) {
			t.Errorf("after --title --body: %+v", s)
		}
		out := gh.ok(t, tok.Author, "pr", "view", "1", "-R", repo)
		wantContains(t, "gh pr view after the edit", out, "title:\tGreet warmly", "labels:\thelp wanted", "Says hello warmly.")
	})

	t.Run("pr edit reviewers", func(t *testing.T) {
		gh.ok(t, tok.Author, "pr", "edit", "1", "-R", repo, "--add-reviewer", LoginReviewer)
		if s := snapPR(h, p1); !slices.Equal(s.requested, []string{LoginReviewer}) || s.events[len(s.events)-1] != "review_requested" {
			t.Errorf("after --add-reviewer: requested %q, events %q", s.requested, s.events)
		}
		out := gh.ok(t, tok.Author, "pr", "view", "1", "-R", repo)
		wantContains(t, "gh pr view after --add-reviewer", out, "reviewers:\t"+LoginReviewer+" (Requested)")
		// Asking again changes nothing.
		before := snapPR(h, p1)
		gh.ok(t, tok.Author, "pr", "edit", "1", "-R", repo, "--add-reviewer", LoginReviewer)
		if s := snapPR(h, p1); !slices.Equal(s.requested, before.requested) || len(s.events) != len(before.events) {
			t.Errorf("asking the same reviewer again: requested %q, events %q", s.requested, s.events)
		}
		// The author cannot be asked to review their own PR.
		if _, errOut, err := gh.run(t, tok.Author, "pr", "edit", "1", "-R", repo, "--add-reviewer", LoginAuthor); err == nil ||
			!strings.Contains(errOut, "Review cannot be requested from pull request author") {
			t.Errorf("asking the author: %v %s", err, errOut)
		}
		gh.ok(t, tok.Author, "pr", "edit", "1", "-R", repo, "--remove-reviewer", LoginReviewer)
		if s := snapPR(h, p1); len(s.requested) != 0 || s.events[len(s.events)-1] != "review_request_removed" {
			t.Errorf("after --remove-reviewer: requested %q, events %q", s.requested, s.events)
		}
	})

	t.Run("pr list filters", func(t *testing.T) {
		wantList(t, "(all open)", list(t), "3", "2", "1")
		wantList(t, "--label bug", list(t, "--label", "bug"), "2")
		wantList(t, `--label "help wanted"`, list(t, "--label", "help wanted"), "2", "1")
		wantList(t, "--label bug --label \"help wanted\"", list(t, "--label", "bug", "--label", "help wanted"), "2")
		wantList(t, "--author "+LoginReviewer, list(t, "--author", LoginReviewer), "3")
		wantList(t, "--author @me", list(t, "--author", "@me"), "2", "1")
		wantList(t, "--search warmly", list(t, "--search", "warmly"), "1")
		wantList(t, `--search "Add in:title"`, list(t, "--search", "Add in:title"), "3", "2")
		wantList(t, `--search "-label:bug sort:created-asc"`, list(t, "--search", "-label:bug sort:created-asc"), "1", "3")
		wantList(t, "--draft", list(t, "--draft"), "2")
		wantList(t, "--draft=false", list(t, "--draft=false"), "3", "1")
		// The rows carry the draft flag as on github.com.
		out := gh.ok(t, tok.Author, "pr", "list", "-R", repo, "--draft")
		if !strings.HasPrefix(out, "2\tDocument Add\tdocs/readme\tDRAFT") {
			t.Errorf("gh pr list --draft:\n%s", out)
		}
	})

	t.Run("pr ready", func(t *testing.T) {
		_, errOut, err := gh.run(t, tok.Author, "pr", "ready", "2", "-R", repo)
		if err != nil || !strings.Contains(errOut, `Pull request #2 is marked as "ready for review"`) {
			t.Errorf("gh pr ready: %v %s", err, errOut)
		}
		if s := snapPR(h, p2); s.draft || s.events[len(s.events)-1] != "ready_for_review" {
			t.Errorf("after gh pr ready: draft %v, events %q", s.draft, s.events)
		}
		wantList(t, "--draft after gh pr ready", list(t, "--draft"))
		_, errOut, err = gh.run(t, tok.Author, "pr", "ready", "2", "-R", repo, "--undo")
		if err != nil || !strings.Contains(errOut, `Pull request #2 is converted to "draft"`) {
			t.Errorf("gh pr ready --undo: %v %s", err, errOut)
		}
		if s := snapPR(h, p2); !s.draft || s.events[len(s.events)-1] != "convert_to_draft" {
			t.Errorf("after gh pr ready --undo: draft %v, events %q", s.draft, s.events)
		}
		gh.ok(t, tok.Author, "pr", "ready", "1", "-R", repo, "--undo")
		if s := snapPR(h, p1); !s.draft {
			t.Error("PR 1 is no draft after gh pr ready 1 --undo")
		}
		wantList(t, "--draft after two --undo", list(t, "--draft"), "2", "1")
		// Someone without write access may not change another's PR.
		if _, errOut, err := gh.run(t, tok.Outsider, "pr", "ready", "1", "-R", repo); err == nil ||
			!strings.Contains(errOut, "does not have the correct permissions") {
			t.Errorf("gh pr ready by an outsider: %v %s", err, errOut)
		}
		gh.ok(t, tok.Author, "pr", "ready", "1", "-R", repo)
		if s := snapPR(h, p1); s.draft {
			t.Error("PR 1 is a draft after gh pr ready 1")
		}
	})

	t.Run("pr comment --edit-last", func(t *testing.T) {
		// Nothing to edit yet: gh says so, as on github.com.
		if _, errOut, err := gh.run(t, tok.Author, "pr", "comment", "1", "-R", repo, "--edit-last", "--body", "x"); err == nil ||
			!strings.Contains(errOut, "no comments found for current user") {
			t.Errorf("--edit-last without a comment: %v %s", err, errOut)
		}
		gh.ok(t, tok.Author, "pr", "comment", "1", "-R", repo, "--body", "First thought.")
		gh.ok(t, tok.Reviewer, "pr", "comment", "1", "-R", repo, "--body", "A reply.")
		out := gh.ok(t, tok.Author, "pr", "comment", "1", "-R", repo, "--edit-last", "--body", "Second thought.")
		wantContains(t, "gh pr comment --edit-last", out, "/acme/widget/pull/1#issuecomment-")
		if s := snapPR(h, p1); !slices.Equal(s.comments, []string{LoginAuthor + ": Second thought.", LoginReviewer + ": A reply."}) {
			t.Errorf("comments after --edit-last: %q", s.comments)
		}
		out = gh.ok(t, tok.Author, "pr", "view", "1", "-R", repo, "--comments")
		first, second, _ := strings.Cut(out, "author:\t"+LoginReviewer)
		wantContains(t, "gh pr view --comments, the edited comment", first, "author:\t"+LoginAuthor, "edited:\ttrue", "Second thought.")
		wantContains(t, "gh pr view --comments, the other comment", second, "edited:\tfalse", "A reply.")
	})

	checkGhSent(t, capture, ghPRQueriesFile, 30)
}
