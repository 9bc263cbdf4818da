package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_O2_ProbeNeverStandsInForAnUnsettledRead drives the lag fault and
// the change probe by hand on the real loop, client and emulator: Copilot's
// review lands with its comment lagging 3 reads behind it. Every
// observation on which the loop counts a read of the unsettled review is a
// whole read (a 304 cannot show lagged comments appear), so the comment
// shows within the bounded reads and the loop never re-requests past a
// review whose threads it has not seen.
func TestPR_O2_ProbeNeverStandsInForAnUnsettledRead(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	hub.SetReviewLag(3)
	pr, err := c.Observe(ctx, ref) // the probe's first whole read
	if err != nil {
		t.Fatal(err)
	}
	if err := hubtest.Client(t, hub, hub.Tokens().CI).SetCommitStatus(ctx, ref, pr.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: "ci/test"}); err != nil {
		t.Fatal(err)
	}
	asked := time.Now().Add(-time.Second)
	if err := c.RequestReviews(ctx, pr, nil, []string{copilot.New().RequestLogin()}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		// The emulator's own view is not a read: the lag clock stands.
		if s, _ := hub.PR("acme", "widget", ref.Number); s.Reviews > 0 && s.Threads > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Copilot's review never landed")
		}
		time.Sleep(20 * time.Millisecond) // waits for a condition, bounded
	}
	now := time.Now()
	st := prloop.State{Phase: prloop.PhaseAwaitReview, Round: 1, StartedAt: asked, InitialHead: pr.HeadSHA, LastLoopSHA: pr.HeadSHA,
		HeadSeen: pr.HeadSHA, HeadSeenAt: asked, LastActivityAt: asked, InitialDiffLines: 1,
		Request: prloop.ReviewRequest{At: asked, Head: pr.HeadSHA, ForgeAt: asked, EventMarkSet: true, Started: true},
		Rounds:  []prloop.RoundRecord{{N: 1, HeadSHA: pr.HeadSHA, StartedAt: asked}}}
	l := frugalLoop(t, hub, c, ref)
	counted := 0
	for i := range 12 {
		obs, err := l.Observe(ctx, st, engine.Input[*prloop.ActResult]{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		next, acts, _ := l.Decide(st, obs)
		if next.UnsettledCount != st.UnsettledCount || next.UnsettledReview != st.UnsettledReview {
			counted++
			if obs.PR.Unchanged {
				t.Fatalf("step %d counted read %d of unsettled review %s on a probed observation", i, next.UnsettledCount, next.UnsettledReview)
			}
		}
		if len(obs.PR.Threads) > 0 {
			if counted == 0 {
				t.Fatal("the lag fault never held the comment back: the test proves nothing")
			}
			return // the comment showed within the bounded reads
		}
		for _, a := range acts {
			if a.Kind != prloop.ActWait {
				t.Fatalf("step %d planned %s %s before the lagging comment showed (state %s, unsettled %d)", i, a.Kind, a.Key, next.Phase, next.UnsettledCount)
			}
		}
		if next.Phase != prloop.PhaseAwaitReview {
			t.Fatalf("step %d left %s for %s before the lagging comment showed (unsettled %d)", i, prloop.PhaseAwaitReview, next.Phase, next.UnsettledCount)
		}
		st = next
	}
	t.Fatal("the lagging comment never showed in 12 observations")
}
