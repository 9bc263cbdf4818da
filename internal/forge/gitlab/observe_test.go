package gitlab

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

const (
	d1 = "d100000000000000000000000000000000000001"
	d2 = "d200000000000000000000000000000000000002"
	d3 = "d300000000000000000000000000000000000003"
	d4 = "d400000000000000000000000000000000000004"
)

// stubObserve registers a whole merge request's reads; discussionsPage2
// answers the second page of discussions.
func stubObserve(reg *httpmock.Registry, discussionsPage2 httpmock.Responder) {
	stubObserveMR(reg, discussionsPage2, false)
}

// stubObserveMR: cached, the project is not read again.
func stubObserveMR(reg *httpmock.Registry, discussionsPage2 httpmock.Responder, cached bool) {
	stub(reg, "GET", pMR, "", ok(mrJSON()))
	if !cached {
		stub(reg, "GET", pProject, "", ok(map[string]any{"id": 42, "path_with_namespace": "group/sub/proj",
			"http_url_to_repo": "https://gitlab.example.com/group/sub/proj.git", "web_url": "https://gitlab.example.com/group/sub/proj", "default_branch": "main"}))
	}
	reply := noteJSON(102, "DiffNote", "alice", "fixed", 12, false, pos(shaOld, 3))
	stub(reg, "GET", pMR+"/discussions", "page=1", ok([]any{
		map[string]any{"id": d1, "individual_note": false, "notes": []any{noteJSON(101, "DiffNote", "bob", "rename this", 5, false, pos(shaOld, 3)), reply}},
		map[string]any{"id": d2, "individual_note": true, "notes": []any{noteJSON(103, nil, "carol", "please update the changelog", 15, false, nil)}},
	}, "X-Next-Page", "2", "X-Total", "4"))
	if discussionsPage2 != nil {
		stub(reg, "GET", pMR+"/discussions", "page=2", discussionsPage2)
	}
}

func stubObserveRest(reg *httpmock.Registry) { stubObserveRestOf(reg, false) }

// stubObserveRestOf: cached, the compares (of immutable SHAs) are not
// read again.
func stubObserveRestOf(reg *httpmock.Registry, cached bool) {
	resolved := noteJSON(104, "DiffNote", "bob", "and this", 25, false, pos(shaHead, 5))
	resolved["resolved"] = true
	stub(reg, "GET", pMR+"/notes", "sort=asc", ok([]any{
		noteJSON(90, nil, "alice", "requested review from @bob", 1, true, nil),
		noteJSON(101, "DiffNote", "bob", "rename this", 5, false, pos(shaOld, 3)),
		noteJSON(110, nil, "carol", "requested changes", 10, true, nil),
		noteJSON(103, nil, "carol", "please update the changelog", 15, false, nil),
		noteJSON(111, nil, "bob", "approved this merge request", 30, true, nil),
	}))
	stub(reg, "GET", pMR+"/commits", "", ok([]any{
		map[string]any{"id": shaHead, "short_id": shaHead[:8], "message": "two", "parent_ids": []string{shaOld}, "committed_date": at(20), "authored_date": at(20)},
		map[string]any{"id": shaOld, "short_id": shaOld[:8], "message": "one", "parent_ids": []string{shaBase}, "committed_date": at(0), "authored_date": at(0)},
	}))
	stub(reg, "GET", pMR+"/versions", "", ok([]any{
		map[string]any{"id": 2, "head_commit_sha": shaHead, "base_commit_sha": shaBase, "start_commit_sha": shaBase, "created_at": at(20), "real_size": "1", "state": "collected"},
		map[string]any{"id": 1, "head_commit_sha": shaOld, "base_commit_sha": shaBase, "start_commit_sha": shaBase, "created_at": at(0), "real_size": "1", "state": "collected"},
	}))
	stub(reg, "GET", pMR+"/approvals", "", ok(map[string]any{"approved": true, "approved_by": []any{map[string]any{"user": u(2, "bob")}}}))
	stub(reg, "GET", pMR+"/reviewers", "", ok([]any{
		map[string]any{"user": u(2, "bob"), "state": "approved", "created_at": at(1)},
		map[string]any{"user": u(3, "GitLabDuo"), "state": "unreviewed", "created_at": at(2)},
	}))
	stub(reg, "GET", pProject+"/repository/commits/"+shaHead+"/statuses", "", ok([]any{
		map[string]any{"id": 10, "sha": shaHead, "name": "test", "status": "success", "description": nil, "target_url": "https://gitlab.example.com/j/10", "allow_failure": false},
		map[string]any{"id": 11, "sha": shaHead, "name": "converge", "status": "pending", "description": "working", "target_url": nil, "allow_failure": false},
		map[string]any{"id": 12, "sha": shaHead, "name": "lint", "status": "failed", "description": nil, "target_url": nil, "allow_failure": false},
		map[string]any{"id": 13, "sha": shaHead, "name": "lint", "status": "success", "description": nil, "target_url": nil, "allow_failure": false},
	}))
	if cached {
		return
	}
	// d1 was written on the old head: the compare to the head carries its
	// line 3 below an added line to 4.
	stub(reg, "GET", pProject+"/repository/compare", "from="+shaOld, ok(map[string]any{"commits": []any{},
		"diffs": []any{map[string]any{"old_path": "a.go", "new_path": "a.go", "diff": "@@ -1,2 +1,3 @@\n+new\n l1\n l2\n"}}}))
	stub(reg, "GET", pProject+"/repository/compare", "from="+shaBase+"&straight=true&to="+shaOld, ok(map[string]any{"commits": []any{},
		"diffs": []any{map[string]any{"old_path": "a.go", "new_path": "a.go", "new_file": true, "diff": "@@ -0,0 +1,5 @@\n+l1\n+l2\n+l3\n+l4\n+l5\n"}}}))
	stub(reg, "GET", pProject+"/repository/compare", "from="+shaBase+"&straight=true&to="+shaHead, ok(map[string]any{"commits": []any{},
		"diffs": []any{map[string]any{"old_path": "a.go", "new_path": "a.go", "new_file": true, "diff": "@@ -0,0 +1,6 @@\n+new\n+l1\n+l2\n+l3\n+l4\n+l5\n"}}}))
}

func page2() httpmock.Responder {
	resolved := noteJSON(104, "DiffNote", "bob", "and this", 25, false, pos(shaHead, 5))
	resolved["resolved"] = true
	return ok([]any{
		map[string]any{"id": d3, "individual_note": false, "notes": []any{resolved}},
		map[string]any{"id": d4, "individual_note": false, "notes": []any{noteJSON(105, "DiscussionNote", "carol", "why?", 26, false, nil)}},
	}, "X-Total", "4")
}

func TestPR_O1_ObserveReadsTheWholeMR(t *testing.T) {
	reg := httpmock.New(t)
	stubObserve(reg, page2())
	stubObserveRest(reg)
	c, _ := newTestClient(t, reg)
	pr, err := c.Observe(context.Background(), testRef)
	if err != nil {
		t.Fatal(err)
	}
	if pr.ID != "gid://gitlab/MergeRequest/9001" || pr.Number != 7 || pr.State != forge.StateOpen || pr.Author != "alice" ||
		pr.HeadRef != "feat" || pr.BaseRef != "main" || pr.HeadSHA != shaHead || pr.BaseSHA != shaBase || pr.CrossRepo || pr.HeadRepo != "group/sub/proj" {
		t.Errorf("identity: %+v", pr)
	}
	if pr.CloneURL != "https://gitlab.example.com/group/sub/proj.git" || pr.URL != "https://gitlab.example.com/group/sub/proj/-/merge_requests/7" {
		t.Errorf("clone %q url %q", pr.CloneURL, pr.URL)
	}
	if pr.Mergeable != forge.MergeableYes || pr.MergeState != forge.MergeClean {
		t.Errorf("merge %s %s", pr.Mergeable, pr.MergeState)
	}
	if !slices.Equal(pr.Labels, []string{"converge"}) {
		t.Errorf("labels %v: each once", pr.Labels)
	}
	if !slices.Equal(pr.RequestedReviewers, []string{"GitLabDuo"}) {
		t.Errorf("requested reviewers %v: only those GitLab still waits on", pr.RequestedReviewers)
	}
	if len(pr.Commits) != 2 || pr.Commits[0].SHA != shaOld || pr.Commits[1].SHA != shaHead || !pr.CommitsComplete || pr.Commits[1].Parents[0] != shaOld {
		t.Errorf("commits %+v complete %v: oldest first, head last", pr.Commits, pr.CommitsComplete)
	}
	if len(pr.ForcePushes) != 0 {
		t.Errorf("force-pushes %+v after plain pushes", pr.ForcePushes)
	}
	if !pr.ObservedAt.Equal(httpmock.Date) || pr.Requests != 13 {
		t.Errorf("observed at %v with %d requests, want the Date header and 13", pr.ObservedAt, pr.Requests)
	}

	// Reviews: carol's request for changes of the old head, bob's diff
	// notes on the old head and on the head, bob's approval of the head.
	type rv struct {
		id, author string
		state      forge.ReviewState
		sha        string
		count      int
	}
	var got []rv
	for _, r := range pr.Reviews {
		got = append(got, rv{r.ID, r.Author, r.State, r.CommitSHA, r.CommentCount})
	}
	want := []rv{
		{"diffnotes:bob:" + shaOld, "bob", forge.ReviewCommented, shaOld, 1},
		{"gid://gitlab/Note/110", "carol", forge.ReviewChangesRequested, shaOld, 0},
		{"diffnotes:bob:" + shaHead, "bob", forge.ReviewCommented, shaHead, 1},
		{"gid://gitlab/Note/111", "bob", forge.ReviewApproved, shaHead, 0},
	}
	if !slices.Equal(got, want) {
		t.Errorf("reviews\n got %+v\nwant %+v", got, want)
	}

	if len(pr.IssueComments) != 1 || pr.IssueComments[0].ID != 103 || pr.IssueComments[0].NodeID != "gid://gitlab/Note/103" || pr.IssueComments[0].Author != "carol" {
		t.Errorf("issue comments %+v: the top-level note alone", pr.IssueComments)
	}

	if len(pr.Threads) != 3 {
		t.Fatalf("threads %+v: d1, d3, d4 (not the individual note)", pr.Threads)
	}
	th := pr.Threads[0]
	if th.ID != d1 || th.Path != "a.go" || th.Line != 4 || th.OrigLine != 3 || th.IsOutdated || th.IsResolved || len(th.Comments) != 2 {
		t.Errorf("thread on the old head, line carried: %+v", th)
	}
	c0 := th.Comments[0]
	if c0.ID != "gid://gitlab/DiffNote/101" || c0.DatabaseID != 101 || c0.ReviewID != "diffnotes:bob:"+shaOld || c0.OriginalCommit != shaOld ||
		c0.URL != pr.URL+"#note_101" || c0.DiffHunk != "@@ -0,0 +1,5 @@\n+l1\n+l2\n+l3" {
		t.Errorf("first comment %+v", c0)
	}
	if th.Comments[1].ReviewID != "" || th.Comments[1].Author != "alice" {
		t.Errorf("reply %+v", th.Comments[1])
	}
	if th := pr.Threads[1]; th.ID != d3 || !th.IsResolved || th.Line != 5 || th.Comments[0].DiffHunk != "@@ -0,0 +1,6 @@\n+new\n+l1\n+l2\n+l3\n+l4" {
		t.Errorf("resolved thread on the head: %+v", th)
	}
	if th := pr.Threads[2]; th.ID != d4 || th.Path != "" || th.Line != 0 || th.Comments[0].ReviewID != "" {
		t.Errorf("non-diff thread: %+v", th)
	}

	if pr.Checks.State != forge.CIPending || len(pr.Checks.Contexts) != 3 {
		t.Errorf("checks %+v", pr.Checks)
	}
	for _, cx := range pr.Checks.Contexts {
		if cx.Name == "lint" && cx.Conclusion != "SUCCESS" {
			t.Errorf("lint %+v: the newest status per name counts", cx)
		}
	}
	if strings.Contains(reg.Requests()[0].Header.Get("PRIVATE-TOKEN"), testToken) == false {
		t.Error("no PRIVATE-TOKEN on the API host")
	}

	// Observed again, the project and the compares are not read again.
	stubObserveMR(reg, page2(), true)
	stubObserveRestOf(reg, true)
	again, err := c.Observe(context.Background(), testRef)
	if err != nil {
		t.Fatal(err)
	}
	if again.Requests != 9 || again.CloneURL != pr.CloneURL || again.Threads[0].Line != 4 || again.Threads[0].Comments[0].DiffHunk != c0.DiffHunk {
		t.Errorf("second observation: %d requests (want 9), clone %q, thread %+v", again.Requests, again.CloneURL, again.Threads[0])
	}
}

// TestPR_O1_MissingDiscussionPageFailsTheObservation: a page of
// discussions that cannot be read fails the observation; no partial
// merge request comes back.
func TestPR_O1_MissingDiscussionPageFailsTheObservation(t *testing.T) {
	reg := httpmock.New(t)
	stubObserve(reg, msg(http.StatusServiceUnavailable, "503 Service Unavailable"))
	stub(reg, "GET", pMR+"/discussions", "page=2", msg(http.StatusServiceUnavailable, "503 Service Unavailable"))
	stubObserveRest(reg) // read in parallel, they may or may not be asked
	c, _ := newTestClient(t, reg, func(o *Options) { o.Retry.MaxAttempts = 2 })
	pr, err := c.Observe(context.Background(), testRef)
	reg.MarkAllUsed()
	if pr != nil {
		t.Errorf("a partial observation came back: %+v", pr)
	}
	wantKind(t, "observe with a discussion page failing", err, forge.KindUnreachable)
}

func TestIF1_MissingMRIsNotFound(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", pMR, "", msg(http.StatusNotFound, "404 Not found"))
	c, _ := newTestClient(t, reg)
	_, err := c.Observe(context.Background(), testRef)
	wantKind(t, "observe a missing MR", err, forge.KindNotFound)
}

func TestUnknownMRStateFailsClosed(t *testing.T) {
	if _, ok := prState("archived"); ok {
		t.Error("an unknown MR state read as a state")
	}
	for s, want := range map[string]forge.PRState{"opened": forge.StateOpen, "locked": forge.StateOpen, "closed": forge.StateClosed, "merged": forge.StateMerged} {
		if got, _ := prState(s); got != want {
			t.Errorf("%s → %s, want %s", s, got, want)
		}
	}
}

func TestMergeStateFailsClosed(t *testing.T) {
	cases := []struct {
		detailed        string
		conflicts, draf bool
		m               forge.MergeableState
		s               forge.MergeState
	}{
		{"mergeable", false, false, forge.MergeableYes, forge.MergeClean},
		{"mergeable", true, false, forge.MergeableConflicting, forge.MergeDirty},
		{"conflict", false, false, forge.MergeableConflicting, forge.MergeDirty},
		{"need_rebase", false, false, forge.MergeableYes, forge.MergeBehind},
		{"not_approved", false, false, forge.MergeableYes, forge.MergeBlocked},
		{"ci_still_running", false, false, forge.MergeableYes, forge.MergeBlocked},
		{"draft_status", false, true, forge.MergeableYes, forge.MergeDraft},
		{"mergeable", false, true, forge.MergeableYes, forge.MergeDraft},
		{"checking", false, false, forge.MergeableUnknown, forge.MergeUnknown},
		{"something_new", false, false, forge.MergeableUnknown, forge.MergeUnknown},
	}
	for _, c := range cases {
		m, s := mergeState(c.detailed, c.conflicts, c.draf)
		if m != c.m || s != c.s {
			t.Errorf("%s conflicts=%v draft=%v → %s %s, want %s %s", c.detailed, c.conflicts, c.draf, m, s, c.m, c.s)
		}
	}
}

// TestPR_T10_RollupFailsClosed: a status converge does not know is never
// success; outcomes GitLab does not block on pass as finished checks.
func TestPR_T10_RollupFailsClosed(t *testing.T) {
	st := func(id int64, name, status string, allow bool) commitStatus {
		return commitStatus{ID: id, Name: name, Status: status, AllowFailure: allow}
	}
	cases := []struct {
		in    []commitStatus
		state forge.CIState
	}{
		{nil, ""},
		{[]commitStatus{st(1, "a", "success", false)}, forge.CISuccess},
		{[]commitStatus{st(1, "a", "success", false), st(2, "b", "bogus_new_status", false)}, forge.CIFailure},
		{[]commitStatus{st(1, "a", "success", false), st(2, "b", "canceled", false)}, forge.CIFailure},
		{[]commitStatus{st(1, "a", "running", false)}, forge.CIPending},
		{[]commitStatus{st(1, "a", "manual", false)}, forge.CIPending},
		{[]commitStatus{st(1, "a", "manual", true), st(2, "b", "success", false)}, forge.CISuccess},
		{[]commitStatus{st(1, "a", "failed", true), st(2, "b", "success", false)}, forge.CISuccess},
		{[]commitStatus{st(1, "a", "skipped", false), st(2, "b", "success", false)}, forge.CISuccess},
		{[]commitStatus{st(2, "a", "failed", false), st(1, "a", "success", false)}, forge.CIFailure},
	}
	for i, c := range cases {
		r := rollup(c.in)
		if r.State != c.state {
			t.Errorf("case %d: %+v → %s, want %s", i, c.in, r.State, c.state)
		}
	}
	if cx := rollup([]commitStatus{st(1, "x", "weird", false)}).Contexts[0]; cx.Conclusion == "SUCCESS" || !cx.IsStatus {
		t.Errorf("unknown status → %+v", cx)
	}
	if cx := rollup([]commitStatus{st(1, "x", "failed", true)}).Contexts[0]; cx.IsStatus || cx.Status != forge.CheckCompleted || cx.Conclusion != "NEUTRAL" {
		t.Errorf("allowed failure → %+v", cx)
	}
}

// TestPR_T1_ForcePushesFromVersions: a version whose predecessor's head
// is not among the commits now was force-pushed; plain pushes are not.
func TestPR_T1_ForcePushesFromVersions(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	vs := []version{ // newest first, as GitLab lists them
		{ID: 3, HeadCommitSHA: a, CreatedAt: t0.Add(20)},
		{ID: 2, HeadCommitSHA: b, CreatedAt: t0.Add(10)},
		{ID: 1, HeadCommitSHA: a, CreatedAt: t0},
	}
	commits := []forge.Commit{{SHA: a}}
	fp := forcePushes(vs, commits)
	if len(fp) != 1 || fp[0].Before != b || fp[0].After != a || !fp[0].At.Equal(t0.Add(20)) {
		t.Errorf("force-pushes %+v, want one %s → %s", fp, b, a)
	}
	if fp := forcePushes(vs[:2], []forge.Commit{{SHA: a}, {SHA: b}, {SHA: c}}); len(fp) != 0 {
		t.Errorf("a plain push read as a force-push: %+v", fp)
	}
}

// TestPR_O2_ApprovalWithdrawnFailsClosed: an approval note whose author
// is no longer among the approvers reads DISMISSED; an approval before any
// version is of no commit.
func TestPR_O2_ApprovalWithdrawnFailsClosed(t *testing.T) {
	notes := []note{{ID: 1, Body: sysApproved, System: true, Author: &user{Username: "bob"}, CreatedAt: t0}}
	rs := synthesizeReviews(notes, nil, nil, approvals{})
	if len(rs) != 1 || rs[0].State != forge.ReviewDismissed || rs[0].CommitSHA != "" {
		t.Errorf("reviews %+v, want one DISMISSED of no commit", rs)
	}
}

func TestPR_O2_IsOutdatedAndLineCarried(t *testing.T) {
	cases := []struct {
		diff string
		line int
		want int
		ok   bool
	}{
		{"@@ -1,2 +1,3 @@\n+new\n l1\n l2\n", 3, 4, true},
		{"@@ -1,2 +1,3 @@\n+new\n l1\n l2\n", 1, 2, true},
		{"@@ -2,2 +2,1 @@\n l2\n-l3\n", 3, 0, false},
		{"@@ -2,2 +2,1 @@\n l2\n-l3\n", 9, 8, true},
		{"@@ -5,1 +5,1 @@\n-x\n+y\n", 2, 2, true},
	}
	for _, c := range cases {
		got, ok := carryLine(c.diff, c.line)
		if got != c.want || ok != c.ok {
			t.Errorf("carry %d through %q → %d %v, want %d %v", c.line, c.diff, got, ok, c.want, c.ok)
		}
	}

	// A compare that lost the old head (404) or gave no diffs cannot prove
	// the line maps: outdated.
	for _, r := range []httpmock.Responder{msg(http.StatusNotFound, "404 Not found"), ok(map[string]any{"commits": []any{}})} {
		reg := httpmock.New(t)
		stub(reg, "GET", pProject+"/repository/compare", "from="+shaOld, r)
		c, _ := newTestClient(t, reg)
		p := &position{HeadSHA: shaOld, NewPath: "a.go", NewLine: ptr(3)}
		if _, outdated, err := c.mapLine(context.Background(), testRef, p, shaHead); err != nil || !outdated {
			t.Errorf("outdated %v, %v; want outdated", outdated, err)
		}
	}
	// A compare that fails otherwise fails the observation.
	reg := httpmock.New(t)
	stub(reg, "GET", pProject+"/repository/compare", "", msg(http.StatusForbidden, "403 Forbidden"))
	c, _ := newTestClient(t, reg)
	_, _, err := c.mapLine(context.Background(), testRef, &position{HeadSHA: shaOld, NewPath: "a.go", NewLine: ptr(3)}, shaHead)
	var ae *apiError
	if !errors.As(err, &ae) {
		t.Errorf("mapLine on a refused compare: %v", err)
	}
}

func ptr(n int) *int { return &n }

func TestHunkUpTo(t *testing.T) {
	d := "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n@@ -10,2 +11,2 @@\n x\n+y\n"
	if got := hunkUpTo(d, 3); got != "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C" {
		t.Errorf("hunk to 3: %q", got)
	}
	if got := hunkUpTo(d, 12); got != "@@ -10,2 +11,2 @@\n x\n+y" {
		t.Errorf("hunk to 12: %q", got)
	}
	if got := hunkUpTo(d, 8); got != "" {
		t.Errorf("line in no hunk: %q", got)
	}
}

// TestREL_4_ChargeReadsGitLabsRateLimitHeaders: GitLab's RateLimit-*
// headers as its documentation shows them (docs.gitlab.com, "GitLab.com
// settings", rate limits: RateLimit-Limit 600, RateLimit-Observed 6,
// RateLimit-Remaining 594, RateLimit-Reset 1563325137, RateLimit-Name on
// a refusal), and an answer without them: one request, the limit unknown.
func TestREL_4_ChargeReadsGitLabsRateLimitHeaders(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("RateLimit-Limit", "600")
	h.Set("RateLimit-Observed", "6")
	h.Set("RateLimit-Remaining", "594")
	h.Set("RateLimit-Reset", "1563325137")
	h.Set("RateLimit-ResetTime", "Wed, 17 Jul 2019 00:58:57 GMT")
	got := chargeOf(&http.Response{StatusCode: 200, Header: h}, now)
	want := forge.Charge{Resource: "api", Points: 1, At: now,
		Budget: forge.RateBudget{Limit: 600, Used: 6, Remaining: 594, ResetAt: time.Unix(1563325137, 0).UTC()}}
	if got != want {
		t.Errorf("documented headers:\n got %+v\nwant %+v", got, want)
	}
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	if got := chargeOf(&http.Response{StatusCode: 429, Header: h}, now); got.Resource != "throttle_authenticated_api" || got.Points != 1 {
		t.Errorf("a refusal naming its throttle: %+v", got)
	}
	if got := chargeOf(&http.Response{StatusCode: 200, Header: http.Header{}}, now); got != (forge.Charge{Resource: "api", Points: 1, At: now}) {
		t.Errorf("no headers: %+v", got)
	}
}
