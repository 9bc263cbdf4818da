package fakehub

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v93/github"
)

func ghClient(t *testing.T, h *Hub, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(github.WithHTTPClient(h.HTTPClient()), github.WithAuthToken(token), github.WithEnterpriseURLs(h.APIURL(), h.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestREST_GoGitHubClient(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h)
	ctx := t.Context()
	tok := h.Tokens()
	rev := ghClient(t, h, tok.Reviewer)
	author := ghClient(t, h, tok.Author)
	ci := ghClient(t, h, tok.CI)

	me, _, err := rev.Users.Get(ctx, "")
	if err != nil || me.GetLogin() != LoginReviewer {
		t.Fatalf("GET /user: %v %v", me, err)
	}
	repo, _, err := author.Repositories.Get(ctx, "acme", "widget")
	if err != nil || repo.GetDefaultBranch() != "main" || repo.GetFullName() != "acme/widget" {
		t.Fatalf("repo: %v %v", repo, err)
	}
	pull, _, err := author.PullRequests.Get(ctx, "acme", "widget", n)
	if err != nil || pull.GetHead().GetRef() != "feature/greet" || pull.GetMergeableState() != "clean" || !pull.GetMergeable() {
		t.Fatalf("pull: %v %v", pull, err)
	}
	head := pull.GetHead().GetSHA()

	// A review with a single-line and a multi-line comment opens two threads.
	rv, _, err := rev.PullRequests.CreateReview(ctx, "acme", "widget", n, &github.PullRequestReviewRequest{
		Event: new("REQUEST_CHANGES"), Body: new("Please fix."),
		Comments: []*github.DraftReviewComment{
			{Path: new("main.go"), Line: new(4), Side: new("RIGHT"), Body: new("Comma?")},
			{Path: new("main.go"), StartLine: new(4), Line: new(5), Side: new("RIGHT"), Body: new("Two lines.")},
		},
	})
	if err != nil || rv.GetState() != "CHANGES_REQUESTED" || rv.GetCommitID() != head || rv.GetUser().GetLogin() != LoginReviewer {
		t.Fatalf("create review: %v %v", rv, err)
	}
	_, _, err = rev.PullRequests.CreateReview(ctx, "acme", "widget", n, &github.PullRequestReviewRequest{
		Event: new("COMMENT"), Comments: []*github.DraftReviewComment{{Path: new("main.go"), Line: new(99), Body: new("x")}},
	})
	if er, ok := err.(*github.ErrorResponse); !ok || er.Response.StatusCode != 422 {
		t.Errorf("comment on a missing line: %v", err)
	}
	cs, _, err := author.PullRequests.ListComments(ctx, "acme", "widget", n, nil)
	if err != nil || len(cs) != 2 || cs[1].GetStartLine() != 4 || cs[1].GetLine() != 5 || cs[0].GetPullRequestReviewID() != rv.GetID() {
		t.Fatalf("list comments: %v %v", cs, err)
	}
	reply, _, err := author.PullRequests.CreateCommentInReplyTo(ctx, "acme", "widget", n, "Done.", cs[0].GetID())
	if err != nil || reply.GetInReplyTo() != cs[0].GetID() || reply.GetUser().GetLogin() != LoginAuthor {
		t.Fatalf("reply: %v %v", reply, err)
	}
	rvs, _, err := author.PullRequests.ListReviews(ctx, "acme", "widget", n, nil)
	if err != nil || len(rvs) != 1 {
		t.Fatalf("list reviews: %v %v", rvs, err)
	}

	// Labels.
	ls, _, err := author.Issues.AddLabelsToIssue(ctx, "acme", "widget", n, []string{"converge:running", "bug"})
	if err != nil || len(ls) != 2 {
		t.Fatalf("add labels: %v %v", ls, err)
	}
	if _, err := author.Issues.RemoveLabelForIssue(ctx, "acme", "widget", n, "bug"); err != nil {
		t.Fatal(err)
	}
	if _, err := author.Issues.RemoveLabelForIssue(ctx, "acme", "widget", n, "bug"); err == nil {
		t.Error("removing a missing label must 404")
	}
	ls, _, err = author.Issues.ListLabelsByIssue(ctx, "acme", "widget", n, nil)
	if err != nil || len(ls) != 1 || ls[0].GetName() != "converge:running" {
		t.Fatalf("labels: %v %v", ls, err)
	}
	if _, _, err := ghClient(t, h, tok.Outsider).Issues.AddLabelsToIssue(ctx, "acme", "widget", n, []string{"x"}); err == nil {
		t.Error("outsider must not label")
	}

	// Issue comments.
	ic, _, err := author.Issues.CreateComment(ctx, "acme", "widget", n, github.IssueCommentRequest{Body: "Summary"})
	if err != nil || ic.GetBody() != "Summary" {
		t.Fatalf("issue comment: %v %v", ic, err)
	}

	// Statuses and check runs both land on the commit.
	st, _, err := author.Repositories.CreateStatus(ctx, "acme", "widget", head, github.RepoStatus{State: new("success"), Context: new("converge")})
	if err != nil || st.GetState() != "success" {
		t.Fatalf("status: %v %v", st, err)
	}
	if _, _, err := author.Repositories.CreateStatus(ctx, "acme", "widget", head, github.RepoStatus{State: new("bogus")}); err == nil {
		t.Error("invalid status state must 422")
	} else if er, ok := err.(*github.ErrorResponse); !ok || er.Response.StatusCode != 422 || len(er.Errors) != 1 {
		t.Errorf("invalid status: %v", err)
	}
	comb, _, err := author.Repositories.GetCombinedStatus(ctx, "acme", "widget", head, nil)
	if err != nil || comb.GetState() != "success" || comb.GetTotalCount() != 1 {
		t.Fatalf("combined: %v %v", comb, err)
	}
	if _, _, err := author.Checks.CreateCheckRun(ctx, "acme", "widget", github.CreateCheckRunOptions{Name: "lint", HeadSHA: head}); err == nil {
		t.Error("a user token must not create check runs")
	}
	cr, _, err := ci.Checks.CreateCheckRun(ctx, "acme", "widget", github.CreateCheckRunOptions{Name: "lint", HeadSHA: head, Status: new("in_progress")})
	if err != nil || cr.GetStatus() != "in_progress" {
		t.Fatalf("check run: %v %v", cr, err)
	}
	cr, _, err = ci.Checks.UpdateCheckRun(ctx, "acme", "widget", cr.GetID(), github.UpdateCheckRunOptions{Name: "lint", Conclusion: new("failure"),
		Output: &github.CheckRunOutput{Title: new("2 problems"), Summary: new("see log")}})
	if err != nil || cr.GetStatus() != "completed" || cr.GetConclusion() != "failure" {
		t.Fatalf("update check run: %v %v", cr, err)
	}
	runs, _, err := author.Checks.ListCheckRunsForRef(ctx, "acme", "widget", head, nil)
	if err != nil || runs.GetTotal() != 1 || runs.CheckRuns[0].GetApp().GetSlug() != LoginCI {
		t.Fatalf("list check runs: %v %v", runs, err)
	}
	r := gql(t, h, tok.Author, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { mergeStateStatus commits(last: 1) { nodes { commit { statusCheckRollup { state contexts(first: 10) { nodes { __typename ... on CheckRun { name conclusion } ... on StatusContext { context state } } } } } } } } } }`, nil)
	if s := string(r.Data); !strings.Contains(s, `"state":"FAILURE"`) || !strings.Contains(s, `"name":"lint","conclusion":"FAILURE"`) || !strings.Contains(s, `"context":"converge","state":"SUCCESS"`) || !strings.Contains(s, "UNSTABLE") {
		t.Errorf("rollup: %s %v", s, r.Errors)
	}

	// Permissions.
	for login, want := range map[string]string{LoginReviewer: "write", LoginOutsider: "read", "acme": "admin"} {
		p, _, err := author.Repositories.GetPermissionLevel(ctx, "acme", "widget", login)
		if err != nil || p.GetPermission() != want || p.GetRoleName() != want {
			t.Errorf("permission %s: %v %v", login, p, err)
		}
	}

	// Events, with a conditional request answered 304.
	evs, resp, err := author.Issues.ListIssueEvents(ctx, "acme", "widget", n, nil)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].GetEvent() != "labeled" && evs[len(evs)-1].GetEvent() != "unlabeled" {
		t.Fatalf("events: %v %v", evs, err)
	}
	etag := resp.Header.Get("ETag")
	before := h.RequestCount()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.APIURL()+"/repos/acme/widget/issues/1/events", nil)
	req.Header.Set("Authorization", "token "+tok.Author)
	req.Header.Set("If-None-Match", etag)
	res, err := h.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d", res.StatusCode)
	}
	after := h.RequestCount()
	if after.NotModified != before.NotModified+1 || res.Header.Get("X-RateLimit-Remaining") == "" {
		t.Errorf("304 accounting: before %+v after %+v", before, after)
	}

	// Close via PATCH.
	closed, _, err := author.PullRequests.Edit(ctx, "acme", "widget", n, &github.PullRequest{State: new("closed")})
	if err != nil || closed.GetState() != "closed" {
		t.Fatalf("close: %v %v", closed, err)
	}
}

func TestREST_ErrorsAndAuth(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{HTTP: true})
	seedPR(t, h, RepoOptions{})
	if !strings.HasPrefix(h.APIURL(), "http://") {
		t.Fatalf("HTTP option: %s", h.APIURL())
	}
	st, body := do(t, h, "", "GET", h.APIURL()+"/repos/acme/widget", nil)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	if st != 401 || m["message"] != "Bad credentials" || m["documentation_url"] != "https://docs.github.com/rest" {
		t.Errorf("no token: %d %s", st, body)
	}
	st, _ = do(t, h, "ghp_wrong", "GET", h.APIURL()+"/user", nil)
	if st != 401 {
		t.Errorf("unknown token: %d", st)
	}
	st, body = do(t, h, h.Tokens().Author, "GET", h.APIURL()+"/repos/acme/widget/pulls/42", nil)
	if st != 404 || !strings.Contains(string(body), `"message":"Not Found"`) {
		t.Errorf("missing pull: %d %s", st, body)
	}
	h.InjectFault("/api/v3/repos/acme/widget/pulls", 502, 1)
	st, _ = do(t, h, h.Tokens().Author, "GET", h.APIURL()+"/repos/acme/widget/pulls/1", nil)
	st2, _ := do(t, h, h.Tokens().Author, "GET", h.APIURL()+"/repos/acme/widget/pulls/1", nil)
	if st != 502 || st2 != 200 {
		t.Errorf("fault: %d then %d", st, st2)
	}
}

func TestREST_MergeMakesARealMergeCommit(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	ctx := t.Context()
	author := ghClient(t, h, h.Tokens().Author)
	// Move main so the merge is a true three-way merge.
	if _, err := h.PushFiles("acme", "widget", "main", map[string]string{"other.txt": "x\n"}, "Other"); err != nil {
		t.Fatal(err)
	}
	// Under the protection rule requiring branches to be up to date the
	// branch is BEHIND and GitHub refuses the merge; without it, merges.
	if err := h.SetRequireUpToDate("acme", "widget", true); err != nil {
		t.Fatal(err)
	}
	mergeabilitySettles(h)
	pull, _, _ := author.PullRequests.Get(ctx, "acme", "widget", n)
	if pull.GetMergeableState() != "behind" {
		t.Errorf("mergeable_state %q, want behind", pull.GetMergeableState())
	}
	_, _, err := author.PullRequests.Merge(ctx, "acme", "widget", n, "", &github.PullRequestOptions{MergeMethod: "merge"})
	if er, ok := err.(*github.ErrorResponse); !ok || er.Response.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("merging a BEHIND branch under the protection rule: %v, want 405", err)
	}
	if err := h.SetRequireUpToDate("acme", "widget", false); err != nil {
		t.Fatal(err)
	}
	res, _, err := author.PullRequests.Merge(ctx, "acme", "widget", n, "", &github.PullRequestOptions{MergeMethod: "merge"})
	if err != nil || !res.GetMerged() {
		t.Fatalf("merge: %v %v", res, err)
	}
	h.mu.Lock()
	dir := h.repoLocked("acme", "widget").dir
	h.mu.Unlock()
	parents, err := runGit(ctx, dir, nil, nil, "rev-list", "--parents", "-n1", "main")
	if err != nil || len(strings.Fields(parents)) != 3 || strings.Fields(parents)[0] != res.GetSHA() {
		t.Fatalf("main after merge: %q %v", parents, err)
	}
	if body, ok := fileAt(ctx, dir, "main", "main.go"); !ok || !strings.Contains(body, "hello, world") {
		t.Errorf("merged tree lacks the PR's change: %q", body)
	}
	pull, _, _ = author.PullRequests.Get(ctx, "acme", "widget", n)
	if !pull.GetMerged() || pull.GetState() != "closed" {
		t.Errorf("after merge: merged=%v state=%s", pull.GetMerged(), pull.GetState())
	}
}

// TestREST_CompareCountsFromGit: GET /compare/BASE...HEAD answers GitHub's
// statuses and counts (go-github reads them) from the repository's git,
// by SHA or branch name; a BEHIND merge state needs the protection rule.
func TestREST_CompareCountsFromGit(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	ctx := t.Context()
	author := ghClient(t, h, h.Tokens().Author)
	pull, _, err := author.PullRequests.Get(ctx, "acme", "widget", n)
	if err != nil {
		t.Fatal(err)
	}
	base, head := pull.GetBase().GetSHA(), pull.GetHead().GetSHA()
	compare := func(b, hd string) *github.CommitsComparison {
		t.Helper()
		c, _, err := author.Repositories.CompareCommits(ctx, "acme", "widget", b, hd, nil)
		if err != nil {
			t.Fatalf("compare %s...%s: %v", b, hd, err)
		}
		return c
	}
	if c := compare(base, head); c.GetStatus() != "ahead" || c.GetAheadBy() != 1 || c.GetBehindBy() != 0 || len(c.Commits) != 1 || c.GetMergeBaseCommit().GetSHA() != base {
		t.Errorf("base...head = %s ahead %d behind %d, %d commits, merge base %s", c.GetStatus(), c.GetAheadBy(), c.GetBehindBy(), len(c.Commits), c.GetMergeBaseCommit().GetSHA())
	}
	if c := compare(head, base); c.GetStatus() != "behind" || c.GetBehindBy() != 1 {
		t.Errorf("head...base = %s behind %d", c.GetStatus(), c.GetBehindBy())
	}
	if c := compare("main", "main"); c.GetStatus() != "identical" {
		t.Errorf("main...main = %s", c.GetStatus())
	}
	if _, err := h.PushFiles("acme", "widget", "main", map[string]string{"NOTES.md": "notes\n"}, "docs: notes"); err != nil {
		t.Fatal(err)
	}
	if c := compare("main", head); c.GetStatus() != "diverged" || c.GetAheadBy() != 1 || c.GetBehindBy() != 1 {
		t.Errorf("main...head after a base push = %s ahead %d behind %d", c.GetStatus(), c.GetAheadBy(), c.GetBehindBy())
	}
	if _, _, err := author.Repositories.CompareCommits(ctx, "acme", "widget", "main", "no-such-branch", nil); err == nil {
		t.Error("compare with an unknown head: no error")
	}
	state := func() string {
		p, _, err := author.PullRequests.Get(ctx, "acme", "widget", n)
		if err != nil {
			t.Fatal(err)
		}
		return p.GetMergeableState()
	}
	mergeabilitySettles(h)
	if got := state(); got != "clean" {
		t.Errorf("mergeable_state %q behind without the protection rule, want clean", got)
	}
	if err := h.SetRequireUpToDate("acme", "widget", true); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != "behind" {
		t.Errorf("mergeable_state %q behind under the protection rule, want behind", got)
	}
}
