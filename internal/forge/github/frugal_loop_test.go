package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// step is one engine step by hand: observe, decide, act in order; it
// returns the actions and what the emulator counted for the acts.
func step(t *testing.T, hub *fakehub.Hub, l *prloop.Loop, st prloop.State, now time.Time) (prloop.State, []prloop.Action, fakehub.Counts) {
	t.Helper()
	ctx := context.Background()
	obs, err := l.Observe(ctx, st, engine.Input[*prloop.ActResult]{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	next, acts, _ := l.Decide(st, obs)
	before := hub.CountsFor(fakehub.LoginAuthor)
	for _, a := range acts {
		if a.Kind == prloop.ActWait {
			continue
		}
		if _, err := l.Act(ctx, next, obs, a); err != nil {
			t.Fatalf("%s %s: %v", a.Kind, a.Key, err)
		}
	}
	return next, acts, hub.CountsFor(fakehub.LoginAuthor).Sub(before)
}

func frugalLoop(t *testing.T, hub *fakehub.Hub, c *ghclient.Client, ref forge.PRRef) *prloop.Loop {
	cfg := prloop.DefaultConfig()
	cfg.Bot = copilot.New()
	return prloop.NewLoop(ref, prloop.Deps{Forge: c, Journal: &prlooptest.Journal{}, Config: cfg})
}

// TestPR_S12_RoundOfFiftyThreadsCostsTwoWrites is issue 18's target on
// the real loop, client and emulator: a round's replies and resolves to
// 50 addressed threads are 2 write requests counted at the forge (was
// 100), every thread ends replied to once and resolved; the next step on
// the same state writes nothing (the markers prove the replies).
func TestPR_S12_RoundOfFiftyThreadsCostsTwoWrites(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ids := manyThreads(t, hub, c, ref, 50)
	st0, _ := hub.PR("acme", "widget", ref.Number)
	now := time.Now()
	st := prloop.State{Phase: prloop.PhaseReply, Round: 1, StartedAt: now, InitialHead: st0.HeadSHA, LastLoopSHA: st0.HeadSHA,
		HeadSeen: st0.HeadSHA, HeadSeenAt: now, LastActivityAt: now,
		Rounds: []prloop.RoundRecord{{N: 1, HeadSHA: st0.HeadSHA, StartedAt: now}}}
	for _, id := range ids {
		st.Threads = append(st.Threads, prloop.ThreadRecord{ThreadID: id, Round: 1, Disposition: prloop.DispAddressed, HeadSHA: st0.HeadSHA})
	}
	l := frugalLoop(t, hub, c, ref)
	_, acts, cost := step(t, hub, l, st, now)
	replies, resolves := 0, 0
	for _, a := range acts {
		switch a.Kind {
		case prloop.ActReply:
			replies++
		case prloop.ActResolve:
			resolves++
		}
	}
	if replies != 50 || resolves != 50 {
		t.Fatalf("the step planned %d replies and %d resolves, want 50 of each", replies, resolves)
	}
	if cost.Writes() != 2 || cost.Mutations != 100 {
		t.Fatalf("the round's replies and resolves cost %+v: want 2 write requests", cost)
	}
	pr, err := c.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range pr.Threads {
		if !th.IsResolved || len(th.Comments) != 2 {
			t.Fatalf("thread %s: resolved %v, %d comments", th.ID, th.IsResolved, len(th.Comments))
		}
	}
	// Idempotent: the same state again writes nothing.
	if _, _, cost := step(t, hub, l, st, now); cost.Writes() != 0 {
		t.Fatalf("the step again wrote %+v", cost)
	}
}

// TestPR_O1_IdleLoopPollCostsOneFreeRequest is the other target on the
// real loop: while the loop waits for a review that has started, a poll
// of the unchanged PR is one request answered 304 — no GraphQL, 0 primary
// points — and Decide still only waits.
func TestPR_O1_IdleLoopPollCostsOneFreeRequest(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	st0, _ := hub.PR("acme", "widget", ref.Number)
	if err := hubtest.Client(t, hub, hub.Tokens().CI).SetCommitStatus(context.Background(), ref, st0.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: "ci/test"}); err != nil {
		t.Fatal(err)
	}
	letTimePass(hub)
	now := time.Now()
	st := prloop.State{Phase: prloop.PhaseAwaitReview, Round: 1, StartedAt: now, InitialHead: st0.HeadSHA, LastLoopSHA: st0.HeadSHA,
		HeadSeen: st0.HeadSHA, HeadSeenAt: now, LastActivityAt: now, InitialDiffLines: 1,
		Request: prloop.ReviewRequest{At: now, Head: st0.HeadSHA, ForgeAt: now, EventMarkSet: true, Started: true},
		Rounds:  []prloop.RoundRecord{{N: 1, HeadSHA: st0.HeadSHA, StartedAt: now}}}
	l := frugalLoop(t, hub, c, ref)
	step(t, hub, l, st, now) // a whole read
	step(t, hub, l, st, now) // the probe takes its ETag
	for i := range 3 {
		before := hub.CountsFor(fakehub.LoginAuthor)
		_, acts, _ := step(t, hub, l, st, now)
		cost := hub.CountsFor(fakehub.LoginAuthor).Sub(before)
		if cost.Requests() != 1 || cost.NotModified != 1 || cost.PrimaryPoints() != 0 {
			t.Fatalf("idle poll %d cost %+v: want 1 request, a 304, 0 primary points", i, cost)
		}
		for _, a := range acts {
			if a.Kind != prloop.ActWait {
				t.Fatalf("idle poll %d planned %s", i, a.Kind)
			}
		}
	}
}
