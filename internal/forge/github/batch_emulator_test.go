package github_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
)

// manyThreads opens n review threads on the PR as the human reviewer, in
// one review, and returns their ids as the client observes them.
func manyThreads(t *testing.T, hub *fakehub.Hub, c *ghclient.Client, ref forge.PRRef, n int) []string {
	t.Helper()
	rev, err := gh.NewClient(gh.WithHTTPClient(hub.HTTPClient()), gh.WithAuthToken(hub.Tokens().Reviewer), gh.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	var cs []*gh.DraftReviewComment
	for i := range n {
		cs = append(cs, &gh.DraftReviewComment{Path: new("main.go"), Line: new(1 + i%5), Body: new(fmt.Sprintf("finding %d", i))})
	}
	if _, _, err := rev.PullRequests.CreateReview(context.Background(), ref.Owner, ref.Repo, ref.Number, &gh.PullRequestReviewRequest{Event: new("COMMENT"), Comments: cs}); err != nil {
		t.Fatal(err)
	}
	pr, err := c.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, th := range pr.Threads {
		ids = append(ids, th.ID)
	}
	if len(ids) != n {
		t.Fatalf("%d threads observed, want %d", len(ids), n)
	}
	return ids
}

// TestPR_S12_BatchedRepliesAndResolvesCostTwoWrites: 50 replies in one
// GraphQL request, 50 resolves in one more, each answered per item; the
// emulator counts 2 write requests and 100 mutations, and shows every
// thread replied to and resolved.
func TestPR_S12_BatchedRepliesAndResolvesCostTwoWrites(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ids := manyThreads(t, hub, c, ref, 50)
	ctx := context.Background()
	before := hub.CountsFor(fakehub.LoginAuthor)
	var replies []forge.ThreadReply
	for _, id := range ids {
		replies = append(replies, forge.ThreadReply{ThreadID: id, Body: "done <!-- marker " + id + " -->"})
	}
	res := c.ReplyToThreads(ctx, ref, replies)
	for i, r := range res {
		if r.Err != nil || r.Comment.ID == "" || !strings.Contains(r.Comment.Body, ids[i]) {
			t.Fatalf("reply %d: %+v", i, r)
		}
	}
	for i, err := range c.ResolveThreads(ctx, ref, ids) {
		if err != nil {
			t.Fatalf("resolve %d: %v", i, err)
		}
	}
	cost := hub.CountsFor(fakehub.LoginAuthor).Sub(before)
	if cost.Writes() != 2 || cost.Mutations != 100 || cost.Requests() != 2 {
		t.Fatalf("50 replies and resolves cost %+v: want 2 write requests holding 100 mutations", cost)
	}
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range pr.Threads {
		if !th.IsResolved || len(th.Comments) != 2 || th.Comments[1].Author != fakehub.LoginAuthor {
			t.Fatalf("thread %s: resolved %v, %d comments", th.ID, th.IsResolved, len(th.Comments))
		}
	}
}

// TestPR_S12_BatchAnswersPerItem: an item GitHub refuses fails alone, the
// others land in the same request; past MaxBatch a second request
// carries the rest.
func TestPR_S12_BatchAnswersPerItem(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ids := manyThreads(t, hub, c, ref, ghclient.MaxBatch+1)
	ctx := context.Background()
	before := hub.CountsFor(fakehub.LoginAuthor)
	replies := []forge.ThreadReply{{ThreadID: ids[0], Body: "a"}, {ThreadID: "PRRT_nope", Body: "b"}, {ThreadID: ids[1], Body: "c"}}
	res := c.ReplyToThreads(ctx, ref, replies)
	if res[0].Err != nil || res[2].Err != nil || res[0].Comment.Body != "a" || res[2].Comment.Body != "c" {
		t.Fatalf("good items: %+v %+v", res[0], res[2])
	}
	if res[1].Err == nil || res[1].Comment.ID != "" || forge.KindOf(res[1].Err) != forge.KindNotFound {
		t.Fatalf("the refused item: %+v (kind %v), want a not-found error and no comment", res[1], forge.KindOf(res[1].Err))
	}
	if cost := hub.CountsFor(fakehub.LoginAuthor).Sub(before); cost.Writes() != 1 || cost.Mutations != 3 {
		t.Fatalf("cost %+v: want one request of 3 mutations", cost)
	}

	before = hub.CountsFor(fakehub.LoginAuthor)
	errs := c.ResolveThreads(ctx, ref, ids)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("resolve %d: %v", i, err)
		}
	}
	if cost := hub.CountsFor(fakehub.LoginAuthor).Sub(before); cost.Writes() != 2 || cost.Mutations != ghclient.MaxBatch+1 {
		t.Fatalf("%d resolves cost %+v: want 2 requests", len(ids), cost)
	}
}
