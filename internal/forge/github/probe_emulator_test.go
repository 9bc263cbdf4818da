package github_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// observeCost observes ref with probing allowed and returns what the
// emulator counted for it.
func observeCost(t *testing.T, hub *fakehub.Hub, c forge.Forge, ref forge.PRRef) (*forge.PullRequest, fakehub.Counts) {
	t.Helper()
	before := hub.CountsFor(fakehub.LoginAuthor)
	pr, err := c.Observe(forge.WithProbe(context.Background()), ref)
	if err != nil {
		t.Fatal(err)
	}
	return pr, hub.CountsFor(fakehub.LoginAuthor).Sub(before)
}

// TestPR_O1_UnchangedPollCostsOneRequestAndNoPoints: once the probe holds
// an ETag, a poll of an unchanged PR whose CI finished is one conditional
// REST request answered 304 — no GraphQL, nothing on the primary limit —
// and hands back the last whole read marked Unchanged. Any change the PR
// endpoint shows (a label here) brings a whole read again.
func TestPR_O1_UnchangedPollCostsOneRequestAndNoPoints(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	ciSucceeds(t, hub, ref)
	letTimePass(hub)

	first, cost := observeCost(t, hub, c, ref)
	if first.Unchanged || cost.GraphQLQuery != 1 || cost.RESTGet != 0 {
		t.Fatalf("first observation: unchanged %v, cost %+v: want one whole GraphQL read", first.Unchanged, cost)
	}
	// The second takes the ETag, before reading whole again.
	if pr, cost := observeCost(t, hub, c, ref); pr.Unchanged || cost.GraphQLQuery != 1 || cost.RESTGet != 1 {
		t.Fatalf("second observation: unchanged %v, cost %+v", pr.Unchanged, cost)
	}
	for i := range 3 {
		pr, cost := observeCost(t, hub, c, ref)
		if !pr.Unchanged || cost.Requests() != 1 || cost.NotModified != 1 || cost.PrimaryPoints() != 0 || pr.Requests != 1 {
			t.Fatalf("unchanged poll %d: unchanged %v, cost %+v (client says %d): want 1 request, a 304, 0 points", i, pr.Unchanged, cost, pr.Requests)
		}
		if pr.HeadSHA != first.HeadSHA || pr.Checks.State != forge.CISuccess || len(pr.Threads) != len(first.Threads) {
			t.Fatalf("unchanged poll %d handed back %+v, want the last whole read", i, pr)
		}
	}

	rev := hubtest.Client(t, hub, hub.Tokens().Reviewer)
	if err := rev.AddLabels(ctx, ref, "needs-work"); err != nil {
		t.Fatal(err)
	}
	letTimePass(hub)
	pr, cost := observeCost(t, hub, c, ref)
	if pr.Unchanged || cost.GraphQLQuery != 1 || !hasLabel(pr, "needs-work") {
		t.Fatalf("after a label: unchanged %v, labels %v, cost %+v: want a whole read that sees it", pr.Unchanged, pr.Labels, cost)
	}
	if pr, cost := observeCost(t, hub, c, ref); !pr.Unchanged || cost.Requests() != 1 || cost.PrimaryPoints() != 0 {
		t.Fatalf("unchanged again: unchanged %v, cost %+v", pr.Unchanged, cost)
	}

	// Without WithProbe, Observe reads whole, as the Forge contract says.
	before := hub.CountsFor(fakehub.LoginAuthor)
	if pr, err := c.Observe(ctx, ref); err != nil || pr.Unchanged {
		t.Fatalf("plain Observe: %v, unchanged %v", err, pr != nil && pr.Unchanged)
	}
	if cost := hub.CountsFor(fakehub.LoginAuthor).Sub(before); cost.GraphQLQuery != 1 || cost.RESTGet != 0 {
		t.Fatalf("plain Observe cost %+v: want one GraphQL read and no probe", cost)
	}
	// A plain Observe drops the probe's ETags: they stand for the PR as
	// it was before what that read saw (TestPR_O1_ProbeNeverHidesAReviewAfterAWholeRead).
	// The next poll takes them again with a whole read; the one after is
	// a probe again.
	if pr, cost := observeCost(t, hub, c, ref); pr.Unchanged || cost.GraphQLQuery != 1 || cost.RESTGet != 1 {
		t.Fatalf("after a plain Observe: unchanged %v, cost %+v: want the ETag taken and a whole read", pr.Unchanged, cost)
	}
	if pr, cost := observeCost(t, hub, c, ref); !pr.Unchanged || cost.Requests() != 1 {
		t.Fatalf("then: unchanged %v, cost %+v: want the probe's 304", pr.Unchanged, cost)
	}
}

// TestPR_O1_ProbeWatchesUnfinishedCI: while the head's CI has not
// finished, the probe also asks the head's statuses and check runs
// (conditional, free when unchanged), so a check finishing is never
// handed back as unchanged.
func TestPR_O1_ProbeWatchesUnfinishedCI(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	st, _ := hub.PR("acme", "widget", ref.Number)
	ci := hubtest.Client(t, hub, hub.Tokens().CI)
	if err := ci.SetCommitStatus(ctx, ref, st.HeadSHA, forge.CommitStatus{State: forge.StatusPending, Context: "ci/test"}); err != nil {
		t.Fatal(err)
	}
	letTimePass(hub)
	observeCost(t, hub, c, ref)
	observeCost(t, hub, c, ref)
	observeCost(t, hub, c, ref) // the CI witnesses take their ETags
	pr, cost := observeCost(t, hub, c, ref)
	if !pr.Unchanged || cost.Requests() != 3 || cost.NotModified != 3 || cost.PrimaryPoints() != 0 {
		t.Fatalf("pending CI, unchanged: unchanged %v, cost %+v: want 3 conditional requests, all 304, 0 points", pr.Unchanged, cost)
	}
	if err := ci.SetCommitStatus(ctx, ref, st.HeadSHA, forge.CommitStatus{State: forge.StatusFailure, Context: "ci/test"}); err != nil {
		t.Fatal(err)
	}
	pr, cost = observeCost(t, hub, c, ref)
	if pr.Unchanged || pr.Checks.State != forge.CIFailure || cost.GraphQLQuery != 1 {
		t.Fatalf("after CI failed: unchanged %v, checks %s, cost %+v: want a whole read showing FAILURE", pr.Unchanged, pr.Checks.State, cost)
	}
	// Settled now: the PR endpoint alone.
	if pr, cost := observeCost(t, hub, c, ref); !pr.Unchanged || cost.Requests() != 1 {
		t.Fatalf("settled CI: unchanged %v, cost %+v: want one request", pr.Unchanged, cost)
	}
}

// TestPR_O1_ProbeFailsClosed: a probe that cannot answer proves nothing:
// the observation reads whole.
func TestPR_O1_ProbeFailsClosed(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	observeCost(t, hub, c, ref)
	observeCost(t, hub, c, ref)
	hub.InjectFault("/api/v3/repos/acme/widget/pulls/1", http.StatusNotFound, 1)
	pr, cost := observeCost(t, hub, c, ref)
	if pr.Unchanged || cost.GraphQLQuery != 1 {
		t.Fatalf("a failed probe: unchanged %v, cost %+v: want a whole read", pr.Unchanged, cost)
	}
}

func hasLabel(pr *forge.PullRequest, l string) bool {
	for _, x := range pr.Labels {
		if x == l {
			return true
		}
	}
	return false
}

// TestPR_O1_ProbeKeepsItsConnection: a probe answered 200 (the PR
// changed) reads its body to the end, so the client's connection goes
// back to the pool; polls of a changing PR open no new connection to the
// forge (each would be a TLS handshake).
func TestPR_O1_ProbeKeepsItsConnection(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	rev := hubtest.Client(t, hub, hub.Tokens().Reviewer)
	for i := range 2 { // both clients connected, the probe's ETags taken
		if err := rev.AddLabels(ctx, ref, fmt.Sprintf("warm-%d", i)); err != nil {
			t.Fatal(err)
		}
		observeCost(t, hub, c, ref)
	}
	before := hub.Connections()
	for i := range 5 {
		if err := rev.AddLabels(ctx, ref, fmt.Sprintf("change-%d", i)); err != nil {
			t.Fatal(err)
		}
		if pr, cost := observeCost(t, hub, c, ref); pr.Unchanged || cost.RESTGet == 0 {
			t.Fatalf("poll %d after a change: unchanged %v, cost %+v: want the probe answered 200 and a whole read", i, pr.Unchanged, cost)
		}
	}
	if n := hub.Connections() - before; n != 0 {
		t.Errorf("5 polls of a changing PR opened %d new connections, want 0: the probe's connection is not reused", n)
	}
}
