package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

func TestReplyResolveUnresolveThread(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "POST", pMR+"/discussions/"+d1+"/notes", "", httpmock.JSON(http.StatusCreated, noteJSON(201, "DiffNote", "converge-bot", "done", 40, false, pos(shaHead, 4))))
	stub(reg, "PUT", pMR+"/discussions/"+d1, "resolved=true", ok(map[string]any{"id": d1}))
	stub(reg, "PUT", pMR+"/discussions/"+d1, "resolved=false", ok(map[string]any{"id": d1}))
	stub(reg, "POST", pMR+"/discussions/nope/notes", "", msg(http.StatusNotFound, "404 Not found"))
	stub(reg, "PUT", pMR+"/discussions/nope", "resolved=true", msg(http.StatusNotFound, "404 Not found"))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()

	cm, err := c.ReplyToThread(ctx, testRef, d1, "done")
	if err != nil {
		t.Fatal(err)
	}
	if cm.ID != "gid://gitlab/DiffNote/201" || cm.DatabaseID != 201 || cm.Author != "converge-bot" || cm.Body != "done" || cm.CreatedAt.IsZero() ||
		cm.URL != testRef.String()+"#note_201" {
		t.Errorf("reply %+v", cm)
	}
	if body := sentJSON(t, reg.Requests()[0]); body["body"] != "done" {
		t.Errorf("sent %v", body)
	}
	if err := c.ResolveThread(ctx, testRef, d1); err != nil {
		t.Fatal(err)
	}
	if err := c.UnresolveThread(ctx, testRef, d1); err != nil {
		t.Fatal(err)
	}
	_, err = c.ReplyToThread(ctx, testRef, "nope", "hi")
	wantKind(t, "reply to a missing discussion", err, forge.KindNotFound)
	wantKind(t, "resolve a missing discussion", c.ResolveThread(ctx, testRef, "nope"), forge.KindNotFound)

	n := len(reg.Requests())
	_, err = c.ReplyToThread(ctx, testRef, d1, "  ")
	wantKind(t, "blank reply", err, forge.KindInvalid)
	_, err = c.CreateIssueComment(ctx, testRef, "")
	wantKind(t, "empty comment", err, forge.KindInvalid)
	if len(reg.Requests()) != n {
		t.Error("a blank body was sent")
	}
}

// TestPR_G6_LongBodiesAreTruncated: bodies are cut to MaxBodyChars.
func TestPR_G6_LongBodiesAreTruncated(t *testing.T) {
	long := "head " + strings.Repeat("é", MaxBodyChars+10)
	got := TruncateBody(long)
	if n := utf8.RuneCountInString(got); n > MaxBodyChars || !strings.HasPrefix(got, "head éé") || !strings.Contains(got, "truncated by converge") {
		t.Errorf("%d characters: %.40q…", n, got)
	}
	if TruncateBody("short") != "short" {
		t.Error("a short body changed")
	}
}

func TestLabelsAddAndRemove(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "PUT", pMR, "", ok(mrJSON()))
	stub(reg, "PUT", pMR, "", ok(mrJSON()))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	if err := c.AddLabels(ctx, testRef, "converge", "needs attention/x: y"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLabel(ctx, testRef, "converge"); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLabels(ctx, testRef); err != nil {
		t.Errorf("no labels: %v", err)
	}
	wantKind(t, "a label with a comma", c.AddLabels(ctx, testRef, "a,b"), forge.KindInvalid)
	reqs := reg.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if b := sentJSON(t, reqs[0]); b["add_labels"] != "converge,needs attention/x: y" {
		t.Errorf("add sent %v", b)
	}
	if b := sentJSON(t, reqs[1]); b["remove_labels"] != "converge" {
		t.Errorf("remove sent %v", b)
	}
}

func TestPR_T13_IssueComments(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "POST", pMR+"/notes", "", httpmock.JSON(http.StatusCreated, noteJSON(300, nil, "converge-bot", "summary", 50, false, nil)))
	stub(reg, "GET", pMR+"/notes", "page=1", ok([]any{
		noteJSON(1, nil, "carol", "first", 1, false, nil),
		noteJSON(2, nil, "alice", "added 1 commit", 2, true, nil),
		noteJSON(3, "DiscussionNote", "carol", "a thread", 3, false, nil),
	}, "X-Next-Page", "2"))
	stub(reg, "GET", pMR+"/notes", "page=2", ok([]any{noteJSON(300, nil, "converge-bot", "summary", 50, false, nil)}))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	ic, err := c.CreateIssueComment(ctx, testRef, "summary")
	if err != nil {
		t.Fatal(err)
	}
	if ic.ID != 300 || ic.NodeID != "gid://gitlab/Note/300" || ic.Author != "converge-bot" || ic.Body != "summary" {
		t.Errorf("created %+v", ic)
	}
	list, err := c.ListIssueComments(ctx, testRef)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != 1 || list[1].ID != 300 {
		t.Errorf("list %+v: top-level notes only, oldest first", list)
	}
}

// TestPR_T10_CommitStatus: converge's states map to GitLab's (error as
// canceled), an unknown state and a missing commit are invalid, a repeated
// state is not an error.
func TestPR_T10_CommitStatus(t *testing.T) {
	reg := httpmock.New(t)
	for range 4 {
		stub(reg, "POST", pProject+"/statuses/"+shaHead, "", httpmock.JSON(http.StatusCreated, map[string]any{"id": 1}))
	}
	stub(reg, "POST", pProject+"/statuses/"+shaHead, "", msg(http.StatusBadRequest, "Cannot transition status via :enqueue from :pending"))
	stub(reg, "POST", pProject+"/statuses/"+shaBase, "", msg(http.StatusNotFound, "404 Commit Not Found"))
	stub(reg, "POST", pProject+"/statuses/"+shaOld, "", msg(http.StatusNotFound, "404 Not found"))
	stub(reg, "GET", pProject, "", ok(map[string]any{"id": 42}))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	for _, s := range []forge.CommitStatusState{forge.StatusPending, forge.StatusSuccess, forge.StatusFailure, forge.StatusError} {
		if err := c.SetCommitStatus(ctx, testRef, shaHead, forge.CommitStatus{State: s, Context: "converge", Description: strings.Repeat("d", 300), TargetURL: "https://x"}); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := c.SetCommitStatus(ctx, testRef, shaHead, forge.CommitStatus{State: forge.StatusPending, Context: "converge"}); err != nil {
		t.Errorf("pending again: %v, want nil", err)
	}
	var states []string
	for _, r := range reg.Requests()[:4] {
		b := sentJSON(t, r)
		states = append(states, b["state"].(string))
		if b["name"] != "converge" || utf8.RuneCountInString(b["description"].(string)) > maxStatusDescription || b["target_url"] != "https://x" {
			t.Errorf("sent %v", b)
		}
	}
	if !slices.Equal(states, []string{"pending", "success", "failed", "canceled"}) {
		t.Errorf("states sent %v", states)
	}
	n := len(reg.Requests())
	wantKind(t, "bogus state", c.SetCommitStatus(ctx, testRef, shaHead, forge.CommitStatus{State: "bogus", Context: "x"}), forge.KindInvalid)
	if len(reg.Requests()) != n {
		t.Error("a bogus state was sent")
	}
	wantKind(t, "a commit GitLab lacks", c.SetCommitStatus(ctx, testRef, shaBase, forge.CommitStatus{State: forge.StatusSuccess, Context: "x"}), forge.KindInvalid)
	wantKind(t, "a bare 404 on an existing project", c.SetCommitStatus(ctx, testRef, shaOld, forge.CommitStatus{State: forge.StatusSuccess, Context: "x"}), forge.KindInvalid)
}

func TestViewerIsCached(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", "/api/v4/user", "", ok(map[string]any{"id": 5, "username": "converge-bot", "bot": true}))
	c, _ := newTestClient(t, reg)
	for range 2 {
		if v, err := c.Viewer(context.Background()); err != nil || v != "converge-bot" {
			t.Errorf("viewer %q, %v", v, err)
		}
	}
}

func TestSEC_1_PermissionLevels(t *testing.T) {
	reg := httpmock.New(t)
	levels := map[string]int{"owner": 50, "maint": 40, "dev": 30, "rep": 20, "guest": 10, "minimal": 5}
	names := []string{"owner", "maint", "dev", "rep", "guest", "minimal"}
	for i, n := range names {
		stub(reg, "GET", "/api/v4/users", "username="+n, ok([]any{map[string]any{"id": 100 + i, "username": n, "state": "active"}}))
		stub(reg, "GET", fmt.Sprintf("%s/members/all/%d", pProject, 100+i), "", ok(map[string]any{"id": 100 + i, "username": n, "access_level": levels[n], "state": "active"}))
	}
	stub(reg, "GET", "/api/v4/users", "username=stranger", ok([]any{map[string]any{"id": 200, "username": "stranger", "state": "active"}}))
	stub(reg, "GET", pProject+"/members/all/200", "", msg(http.StatusNotFound, "404 Not found"))
	stub(reg, "GET", pProject, "", ok(map[string]any{"id": 42}))
	stub(reg, "GET", "/api/v4/users", "username=nobody", ok([]any{}))
	stub(reg, "GET", "/api/v4/users", "username=blocked", ok([]any{map[string]any{"id": 201, "username": "blocked", "state": "blocked"}}))
	c, _ := newTestClient(t, reg)
	want := map[string]forge.Permission{"owner": forge.PermAdmin, "maint": forge.PermMaintain, "dev": forge.PermWrite, "rep": forge.PermRead,
		"guest": forge.PermRead, "minimal": forge.PermNone, "stranger": forge.PermNone, "nobody": forge.PermNone, "blocked": forge.PermNone}
	for _, n := range append(names, "stranger", "nobody", "blocked") {
		if got, err := c.Permission(context.Background(), testRef, n); err != nil || got != want[n] {
			t.Errorf("Permission(%s) = %q, %v; want %q", n, got, err, want[n])
		}
	}
}

// TestPR_O5_RequestReviewsKeepsPendingReviewers: the reviewers become the
// union of those the MR has now and the named logins.
func TestPR_O5_RequestReviewsKeepsPendingReviewers(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", pMR, "", ok(mrJSON())) // reviewers bob (2), GitLabDuo (3)
	stub(reg, "GET", "/api/v4/users", "username=dave", ok([]any{map[string]any{"id": 4, "username": "dave", "state": "active"}}))
	stub(reg, "GET", "/api/v4/users", "username=bob", ok([]any{map[string]any{"id": 2, "username": "bob", "state": "active"}}))
	pending := ok([]any{map[string]any{"user": u(2, "bob"), "state": "unreviewed"}, map[string]any{"user": u(3, "GitLabDuo"), "state": "review_started"}})
	stub(reg, "GET", pMR+"/reviewers", "", pending)
	stub(reg, "PUT", pMR, "", ok(mrJSON()))
	// Requesting only reviewers already there, their reviews pending,
	// writes nothing.
	stub(reg, "GET", pMR, "", ok(mrJSON()))
	stub(reg, "GET", "/api/v4/users", "username=GitLabDuo", ok([]any{map[string]any{"id": 3, "username": "GitLabDuo", "bot": true, "state": "active"}}))
	stub(reg, "GET", pMR+"/reviewers", "", pending)
	// An unknown login is refused and nothing is written.
	stub(reg, "GET", pMR, "", ok(mrJSON()))
	stub(reg, "GET", "/api/v4/users", "username=ghost", ok([]any{}))
	missing := testRef
	missing.Number = 999999
	stub(reg, "GET", pProject+"/merge_requests/999999", "", msg(http.StatusNotFound, "404 Not found"))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	pr := &forge.PullRequest{Ref: testRef}
	if err := c.RequestReviews(ctx, pr, []string{"dave", "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	put := reg.Requests()[4]
	if b := sentJSON(t, put); fmt.Sprint(b["reviewer_ids"]) != "[2 3 4]" {
		t.Errorf("reviewer_ids sent %v, want [2 3 4]", b["reviewer_ids"])
	}
	if err := c.RequestReviews(ctx, pr, nil, []string{"GitLabDuo"}); err != nil {
		t.Fatal(err)
	}
	err := c.RequestReviews(ctx, pr, []string{"ghost"}, nil)
	wantKind(t, "an unknown reviewer", err, forge.KindInvalid)
	if !errors.Is(err, ErrReviewerUnavailable) {
		t.Errorf("%v does not wrap ErrReviewerUnavailable", err)
	}
	err = c.RequestReviews(ctx, &forge.PullRequest{Ref: missing, ID: "PR_kwDOmissing"}, []string{"dave"}, nil)
	wantKind(t, "a missing MR", err, forge.KindNotFound)
	if err := c.RequestReviews(ctx, pr, nil, nil); err != nil {
		t.Errorf("nobody: %v", err)
	}
}

func TestPR_O1_IssueEvents(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", pMR+"/notes", "", ok([]any{
		noteJSON(10, nil, "alice", "requested review from @GitLabDuo", 1, true, nil),
		noteJSON(11, nil, "carol", "a plain comment", 2, false, nil),
		noteJSON(12, nil, "alice", "added 2 commits\n\n* abc - x\n* def - y", 4, true, nil),
		noteJSON(13, nil, "alice", "marked this merge request as **ready**", 5, true, nil),
		noteJSON(14, nil, "bob", "approved this merge request", 6, true, nil),
		noteJSON(15, nil, "bob", "changed title from **a** to **b**", 7, true, nil),
	}))
	stub(reg, "GET", pMR+"/resource_label_events", "", ok([]any{
		map[string]any{"id": 10, "user": u(5, "converge-bot"), "created_at": at(3), "label": map[string]any{"name": "converge"}, "action": "add"},
		map[string]any{"id": 11, "user": u(5, "converge-bot"), "created_at": at(8), "label": map[string]any{"name": "converge"}, "action": "remove"},
	}))
	c, _ := newTestClient(t, reg)
	evs, err := c.IssueEvents(context.Background(), testRef)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%d:%s:%s:%s", e.ID, e.Event, e.Actor, e.Label))
	}
	want := []string{
		"10:review_requested:alice:",
		fmt.Sprintf("%d:labeled:converge-bot:converge", LabelEventIDBase+10),
		"12:committed:alice:",
		"13:ready_for_review:alice:",
		"14:approved:bob:",
		fmt.Sprintf("%d:unlabeled:converge-bot:converge", LabelEventIDBase+11),
	}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
}

func TestOpenMRs(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", pProject+"/merge_requests", "state=opened", ok([]any{
		map[string]any{"iid": 7, "web_url": "https://gitlab.example.com/group/sub/proj/-/merge_requests/7", "author": u(1, "alice"), "labels": []string{"converge"}},
	}))
	c, _ := newTestClient(t, reg)
	mrs, err := c.OpenMRs(context.Background(), "group/sub/proj")
	if err != nil || len(mrs) != 1 || mrs[0].Number != 7 || mrs[0].Author != "alice" || mrs[0].Labels[0] != "converge" {
		t.Errorf("open MRs %+v, %v", mrs, err)
	}
}

func TestPR_S14_CommitsBehind(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", pProject+"/repository/compare", "from="+shaHead, ok(map[string]any{"commits": []any{map[string]any{"id": "x"}, map[string]any{"id": "y"}}}))
	c, _ := newTestClient(t, reg)
	n, err := c.CommitsBehind(context.Background(), testRef, shaBase, shaHead)
	if err != nil || n != 2 {
		t.Errorf("behind %d, %v", n, err)
	}
	// Cached: SHAs do not change.
	if n, err := c.CommitsBehind(context.Background(), testRef, shaBase, shaHead); err != nil || n != 2 {
		t.Errorf("again: %d, %v", n, err)
	}
}

// PR-O5 on GitLab: a reviewer who finished (GitLab Duo after its review)
// is asked anew by removing it from the reviewers and adding it again.
func TestPR_O5_RequestReviewsAsksAFinishedReviewerAgain(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", pMR, "", ok(mrJSON())) // reviewers bob (2), GitLabDuo (3)
	stub(reg, "GET", "/api/v4/users", "username=GitLabDuo", ok([]any{map[string]any{"id": 3, "username": "GitLabDuo", "bot": true, "state": "active"}}))
	stub(reg, "GET", pMR+"/reviewers", "", ok([]any{map[string]any{"user": u(2, "bob"), "state": "unreviewed"}, map[string]any{"user": u(3, "GitLabDuo"), "state": "reviewed"}}))
	stub(reg, "PUT", pMR, "", ok(mrJSON()))
	stub(reg, "PUT", pMR, "", ok(mrJSON()))
	c, _ := newTestClient(t, reg)
	if err := c.RequestReviews(context.Background(), &forge.PullRequest{Ref: testRef}, nil, []string{"GitLabDuo"}); err != nil {
		t.Fatal(err)
	}
	reqs := reg.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	if b := sentJSON(t, reqs[3]); fmt.Sprint(b["reviewer_ids"]) != "[2]" {
		t.Errorf("first PUT reviewer_ids %v, want [2] (Duo removed)", b["reviewer_ids"])
	}
	if b := sentJSON(t, reqs[4]); fmt.Sprint(b["reviewer_ids"]) != "[2 3]" {
		t.Errorf("second PUT reviewer_ids %v, want [2 3] (Duo added again)", b["reviewer_ids"])
	}
}
