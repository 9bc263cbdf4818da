package fakehub

import (
	"net/http"
	"strings"
	"testing"
)

// TestHeadBranchDeletedClosesPR: deleting a PR's head branch closes the PR,
// as on GitHub, whether through the REST API or a git push; the other PR
// and the default branch stay.
func TestHeadBranchDeletedClosesPR(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	seedPR(t, h, RepoOptions{})
	if _, err := h.CreatePR("acme", "widget", NewPR{Head: "docs/readme", Title: "Docs", Files: map[string]string{"README.md": "# widget\n"}}); err != nil {
		t.Fatal(err)
	}
	tok := h.Tokens()
	refs := h.APIURL() + "/repos/acme/widget/git/refs/heads/"
	if st, body := do(t, h, tok.Outsider, "DELETE", refs+"docs/readme", nil); st != http.StatusForbidden {
		t.Errorf("an outsider deletes a branch: %d %s", st, body)
	}
	if st, body := do(t, h, tok.Author, "DELETE", refs+"main", nil); st != http.StatusUnprocessableEntity {
		t.Errorf("deleting the default branch: %d %s", st, body)
	}
	if st, body := do(t, h, tok.Author, "DELETE", refs+"docs/readme", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE git/refs/heads/docs/readme: %d %s", st, body)
	}
	if st, _ := do(t, h, tok.Author, "DELETE", refs+"docs/readme", nil); st != http.StatusUnprocessableEntity {
		t.Errorf("deleting it again: %d, want 422", st)
	}
	for n, want := range map[int]string{1: "OPEN", 2: "CLOSED"} {
		if st, err := h.PR("acme", "widget", n); err != nil || st.State != want {
			t.Errorf("PR %d after deleting docs/readme: %+v %v, want %s", n, st, err, want)
		}
	}
	h.mu.RLock()
	var evs []string
	for _, e := range h.repoLocked("acme", "widget").pr(2).events {
		evs = append(evs, e.event+":"+e.actor.login)
	}
	h.mu.RUnlock()
	if got := strings.Join(evs, ","); got != "head_ref_deleted:octo-author,closed:octo-author" {
		t.Errorf("PR 2's events: %s", got)
	}

	// The same through git: push --delete of PR 1's head.
	work := t.TempDir() + "/w"
	mustGit(t, h, tok.Author, t.TempDir(), "clone", "--quiet", h.GitURL("acme", "widget"), work)
	mustGit(t, h, tok.Author, work, "push", "--quiet", "origin", "--delete", "feature/greet")
	if st, err := h.PR("acme", "widget", 1); err != nil || st.State != "CLOSED" {
		t.Errorf("PR 1 after git push --delete of its head: %+v %v, want CLOSED", st, err)
	}
}
