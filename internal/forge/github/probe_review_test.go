package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_O1_ProbeNeverHidesAReviewAfterAWholeRead: a whole read made
// without a probe while Copilot works (after an act, as the loop does),
// then Copilot's review and the end of its request within the same
// second: the PR's REST answer is again byte for byte the one the last
// probe's ETag was taken on (updated_at has one-second granularity, and
// the request is gone again). The next probe must read whole and see the
// review, not answer 304 with the read that has none. It did, for up to
// probeMaxAge: the fleet's test hung on it under the race detector.
func TestPR_O1_ProbeNeverHidesAReviewAfterAWholeRead(t *testing.T) {
	hub, c, ref := copilotRequestedAfterAProbe(t)
	ctx := context.Background()
	whole, err := c.Observe(ctx, ref) // a whole read, no probe, while Copilot works
	if err != nil {
		t.Fatal(err)
	}
	// On a loaded machine the review may already be in this read, or land
	// a second later (updated_at then moves): the A-B-A needs all of it
	// within one second. TestPR_O1_UnchangedPollCostsOneRequestAndNoPoints
	// holds the rule itself whatever the timing.
	t.Logf("whole read while Copilot works: %d reviews", len(whole.Reviews))
	waitReviews(t, hub, ref.Number, 1)
	pr, cost := observeCost(t, hub, c, ref)
	if pr.Unchanged || len(pr.Reviews) != 1 {
		t.Fatalf("after the review: unchanged %v, %d reviews, cost %+v: want a whole read with the review", pr.Unchanged, len(pr.Reviews), cost)
	}
}

// waitReviews waits, on the emulator's events, until PR n has want reviews.
func waitReviews(t *testing.T, hub *fakehub.Hub, n, want int) {
	t.Helper()
	events, cancel := hub.Subscribe()
	defer cancel()
	deadline := time.After(time.Minute)
	for {
		if st, err := hub.PR("acme", "widget", n); err == nil && st.Reviews >= want {
			return
		}
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("PR %d: no %d reviews at the forge after a minute", n, want)
		}
	}
}

// TestPR_O1_ProbeNeverHidesAReviewItRequested: the probe's ETag taken,
// converge requests Copilot's review, Copilot answers and leaves within
// the second: the PR's REST answer is the one the ETag was taken on. The
// next probe must read whole. (The fleet's test hung on this, unraced.)
func TestPR_O1_ProbeNeverHidesAReviewItRequested(t *testing.T) {
	hub, c, ref := copilotRequestedAfterAProbe(t)
	waitReviews(t, hub, ref.Number, 1)
	pr, cost := observeCost(t, hub, c, ref)
	if pr.Unchanged || len(pr.Reviews) != 1 {
		t.Fatalf("after the review: unchanged %v, %d reviews, cost %+v: want a whole read with the review", pr.Unchanged, len(pr.Reviews), cost)
	}
}

// copilotRequestedAfterAProbe is a PR with settled CI and a clean scripted
// Copilot round, observed until the probe holds its ETag, then Copilot's
// review requested through the client.
func copilotRequestedAfterAProbe(t *testing.T) (*fakehub.Hub, *ghclient.Client, forge.PRRef) {
	t.Helper()
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	if err := hub.SetCopilotScript("acme", "widget", ref.Number, fakehub.CopilotScript{Rounds: []fakehub.CopilotRound{{}}}); err != nil {
		t.Fatal(err)
	}
	ciSucceeds(t, hub, ref)
	letTimePass(hub)
	first, _ := observeCost(t, hub, c, ref)
	observeCost(t, hub, c, ref) // takes the ETag
	if err := c.RequestReviews(ctx, first, nil, []string{"copilot-pull-request-reviewer[bot]"}); err != nil {
		t.Fatal(err)
	}
	return hub, c, ref
}

// TestPR_O1_ProbeNeverHidesAReviewWithinTheSecondOfItsETag: another actor
// (a human reviewer) requests Copilot's review after the probe took its
// ETag and the loop read whole, and Copilot answers and leaves, all within
// the second of the PR's last change (the hub's clock is frozen): the PR's
// REST answer is again the one the ETag was taken on. converge made no
// write to drop the ETag on; the ETag, dated within a second of updated_at,
// must not have been kept.
func TestPR_O1_ProbeNeverHidesAReviewWithinTheSecondOfItsETag(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	if err := hub.SetCopilotScript("acme", "widget", ref.Number, fakehub.CopilotScript{Rounds: []fakehub.CopilotRound{{}}}); err != nil {
		t.Fatal(err)
	}
	hub.FreezeClock()
	ciSucceeds(t, hub, ref)
	observeCost(t, hub, c, ref)
	read, _ := observeCost(t, hub, c, ref) // the probe's answer, and a whole read
	if len(read.Reviews) != 0 {
		t.Fatalf("before the request: %d reviews", len(read.Reviews))
	}
	rev := hubtest.Client(t, hub, hub.Tokens().Reviewer)
	if err := rev.RequestReviews(ctx, read, nil, []string{"copilot-pull-request-reviewer[bot]"}); err != nil {
		t.Fatal(err)
	}
	waitReviews(t, hub, ref.Number, 1)
	pr, cost := observeCost(t, hub, c, ref)
	if pr.Unchanged || len(pr.Reviews) != 1 {
		t.Fatalf("after the review: unchanged %v, %d reviews, cost %+v: want a whole read with the review", pr.Unchanged, len(pr.Reviews), cost)
	}
}
