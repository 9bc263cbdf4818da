package github_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_O1_ObservationSpendIsWhatGitHubSaid: every observation carries
// what it cost as GitHub's answers said it, point for point what the
// emulator charged by GitHub's published arithmetic: a whole read its
// GraphQL rateLimit.cost (never a guess) and the limit left after it; a
// probe answered 304 nothing on the primary limit; a probe answered 200
// one REST point besides the whole read.
func TestPR_O1_ObservationSpendIsWhatGitHubSaid(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ciSucceeds(t, hub, ref)
	letTimePass(hub)

	whole, cost := observeCost(t, hub, c, ref)
	sp := whole.Spend
	if cost.GraphQLPoints < 1 || sp.Points != cost.PrimaryPoints() || sp.Estimated != 0 || sp.Calls != cost.Requests() {
		t.Fatalf("a whole read: spend %+v, the emulator charged %+v: want its points, none estimated", sp, cost)
	}
	t.Logf("a whole read: %+v", sp)
	used := hub.CountsFor(fakehub.LoginAuthor).GraphQLPoints
	if sp.Resource != "graphql" || sp.Budget.Limit != 5000 || sp.Budget.Remaining != 5000-used || sp.Budget.Used != used || sp.Budget.ResetAt.IsZero() {
		t.Fatalf("a whole read's budget: %s %+v; want graphql, 5000, %d used", sp.Resource, sp.Budget, used)
	}

	// The next poll takes the probe's ETag (answered 200) and reads whole.
	_, cost = observeCost(t, hub, c, ref)
	if got := cost.PrimaryPoints(); got < 2 {
		t.Fatalf("the probe's first poll cost %+v", cost)
	}
	// Unchanged: one conditional request answered 304.
	pr, cost := observeCost(t, hub, c, ref)
	if !pr.Unchanged || cost.NotModified != 1 {
		t.Fatalf("an unchanged poll: unchanged %v, cost %+v", pr.Unchanged, cost)
	}
	if sp := pr.Spend; sp.Points != 0 || sp.Calls != 1 || sp.NotModified != 1 || sp.Resource != "core" || sp.Budget.Limit != 5000 {
		t.Fatalf("an unchanged poll's spend %+v: want one call answered 304, 0 points, the core limit read", sp)
	}
}

// TestPR_O1_MeterSeesEveryCallAtItsCost: a meter on the context (a run's,
// a poll's) is told every answered request, reads and writes: REST
// writes a point each on core, a mutation (which cannot ask its cost) the
// least GitHub charges, marked estimated; their sum is what the emulator
// charged.
func TestPR_O1_MeterSeesEveryCallAtItsCost(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	before := hub.CountsFor(fakehub.LoginAuthor)
	tally := &forge.Tally{}
	mctx := forge.WithMeter(ctx, tally)
	if err := c.AddLabels(mctx, ref, "ready"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIssueComment(mctx, ref, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviews(mctx, pr, []string{fakehub.LoginReviewer}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Observe(mctx, ref); err != nil {
		t.Fatal(err)
	}
	cost := hub.CountsFor(fakehub.LoginAuthor).Sub(before)
	sp := tally.Spend()
	if sp.Calls != cost.Requests() || sp.Points != cost.PrimaryPoints() {
		t.Fatalf("the meter saw %+v; the emulator charged %+v", sp, cost)
	}
	if sp.Estimated != 1 {
		t.Fatalf("estimated points %d: want the mutation's 1 alone", sp.Estimated)
	}
	// Outside the metered context nothing is told.
	if err := c.AddLabels(ctx, ref, "other"); err != nil {
		t.Fatal(err)
	}
	if got := tally.Spend(); got != sp {
		t.Fatalf("a call without the meter reached it: %+v", got)
	}
}

// TestPR_O1_RateIdentityIsTheLoginNeverTheToken: the identity spend is
// kept under names the token's user on its host, not the token.
func TestPR_O1_RateIdentityIsTheLoginNeverTheToken(t *testing.T) {
	hub, c, _ := emulatorPR(t)
	id, err := c.RateIdentity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(id, "/"+fakehub.LoginAuthor) || strings.Contains(id, hub.Tokens().Author) {
		t.Fatalf("identity %q: want HOST/%s, never the token", id, fakehub.LoginAuthor)
	}
}

// TestPR_O1_AppRateIdentityIsItsInstallation: an App's requests count
// against its installation's limits, so that is the identity spend is
// kept under: the installation's id, not a token it minted.
func TestPR_O1_AppRateIdentityIsItsInstallation(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	c, app, reg := appClient(t, hub, ref, nil)
	id, err := c.RateIdentity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/installation/%d", reg.Installation); !strings.HasSuffix(id, want) {
		t.Fatalf("identity %q: want HOST%s", id, want)
	}
	for _, tok := range app.Secrets() {
		if strings.Contains(id, tok) {
			t.Fatalf("identity %q holds a token", id)
		}
	}
}
