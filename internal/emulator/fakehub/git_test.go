package fakehub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func headRefOid(t *testing.T, h *Hub, n int) string {
	t.Helper()
	r := gql(t, h, h.Tokens().Author, `query($n: Int!) { repository(owner: "acme", name: "widget") { pullRequest(number: $n) { headRefOid } } }`, map[string]any{"n": n})
	var got struct {
		Repository struct{ PullRequest struct{ HeadRefOid string } }
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	return got.Repository.PullRequest.HeadRefOid
}

func TestGit_CloneFetchPushOverSmartHTTP(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	tok := h.Tokens()
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	mustGit(t, h, tok.Author, dir, "clone", "--quiet", h.GitURL("acme", "widget"), work)
	mustGit(t, h, tok.Author, work, "checkout", "--quiet", "feature/greet")
	if err := os.WriteFile(filepath.Join(work, "NEW.md"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, h, tok.Author, work, "add", "NEW.md")
	mustGit(t, h, tok.Author, work, "commit", "--quiet", "-m", "Add NEW")
	sha := mustGit(t, h, tok.Author, work, "rev-parse", "HEAD")
	events, cancel := h.Subscribe()
	defer cancel()
	mustGit(t, h, tok.Author, work, "push", "--quiet", "origin", "feature/greet")
	waitFor(t, events, 5*time.Second, func(ev Event) bool { return ev.Kind == "push" && ev.SHA == sha && ev.Actor == LoginAuthor })
	if got := headRefOid(t, h, n); got != sha {
		t.Errorf("headRefOid %s after push, want %s", got, sha)
	}

	// The outsider can read but not push.
	out := filepath.Join(dir, "o")
	mustGit(t, h, tok.Outsider, dir, "clone", "--quiet", h.GitURL("acme", "widget"), out)
	mustGit(t, h, tok.Outsider, out, "commit", "--quiet", "--allow-empty", "-m", "sneaky")
	if msg, err := gitCmd(t, h, tok.Outsider, out, "push", "origin", "HEAD:feature/greet"); err == nil || !strings.Contains(msg, "403") {
		t.Errorf("outsider push: err=%v\n%s", err, msg)
	}
	if got := headRefOid(t, h, n); got != sha {
		t.Errorf("outsider moved the head to %s", got)
	}

	// Unknown and missing tokens are refused.
	if msg, err := gitCmd(t, h, "ghp_unknown", dir, "ls-remote", h.GitURL("acme", "widget")); err == nil {
		t.Errorf("unknown token: ls-remote worked\n%s", msg)
	}
	if msg, err := gitCmd(t, h, "", dir, "ls-remote", h.GitURL("acme", "widget")); err == nil || !strings.Contains(msg, "401") && !strings.Contains(msg, "Authentication") && !strings.Contains(msg, "could not read") {
		t.Errorf("no token: err=%v\n%s", err, msg)
	}

	// Basic auth (token as password) works too, as credential helpers send it.
	if _, err := gitCmd(t, h, "", dir, "-c", "http.extraHeader=Authorization: Basic "+basic("x", tok.Reviewer), "ls-remote", h.GitURL("acme", "widget")); err != nil {
		t.Errorf("basic auth: %v", err)
	}
}

func basic(u, p string) string {
	return b64(u + ":" + p)
}

// TestPR_O4_ThreadsOutdatedIsNotResolved moves a thread's lines and then
// changes them: first the line maps through the diff, then the thread is
// outdated yet still unresolved.
func TestPR_O4_ThreadsOutdatedIsNotResolved(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	// main.go on the head: line 4 is `println("hello, world")`, line 5 `println("bye")`.
	if _, err := h.createReview(t.Context(), h.userByLogin(LoginReviewer), p, "COMMENT", "", "", []NewComment{
		{Path: "main.go", Line: 5, Body: "bye?"},
		{Path: "main.go", StartLine: 3, Line: 4, Body: "range"},
		{Path: "lib.go", Line: 5, Body: "sum"},
	}); err != nil {
		t.Fatal(err)
	}
	type th struct {
		Path                          string
		Line, StartLine, OriginalLine *int
		IsOutdated, IsResolved        bool
	}
	threads := func() []th {
		r := gql(t, h, h.Tokens().Author, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { reviewThreads(first: 10) { nodes { path line startLine originalLine isOutdated isResolved } } } } }`, nil)
		var got struct {
			Repository struct {
				PullRequest struct{ ReviewThreads struct{ Nodes []th } }
			}
		}
		if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
			t.Fatal(err, r.Errors)
		}
		return got.Repository.PullRequest.ReviewThreads.Nodes
	}
	// Two lines inserted above: every main.go thread shifts by two.
	if _, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{
		"main.go": "package main\n\n// main greets.\n// It prints.\nfunc main() {\n\tprintln(\"hello, world\")\n\tprintln(\"bye\")\n}\n",
	}, "Doc"); err != nil {
		t.Fatal(err)
	}
	ts := threads()
	if *ts[0].Line != 7 || ts[0].IsOutdated || *ts[0].OriginalLine != 5 {
		t.Errorf("shifted single line: %+v", ts[0])
	}
	if *ts[1].Line != 6 || *ts[1].StartLine != 5 || ts[1].IsOutdated {
		t.Errorf("shifted range: %+v", ts[1])
	}
	if *ts[2].Line != 5 || ts[2].IsOutdated {
		t.Errorf("untouched file: %+v", ts[2])
	}
	// Changing the commented line makes its thread outdated, not resolved.
	if _, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{
		"main.go": "package main\n\n// main greets.\n// It prints.\nfunc main() {\n\tprintln(\"hello, world\")\n\tprintln(\"goodbye\")\n}\n",
	}, "Bye"); err != nil {
		t.Fatal(err)
	}
	ts = threads()
	if !ts[0].IsOutdated || ts[0].IsResolved || ts[0].Line != nil || *ts[0].OriginalLine != 5 {
		t.Errorf("changed line: %+v", ts[0])
	}
	if ts[1].IsOutdated || *ts[1].Line != 6 {
		t.Errorf("range above the change: %+v", ts[1])
	}
}

// TestMergeStateFromGit checks CLEAN, BEHIND and DIRTY from real git; a
// branch that lacks base commits is BEHIND only under the protection rule
// requiring branches to be up to date, as on GitHub.
func TestMergeStateFromGit(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	state := func() (string, string) {
		r := gql(t, h, h.Tokens().Author, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { mergeable mergeStateStatus } } }`, nil)
		var got struct {
			Repository struct {
				PullRequest struct{ Mergeable, MergeStateStatus string }
			}
		}
		if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
			t.Fatal(err, r.Errors)
		}
		return got.Repository.PullRequest.Mergeable, got.Repository.PullRequest.MergeStateStatus
	}
	// Each change's mergeability is computed by GitHub's background job
	// first (TestREL_4_MergeabilityIsComputedLazily).
	mergeabilitySettles(h)
	if m, s := state(); m != "MERGEABLE" || s != "CLEAN" {
		t.Errorf("fresh: %s %s", m, s)
	}
	if _, err := h.PushFiles("acme", "widget", "main", map[string]string{"README.md": "changed\n"}, "Readme"); err != nil {
		t.Fatal(err)
	}
	mergeabilitySettles(h)
	if m, s := state(); m != "MERGEABLE" || s != "CLEAN" {
		t.Errorf("behind, no protection rule: %s %s", m, s)
	}
	if err := h.SetRequireUpToDate("acme", "widget", true); err != nil {
		t.Fatal(err)
	}
	if m, s := state(); m != "MERGEABLE" || s != "BEHIND" {
		t.Errorf("behind: %s %s", m, s)
	}
	if _, err := h.PushFiles("acme", "widget", "main", map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"}, "Conflict"); err != nil {
		t.Fatal(err)
	}
	mergeabilitySettles(h)
	if m, s := state(); m != "CONFLICTING" || s != "DIRTY" {
		t.Errorf("conflict: %s %s", m, s)
	}
	_ = n
}

// TestGit_LargePushIsChunked pushes more than http.postBuffer, so git sends
// a chunked body without Content-Length through the CGI bridge.
func TestGit_LargePushIsChunked(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	tok := h.Tokens().Author
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	mustGit(t, h, tok, dir, "clone", "--quiet", "--branch", "feature/greet", h.GitURL("acme", "widget"), work)
	b := make([]byte, 1<<20)
	_, _ = rand.Read(b)
	if err := os.WriteFile(filepath.Join(work, "blob.txt"), []byte(hex.EncodeToString(b)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, h, tok, work, "add", "blob.txt")
	mustGit(t, h, tok, work, "commit", "--quiet", "-m", "Big")
	mustGit(t, h, tok, work, "-c", "http.postBuffer=65536", "push", "--quiet", "origin", "feature/greet")
	if got, want := headRefOid(t, h, n), mustGit(t, h, tok, work, "rev-parse", "HEAD"); got != want {
		t.Errorf("head %s, want %s", got, want)
	}
}
