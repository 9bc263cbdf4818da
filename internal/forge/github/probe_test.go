package github

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

// TestPR_O1_ProbeStandsInForAWholeReadOnlyAWhile: a 304 hands back the
// last whole read only while it is younger than probeMaxAge; past it the
// PR is read whole again, whatever the probe said.
func TestPR_O1_ProbeStandsInForAWholeReadOnlyAWhile(t *testing.T) {
	reg := settledCIReads(t, 3)
	const pulls = "/api/v3/repos/octo/hello/pulls/7"
	// GitHub dates the answer two seconds after the PR's last change: its
	// ETag may stand for the PR (see TestPR_O1_AnETagWithinASecondOfAChangeIsNotKept).
	const date = "Wed, 04 Mar 2026 05:00:02 GMT"
	reg.REST("GET", pulls, httpmock.StringResponse(http.StatusOK, `{"updated_at":"2026-03-04T05:00:00Z"}`, "ETag", `W/"a"`, "Date", date))
	for range 3 {
		reg.REST("GET", pulls, httpmock.StringResponse(http.StatusNotModified, "", "ETag", `W/"a"`))
	}
	c, _ := newTestClient(t, reg)
	clock := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	ctx := forge.WithProbe(context.Background())
	observe := func(want bool) {
		t.Helper()
		pr, err := c.Observe(ctx, testRef)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Unchanged != want || pr.Checks.State != forge.CISuccess {
			t.Fatalf("unchanged %v, want %v (checks %s)", pr.Unchanged, want, pr.Checks.State)
		}
	}
	observe(false) // the first read: whole
	observe(false) // the ETag taken, read whole
	observe(true)  // 304: the last whole read
	clock = clock.Add(probeMaxAge + time.Second)
	observe(false) // 304, but the last whole read is too old
	observe(true)
	if got := reg.Requests()[3].Header.Get("If-None-Match"); got != `W/"a"` {
		t.Errorf("the probe sent If-None-Match %q, want the ETag it was given", got)
	}
}

// TestPR_O1_AnETagWithinASecondOfAChangeIsNotKept: an answer dated within
// etagSettle of the PR's updated_at may not show a review posted later in
// that second, so its ETag is not kept: the next poll reads whole and
// takes the ETag again, and only a settled one lets a poll answer 304.
// A missing Date or updated_at proves nothing either.
func TestPR_O1_AnETagWithinASecondOfAChangeIsNotKept(t *testing.T) {
	reg := settledCIReads(t, 4)
	const pulls = "/api/v3/repos/octo/hello/pulls/7"
	const body = `{"updated_at":"2026-03-04T05:00:00Z"}`
	reg.REST("GET", pulls, httpmock.StringResponse(http.StatusOK, body, "ETag", `W/"a"`, "Date", "Wed, 04 Mar 2026 05:00:01 GMT"))
	reg.REST("GET", pulls, httpmock.StringResponse(http.StatusOK, "{}", "ETag", `W/"a"`, "Date", "Wed, 04 Mar 2026 05:00:09 GMT"))
	reg.REST("GET", pulls, httpmock.StringResponse(http.StatusOK, body, "ETag", `W/"a"`, "Date", "Wed, 04 Mar 2026 05:00:02 GMT"))
	reg.REST("GET", pulls, httpmock.StringResponse(http.StatusNotModified, "", "ETag", `W/"a"`))
	c, _ := newTestClient(t, reg)
	c.now = func() time.Time { return time.Date(2026, 3, 4, 5, 0, 3, 0, time.UTC) }
	ctx := forge.WithProbe(context.Background())
	for i, want := range []bool{false, false, false, false, true} {
		pr, err := c.Observe(ctx, testRef)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Unchanged != want {
			t.Fatalf("poll %d: unchanged %v, want %v", i, pr.Unchanged, want)
		}
	}
	var sent []string
	for _, r := range reg.Requests() {
		if r.Path == pulls {
			sent = append(sent, r.Header.Get("If-None-Match"))
		}
	}
	if want := []string{"", "", "", `W/"a"`}; !slices.Equal(sent, want) {
		t.Errorf("the probes sent If-None-Match %q, want %q: only the ETag dated 2 s after updated_at kept", sent, want)
	}
}

// TestPR_O1_RequestingAReviewDropsTheETags: with a settled ETag kept,
// converge requests a review; the next probe asks without the ETag and
// reads whole. This holds beside the settle rule: should GitHub move
// neither updated_at nor anything else of the PR's answer on a request or
// a review, the review would still be read.
func TestPR_O1_RequestingAReviewDropsTheETags(t *testing.T) {
	reg := settledCIReads(t, 3)
	reg.GraphQL("RequestReviewsByLogin", httpmock.GraphQLData(map[string]any{"requestReviewsByLogin": map[string]any{"clientMutationId": nil}}))
	const pulls = "/api/v3/repos/octo/hello/pulls/7"
	settled := httpmock.StringResponse(http.StatusOK, `{"updated_at":"2026-03-04T05:00:00Z"}`, "ETag", `W/"a"`, "Date", "Wed, 04 Mar 2026 05:00:09 GMT")
	reg.REST("GET", pulls, settled)
	reg.REST("GET", pulls, settled)
	c, _ := newTestClient(t, reg)
	c.now = func() time.Time { return time.Date(2026, 3, 4, 5, 0, 10, 0, time.UTC) }
	ctx := forge.WithProbe(context.Background())
	var pr *forge.PullRequest
	for range 2 { // a whole read, then the ETag taken and a whole read
		var err error
		if pr, err = c.Observe(ctx, testRef); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RequestReviews(ctx, pr, nil, []string{"copilot-pull-request-reviewer[bot]"}); err != nil {
		t.Fatal(err)
	}
	after, err := c.Observe(ctx, testRef)
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, r := range reg.Requests() {
		if r.Path == pulls {
			sent = append(sent, r.Header.Get("If-None-Match"))
		}
	}
	if want := []string{"", ""}; after.Unchanged || !slices.Equal(sent, want) {
		t.Errorf("after the request: unchanged %v, the probes sent If-None-Match %q, want %q: the request drops the ETag", after.Unchanged, sent, want)
	}
}

// settledCIReads is a registry answering n whole reads of a PR whose
// head's one check finished: the probe asks the PR alone.
func settledCIReads(t *testing.T, n int) *httpmock.Registry {
	t.Helper()
	reg := httpmock.New(t)
	fix := settledCIFixture()
	for range n {
		reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(fix))
	}
	return reg
}

// settledCIFixture is a PR observation whose head's one check finished.
func settledCIFixture() map[string]any {
	fix := observeFixture(nil, page(false, ""))
	fix["repository"].(map[string]any)["pullRequest"].(map[string]any)["headCommit"] = map[string]any{"nodes": []any{map[string]any{"commit": map[string]any{
		"oid": "bbbb", "statusCheckRollup": map[string]any{"state": "SUCCESS", "contexts": map[string]any{"nodes": []any{
			map[string]any{"__typename": "CheckRun", "name": "build", "status": "COMPLETED", "conclusion": "SUCCESS"}}}}}}}}
	return fix
}
