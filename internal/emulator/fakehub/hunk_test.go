package fakehub

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestPR_O1_DiffHunkIsGitHubs: a review comment's diffHunk is GitHub's
// diff_hunk, cut from the real repository's diff of the PR (base...commit,
// three lines of context): the header of the hunk holding the commented
// line, then the hunk's lines up to and including it, on the side the
// comment is on. GraphQL and REST serve the same text, replies share it,
// and a later push does not change it (GitHub fixes it when the comment is
// made). A line outside the diff, which GitHub would refuse, gets the hunk
// widened to hold it.
func TestPR_O1_DiffHunkIsGitHubs(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	var base, head []string
	for i := 1; i <= 30; i++ {
		base = append(base, strconv.Itoa(i))
		switch i {
		case 10:
			head = append(head, "ten")
		case 25: // deleted
		case 20:
			head = append(head, "20", "new")
		default:
			head = append(head, strconv.Itoa(i))
		}
	}
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	if err := h.CreateRepo("acme", "nums", map[string]string{"nums.txt": join(base), "other.txt": "a\nb\nc\n"}, RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := h.CreatePR("acme", "nums", NewPR{Head: "feature/nums", Title: "Renumber", Files: map[string]string{"nums.txt": join(head)}})
	if err != nil {
		t.Fatal(err)
	}
	p := h.prForTest(t, "acme", "nums", n)
	const second = "@@ -18,11 +18,11 @@\n 18\n 19\n 20\n+new\n 21\n 22\n 23\n 24"
	cases := []struct {
		c    NewComment
		want string
	}{
		{NewComment{Path: "nums.txt", Line: 10, Body: "changed line"}, "@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten"},
		{NewComment{Path: "nums.txt", Line: 21, Body: "added line"}, "@@ -18,11 +18,11 @@\n 18\n 19\n 20\n+new"},
		{NewComment{Path: "nums.txt", Line: 25, Body: "context in the second hunk"}, second},
		{NewComment{Path: "nums.txt", Line: 25, Side: "LEFT", Body: "deleted line"}, second + "\n-25"},
		{NewComment{Path: "nums.txt", StartLine: 21, Line: 22, Body: "range"}, "@@ -18,11 +18,11 @@\n 18\n 19\n 20\n+new\n 21"},
		{NewComment{Path: "nums.txt", Line: 2, Body: "outside the diff"}, "@@ -1,30 +1,30 @@\n 1\n 2"},
		{NewComment{Path: "other.txt", Line: 2, Body: "file the PR leaves alone"}, "@@ -1,3 +1,3 @@\n a\n b"},
	}
	var cs []NewComment
	for _, c := range cases {
		cs = append(cs, c.c)
	}
	if _, err := h.createReview(t.Context(), h.userByLogin(LoginReviewer), p, "COMMENT", "", "", cs); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.replyToThreadLocked(h.userByLogin(LoginAuthor), p.threads[0], "Done.")
	h.mu.Unlock()
	// Moving the head does not move a hunk already written.
	if _, err := h.PushFiles("acme", "nums", "feature/nums", map[string]string{"nums.txt": "rewritten\n"}, "Rewrite"); err != nil {
		t.Fatal(err)
	}

	r := gql(t, h, h.Tokens().Author, fmt.Sprintf(`query { repository(owner: "acme", name: "nums") { pullRequest(number: %d) {
		reviewThreads(first: 20) { nodes { comments(first: 5) { nodes { body diffHunk } } } } } } }`, n), nil)
	var got struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
					Nodes []struct {
						Comments struct {
							Nodes []struct{ Body, DiffHunk string }
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	ths := got.Repository.PullRequest.ReviewThreads.Nodes
	if len(ths) != len(cases) {
		t.Fatalf("%d threads, want %d", len(ths), len(cases))
	}
	for i, c := range cases {
		if h := ths[i].Comments.Nodes[0].DiffHunk; h != c.want {
			t.Errorf("%s: diffHunk\n%s\nwant\n%s", c.c.Body, h, c.want)
		}
	}
	if cs := ths[0].Comments.Nodes; len(cs) != 2 || cs[1].DiffHunk != cases[0].want {
		t.Errorf("the reply's hunk: %+v", cs)
	}

	status, body := do(t, h, h.Tokens().Author, "GET", fmt.Sprintf("%s/repos/acme/nums/pulls/%d/comments", h.APIURL(), n), nil)
	var rest []struct {
		Body     string `json:"body"`
		DiffHunk string `json:"diff_hunk"`
	}
	if err := json.Unmarshal(body, &rest); status != 200 || err != nil {
		t.Fatalf("REST comments: %d %v %s", status, err, body)
	}
	for _, rc := range rest {
		for _, c := range cases {
			if rc.Body == c.c.Body && rc.DiffHunk != c.want {
				t.Errorf("REST %s: diff_hunk %q, want %q", c.c.Body, rc.DiffHunk, c.want)
			}
		}
	}
}
