package github

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

var testRef = forge.PRRef{Host: "ghe.example.com", Scheme: "https", Owner: "octo", Repo: "hello", Number: 7}

// Fixtures in GitHub's wire shape (as api.github.com answers the observe
// document).

func comment(id string, db int64, author, body string, at time.Time) map[string]any {
	return map[string]any{
		"id": id, "fullDatabaseId": fmt.Sprint(db), "author": map[string]any{"login": author},
		"body": body, "path": "main.go", "url": "https://ghe.example.com/octo/hello/pull/7#discussion_r" + fmt.Sprint(db),
		"createdAt": at.Format(time.RFC3339), "pullRequestReview": map[string]any{"id": "PRR_1"},
		"originalCommit": map[string]any{"oid": "aaaa"},
	}
}

func page(hasNext bool, cursor string) map[string]any {
	var c any
	if cursor != "" {
		c = cursor
	}
	return map[string]any{"hasNextPage": hasNext, "endCursor": c}
}

func thread(id string, comments []any, hasMore bool) map[string]any {
	cur := ""
	if hasMore {
		cur = "C_" + id + "_1"
	}
	return map[string]any{
		"id": id, "isResolved": false, "isOutdated": false, "path": "main.go",
		"line": 12, "startLine": nil, "originalLine": 12, "originalStartLine": nil,
		"comments": map[string]any{"pageInfo": page(hasMore, cur), "nodes": comments},
	}
}

func commit(oid, msg string, parents []string) map[string]any {
	ps := []any{}
	for _, p := range parents {
		ps = append(ps, map[string]any{"oid": p})
	}
	return map[string]any{"commit": map[string]any{
		"oid": oid, "message": msg, "committedDate": "2026-03-01T10:00:00Z",
		"parents": map[string]any{"nodes": ps},
	}}
}

func observeFixture(threads []any, threadsPage map[string]any) map[string]any {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	return map[string]any{
		"rateLimit": map[string]any{"cost": 1, "remaining": 4999, "resetAt": "2026-03-04T06:00:00Z"},
		"repository": map[string]any{"pullRequest": map[string]any{
			"id": "PR_kwDOA", "number": 7, "url": "https://ghe.example.com/octo/hello/pull/7",
			"title": "Add greeting", "body": "Says hello.", "state": "OPEN", "isDraft": false,
			"isCrossRepository": false, "author": map[string]any{"login": "alice"},
			"headRefName": "feature", "headRefOid": "bbbb", "baseRefName": "main", "baseRefOid": "0000",
			"headRepository":   map[string]any{"nameWithOwner": "octo/hello"},
			"repository":       map[string]any{"url": "https://ghe.example.com/octo/hello"},
			"mergeable":        "MERGEABLE",
			"mergeStateStatus": "BLOCKED",
			"labels":           map[string]any{"nodes": []any{map[string]any{"name": "converge"}, map[string]any{"name": "needs: review"}}},
			"reviewRequests": map[string]any{"nodes": []any{
				map[string]any{"requestedReviewer": map[string]any{"__typename": "Bot", "login": "Copilot"}},
				map[string]any{"requestedReviewer": map[string]any{"__typename": "User", "login": "bob"}},
				map[string]any{"requestedReviewer": map[string]any{"__typename": "Team", "slug": "core"}},
				map[string]any{"requestedReviewer": nil},
			}},
			"reviews": map[string]any{"nodes": []any{
				map[string]any{"id": "PRR_1", "fullDatabaseId": "101", "author": map[string]any{"login": "copilot-pull-request-reviewer"},
					"state": "COMMENTED", "body": "Copilot reviewed 1 file and generated 1 comment.", "submittedAt": t0.Format(time.RFC3339),
					"commit": map[string]any{"oid": "aaaa"}, "comments": map[string]any{"totalCount": 1}},
				map[string]any{"id": "PRR_2", "fullDatabaseId": "102", "author": nil,
					"state": "APPROVED", "body": "", "submittedAt": t0.Add(time.Hour).Format(time.RFC3339),
					"commit": map[string]any{"oid": "bbbb"}, "comments": map[string]any{"totalCount": 0}},
			}},
			"comments": map[string]any{"nodes": []any{
				map[string]any{"id": "IC_1", "fullDatabaseId": "5000000001", "author": map[string]any{"login": "bob"},
					"body": "Please also update the docs.", "createdAt": t0.Add(2 * time.Hour).Format(time.RFC3339)},
				map[string]any{"id": "IC_2", "fullDatabaseId": "5000000002", "author": nil,
					"body": "ghost", "createdAt": t0.Add(3 * time.Hour).Format(time.RFC3339)},
			}},
			"commits": map[string]any{"totalCount": 3, "nodes": []any{
				commit("aaaa", "first", []string{"0000"}),
				commit("bbbb", "second", []string{"aaaa"}),
			}},
			// CI is read on the head alone (PR-O1).
			"headCommit": map[string]any{"nodes": []any{map[string]any{"commit": map[string]any{"oid": "bbbb",
				"statusCheckRollup": map[string]any{"state": "PENDING", "contexts": map[string]any{"nodes": []any{
					map[string]any{"__typename": "CheckRun", "name": "build", "status": "COMPLETED", "conclusion": "SUCCESS"},
					map[string]any{"__typename": "CheckRun", "name": "test", "status": "IN_PROGRESS", "conclusion": nil},
					map[string]any{"__typename": "StatusContext", "context": "ci/legacy", "state": "PENDING"},
				}}}}}}},
			"reviewThreads": map[string]any{"pageInfo": threadsPage, "nodes": threads},
		}},
	}
}

func TestPR_O1_ObserveIsOneRequest(t *testing.T) {
	reg := httpmock.New(t)
	t0 := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	c1 := comment("PRRC_1", 9001, "Copilot", "Nil check missing.", t0)
	c1["diffHunk"] = "@@ -10,2 +10,3 @@ func f() {\n \tx := g()\n+\tuse(x)"
	th := thread("PRRT_1", []any{c1}, false)
	th["isOutdated"], th["startLine"], th["line"] = true, 10, nil
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(observeFixture([]any{th}, page(false, "")),
		"Date", "Wed, 04 Mar 2026 08:00:00 GMT"))
	c, _ := newTestClient(t, reg)

	pr, err := c.Observe(context.Background(), testRef)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if pr.Requests != 1 || len(reg.Requests()) != 1 {
		t.Fatalf("Requests = %d, sent %d; want one of each", pr.Requests, len(reg.Requests()))
	}
	if r := reg.Requests()[0]; r.Host != "ghe.example.com" || r.Path != "/api/graphql" {
		t.Errorf("sent to %s%s, want ghe.example.com/api/graphql", r.Host, r.Path)
	}
	var sent map[string]any
	json.Unmarshal(reg.Requests()[0].Body, &sent)
	if v := sent["variables"]; !reflect.DeepEqual(v, map[string]any{"owner": "octo", "name": "hello", "number": float64(7)}) {
		t.Errorf("variables = %v", v)
	}

	want := &forge.PullRequest{
		Ref: testRef, ID: "PR_kwDOA", Number: 7, URL: "https://ghe.example.com/octo/hello/pull/7",
		Title: "Add greeting", Body: "Says hello.", Author: "alice", State: "OPEN",
		HeadRef: "feature", HeadSHA: "bbbb", BaseRef: "main", BaseSHA: "0000", HeadRepo: "octo/hello",
		Mergeable: "MERGEABLE", MergeState: "BLOCKED",
		Checks: forge.CheckRollup{State: "PENDING", Contexts: []forge.CheckContext{
			{Name: "build", Status: "COMPLETED", Conclusion: "SUCCESS"},
			{Name: "test", Status: "IN_PROGRESS"},
			{Name: "ci/legacy", IsStatus: true, Conclusion: "PENDING"},
		}},
		Reviews: []forge.Review{
			{ID: "PRR_1", DatabaseID: 101, Author: "copilot-pull-request-reviewer", State: "COMMENTED",
				CommitSHA: "aaaa", SubmittedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), Body: "Copilot reviewed 1 file and generated 1 comment.",
				CommentCount: 1},
			{ID: "PRR_2", DatabaseID: 102, State: "APPROVED", CommitSHA: "bbbb", SubmittedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		},
		Threads: []forge.Thread{{
			ID: "PRRT_1", Path: "main.go", Line: 0, StartLine: 10, OrigLine: 12, IsOutdated: true,
			Comments: []forge.Comment{{ID: "PRRC_1", DatabaseID: 9001, Author: "Copilot", Body: "Nil check missing.",
				Path: "main.go", URL: "https://ghe.example.com/octo/hello/pull/7#discussion_r9001", CreatedAt: t0,
				ReviewID: "PRR_1", OriginalCommit: "aaaa", DiffHunk: "@@ -10,2 +10,3 @@ func f() {\n \tx := g()\n+\tuse(x)"}},
		}},
		RequestedReviewers: []string{"Copilot", "bob", "core"},
		Labels:             []string{"converge", "needs: review"},
		Commits: []forge.Commit{
			{SHA: "aaaa", Message: "first", Parents: []string{"0000"}, CommittedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
			{SHA: "bbbb", Message: "second", Parents: []string{"aaaa"}, CommittedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		},
		// Three commits, two read: an absent SHA proves nothing.
		CommitsComplete: false,
		IssueComments: []forge.IssueComment{
			{ID: 5000000001, NodeID: "IC_1", Author: "bob", Body: "Please also update the docs.", CreatedAt: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
			{ID: 5000000002, NodeID: "IC_2", Body: "ghost", CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		},
		CloneURL:   "https://ghe.example.com/octo/hello.git",
		ObservedAt: time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC),
		Requests:   1,
		// What the query said it cost (its rateLimit; no headers here).
		Spend: forge.Spend{Calls: 1, Points: 1, Resource: "graphql",
			Budget: forge.RateBudget{Remaining: 4999, ResetAt: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)}},
	}
	if !reflect.DeepEqual(pr, want) {
		g, _ := json.MarshalIndent(pr, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("observation differs\n got: %s\nwant: %s", g, w)
	}
}

// TestPR_O1_ObserveBoundsDiffHunks: a thread's hunk as GitHub gives it
// (from the hunk's start to the commented range, here 300 lines) comes
// back as its last lines, at least the range the thread is on, under a
// header that starts where they do.
func TestPR_O1_ObserveBoundsDiffHunks(t *testing.T) {
	reg := httpmock.New(t)
	t0 := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	hunk := "@@ -0,0 +1,400 @@"
	for i := 1; i <= 300; i++ {
		hunk += fmt.Sprintf("\n+line %d", i)
	}
	short, wide := comment("PRRC_1", 1, "Copilot", "x", t0), comment("PRRC_2", 2, "Copilot", "y", t0)
	short["diffHunk"], wide["diffHunk"] = hunk, hunk
	th1, th2 := thread("PRRT_1", []any{short}, false), thread("PRRT_2", []any{wide}, false)
	th1["line"], th1["originalLine"], th1["originalStartLine"] = 300, 300, 299
	th2["line"], th2["originalLine"], th2["originalStartLine"] = 300, 300, 201
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(observeFixture([]any{th1, th2}, page(false, ""))))
	c, _ := newTestClient(t, reg)
	pr, err := c.Observe(context.Background(), testRef)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		header string
		lines  int
	}{{"@@ -0,0 +261,140 @@", forge.DiffHunkLines}, {"@@ -0,0 +201,200 @@", 100}} {
		got := strings.Split(pr.Threads[i].Comments[0].DiffHunk, "\n")
		if got[0] != want.header || len(got)-1 != want.lines || got[len(got)-1] != "+line 300" {
			t.Errorf("thread %d: hunk of %d lines under %q ending %q; want %d under %q ending +line 300", i, len(got)-1, got[0], got[len(got)-1], want.lines, want.header)
		}
	}
}

func TestPR_O1_PaginatesThreadsPastOneHundred(t *testing.T) {
	reg := httpmock.New(t)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	mk := func(from, to int) []any {
		var out []any
		for i := from; i < to; i++ {
			id := fmt.Sprintf("T%03d", i)
			out = append(out, thread(id, []any{comment(id+"_c0", int64(i), "Copilot", "x", t0)}, false))
		}
		return out
	}
	first := mk(0, 100)
	// Thread T005 has 230 comments: one full page in the observation, then
	// two follow-up pages.
	var cs []any
	for i := range 100 {
		cs = append(cs, comment(fmt.Sprintf("T005_c%d", i), int64(i), "bob", "y", t0))
	}
	first[5] = thread("T005", cs, true)
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(observeFixture(first, page(true, "CUR100"))))
	reg.GraphQL("PullRequestThreadsPage", httpmock.GraphQLData(map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"reviewThreads": map[string]any{"pageInfo": page(true, "CUR200"), "nodes": mk(100, 200)}}}}))
	reg.GraphQL("PullRequestThreadsPage", httpmock.GraphQLData(map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"reviewThreads": map[string]any{"pageInfo": page(false, "CUR250"), "nodes": mk(200, 250)}}}}))
	commentsPage := func(from, to int, more bool, cur string) map[string]any {
		var nodes []any
		for i := from; i < to; i++ {
			nodes = append(nodes, comment(fmt.Sprintf("T005_c%d", i), int64(i), "bob", "y", t0))
		}
		return map[string]any{"node": map[string]any{"comments": map[string]any{"pageInfo": page(more, cur), "nodes": nodes}}}
	}
	reg.GraphQL("ThreadCommentsPage", httpmock.GraphQLData(commentsPage(100, 200, true, "C_T005_2")))
	reg.GraphQL("ThreadCommentsPage", httpmock.GraphQLData(commentsPage(200, 230, false, "C_T005_3")))
	c, _ := newTestClient(t, reg)

	pr, err := c.Observe(context.Background(), testRef)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if len(pr.Threads) != 250 {
		t.Fatalf("threads = %d, want 250", len(pr.Threads))
	}
	for i, th := range pr.Threads {
		if want := fmt.Sprintf("T%03d", i); th.ID != want {
			t.Fatalf("thread %d = %s, want %s (order kept)", i, th.ID, want)
		}
	}
	if n := len(pr.Threads[5].Comments); n != 230 {
		t.Errorf("T005 comments = %d, want 230", n)
	}
	if pr.Requests != 5 {
		t.Errorf("Requests = %d, want 5 (1 observe + 2 thread pages + 2 comment pages)", pr.Requests)
	}
	// Cursors are passed on.
	var afters []any
	for _, g := range reg.GraphQLSent() {
		if a, ok := g.Variables["after"]; ok {
			afters = append(afters, a)
		}
	}
	if want := []any{"CUR100", "CUR200", "C_T005_1", "C_T005_2"}; !reflect.DeepEqual(afters, want) {
		t.Errorf("after cursors = %v, want %v", afters, want)
	}
}

func TestPR_O1_ObserveNotFound(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("PullRequestObservation", httpmock.JSON(200, map[string]any{
		"data": map[string]any{"repository": map[string]any{"pullRequest": nil}},
		"errors": []any{map[string]any{"type": "NOT_FOUND", "path": []any{"repository", "pullRequest"},
			"message": "Could not resolve to a PullRequest with the number of 7."}},
	}))
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(map[string]any{"repository": nil}))
	c, _ := newTestClient(t, reg)
	for range 2 {
		_, err := c.Observe(context.Background(), testRef)
		if forge.KindOf(err) != forge.KindNotFound {
			t.Errorf("err = %v (kind %v), want not-found", err, forge.KindOf(err))
		}
	}
}
