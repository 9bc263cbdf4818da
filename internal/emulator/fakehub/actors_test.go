package fakehub

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	ghgraphql "github.com/convergeloop/converge/internal/forge/github/graphql"
)

// TestPR_T13_OtherActorsOverTheNormalAPI: what a hostile end-to-end test
// needs other actors to do, each with its own token over the normal API:
// a human requests changes and dismisses it, comments at the top level,
// reopens a thread and force-pushes; the CI runner reports on the head.
func TestPR_T13_OtherActorsOverTheNormalAPI(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	ctx := t.Context()
	tok := h.Tokens()
	rev, author, out, ci := ghClient(t, h, tok.Reviewer), ghClient(t, h, tok.Author), ghClient(t, h, tok.Outsider), ghClient(t, h, tok.CI)
	events, cancel := h.Subscribe()
	defer cancel()

	// A change request, visible on both surfaces, then dismissed.
	rv, _, err := rev.PullRequests.CreateReview(ctx, "acme", "widget", n, &github.PullRequestReviewRequest{
		Event: new("REQUEST_CHANGES"), Body: new("This breaks the greeting."),
		Comments: []*github.DraftReviewComment{{Path: new("main.go"), Line: new(4), Body: new("Why the comma?")}},
	})
	if err != nil || rv.GetState() != "CHANGES_REQUESTED" {
		t.Fatalf("request changes: %v %v", rv, err)
	}
	if got := reviewStates(t, h, n); got != "octo-reviewer:CHANGES_REQUESTED" {
		t.Errorf("GraphQL reviews after the change request: %s", got)
	}
	if _, _, err := out.PullRequests.DismissReview(ctx, "acme", "widget", n, rv.GetID(), github.PullRequestDismissReviewRequest{Message: "no"}); err == nil {
		t.Error("a read-only user dismissed a review")
	}
	d, _, err := rev.PullRequests.DismissReview(ctx, "acme", "widget", n, rv.GetID(), github.PullRequestDismissReviewRequest{Message: "Fixed elsewhere."})
	if err != nil || d.GetState() != "DISMISSED" {
		t.Fatalf("dismiss: %v %v", d, err)
	}
	if got := reviewStates(t, h, n); got != "octo-reviewer:DISMISSED" {
		t.Errorf("GraphQL reviews after the dismissal: %s", got)
	}
	if g, _, err := author.PullRequests.GetReview(ctx, "acme", "widget", n, rv.GetID()); err != nil || g.GetState() != "DISMISSED" {
		t.Errorf("REST review after the dismissal: %v %v", g, err)
	}
	cm, _, err := rev.PullRequests.CreateReview(ctx, "acme", "widget", n, &github.PullRequestReviewRequest{Event: new("COMMENT"), Body: new("fyi")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rev.PullRequests.DismissReview(ctx, "acme", "widget", n, cm.GetID(), github.PullRequestDismissReviewRequest{Message: "x"}); err == nil {
		t.Error("a COMMENTED review was dismissed")
	} else if er, ok := err.(*github.ErrorResponse); !ok || er.Response.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("dismissing a comment: %v", err)
	}
	evs, _, err := author.Issues.ListIssueEvents(ctx, "acme", "widget", n, nil)
	if err != nil || !hasEvent(evs, "review_dismissed") {
		t.Errorf("no review_dismissed event: %v %v", evs, err)
	}

	// A top-level comment shows in the observation's conversation.
	if _, _, err := rev.Issues.CreateComment(ctx, "acme", "widget", n, github.IssueCommentRequest{Body: "Also bump the version."}); err != nil {
		t.Fatal(err)
	}
	r := gql(t, h, tok.Author, ghgraphql.Doc("observe"), map[string]any{"owner": "acme", "name": "widget", "number": n})
	var got struct {
		Repository struct {
			PullRequest struct {
				Comments struct {
					Nodes []struct {
						Author struct{ Login string }
						Body   string
					}
				}
				ReviewThreads struct {
					Nodes []struct {
						ID         string
						IsResolved bool
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	ics := got.Repository.PullRequest.Comments.Nodes
	if len(ics) != 1 || ics[0].Author.Login != LoginReviewer || ics[0].Body != "Also bump the version." {
		t.Errorf("conversation: %+v", ics)
	}

	// The author resolves the thread; the reviewer reopens it.
	th := got.Repository.PullRequest.ReviewThreads.Nodes[0].ID
	vars := map[string]any{"input": map[string]any{"threadId": th}}
	if r := gql(t, h, tok.Author, ghgraphql.Doc("resolve"), vars); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	if r := gql(t, h, tok.Reviewer, ghgraphql.Doc("unresolve"), vars); len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"isResolved":false`) {
		t.Errorf("reviewer unresolve: %s %v", r.Data, r.Errors)
	}
	if st, _ := h.PR("acme", "widget", n); st.ThreadList[0].Resolved {
		t.Error("thread still resolved")
	}

	// The reviewer force-pushes the branch back to its base.
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	mustGit(t, h, tok.Reviewer, dir, "clone", "--quiet", "--branch", "feature/greet", h.GitURL("acme", "widget"), work)
	mustGit(t, h, tok.Reviewer, work, "reset", "--quiet", "--hard", "origin/main")
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, h, tok.Reviewer, work, "commit", "--quiet", "-am", "Rewrite")
	sha := mustGit(t, h, tok.Reviewer, work, "rev-parse", "HEAD")
	mustGit(t, h, tok.Reviewer, work, "push", "--quiet", "--force", "origin", "feature/greet")
	waitFor(t, events, 5*time.Second, func(ev Event) bool { return ev.Kind == "push" && ev.SHA == sha })
	if got := headRefOid(t, h, n); got != sha {
		t.Errorf("head %s after the force-push, want %s", got, sha)
	}
	evs, _, _ = author.Issues.ListIssueEvents(ctx, "acme", "widget", n, nil)
	if !hasEvent(evs, "head_ref_force_pushed") {
		t.Errorf("no head_ref_force_pushed event: %v", evs)
	}

	// The CI runner reports on the new head: a check run and a status.
	cr, _, err := ci.Checks.CreateCheckRun(ctx, "acme", "widget", github.CreateCheckRunOptions{Name: "ci/test", HeadSHA: sha, Status: new("completed"), Conclusion: new("success")})
	if err != nil || cr.GetConclusion() != "success" {
		t.Fatalf("check run: %v %v", cr, err)
	}
	if _, _, err := ci.Repositories.CreateStatus(ctx, "acme", "widget", sha, github.RepoStatus{State: new("failure"), Context: new("ci/lint")}); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.PR("acme", "widget", n); st.Rollup != "FAILURE" {
		t.Errorf("rollup %q after a failing status, want FAILURE", st.Rollup)
	}
	if _, _, err := ci.Repositories.CreateStatus(ctx, "acme", "widget", sha, github.RepoStatus{State: new("success"), Context: new("ci/lint")}); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.PR("acme", "widget", n); st.Rollup != "SUCCESS" {
		t.Errorf("rollup %q after the status went green, want SUCCESS", st.Rollup)
	}
}

// reviewStates lists author:state of every review over GraphQL.
func reviewStates(t *testing.T, h *Hub, n int) string {
	t.Helper()
	r := gql(t, h, h.Tokens().Author, `query($n: Int!) { repository(owner: "acme", name: "widget") { pullRequest(number: $n) { reviews(last: 100) { nodes { author { login } state } } } } }`, map[string]any{"n": n})
	var got struct {
		Repository struct {
			PullRequest struct {
				Reviews struct {
					Nodes []struct {
						Author struct{ Login string }
						State  string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	var out []string
	for _, rv := range got.Repository.PullRequest.Reviews.Nodes {
		out = append(out, rv.Author.Login+":"+rv.State)
	}
	return strings.Join(out, " ")
}

func hasEvent(evs []*github.IssueEvent, name string) bool {
	for _, e := range evs {
		if e.GetEvent() == name {
			return true
		}
	}
	return false
}
