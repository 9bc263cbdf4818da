package server

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/store"
)

// TestPR_T14_CINewsOnAVerdictsHeadRearmsItsPR: a status or check run on
// the head a finished PR's two-stable verdict proved starts a new run
// (which retracts the verdict if CI broke it); CI news on any other
// commit does not.
func TestPR_T14_CINewsOnAVerdictsHeadRearmsItsPR(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	proven := "https://github.com/acme/widget/pull/9"
	other := "https://github.com/acme/widget/pull/10"
	for i, pr := range []string{proven, other} {
		if err := r.st.PutRegistration(ctx, pr); err != nil {
			t.Fatal(err)
		}
		proof := `{"head_sha":"cafe0001"}`
		if i == 1 {
			proof = `{"head_sha":"beef0002"}`
		}
		if err := r.st.CreateRun(ctx, store.Run{ID: "r-" + pr[len(pr)-1:], Kind: "pr", Target: pr, Status: "two-stable",
			EndedAt: r.clock.Now(), Proof: []byte(proof)}); err != nil {
			t.Fatal(err)
		}
	}
	status := `{"sha":"cafe0001","state":"failure","context":"ci/integration","branches":[],"repository":{"full_name":"acme/widget"}}`
	if code := r.deliver(t, "status", "s-1", testSecret, status); code != http.StatusAccepted {
		t.Fatalf("status delivery: %d", code)
	}
	unrelated := `{"sha":"0000dead","state":"failure","context":"ci/integration","branches":[],"repository":{"full_name":"acme/widget"}}`
	if code := r.deliver(t, "status", "s-2", testSecret, unrelated); code != http.StatusAccepted {
		t.Fatalf("status delivery: %d", code)
	}
	r.settle()
	if got := r.loops.Registered(); !slices.Equal(got, []string{proven}) {
		t.Fatalf("registered %v, want only %s, whose verdict is on the commit CI reported on", got, proven)
	}
	check := `{"action":"rerequested","check_run":{"head_sha":"beef0002","pull_requests":[],"check_suite":{"head_branch":""}},"repository":{"full_name":"acme/widget"}}`
	if code := r.deliver(t, "check_run", "c-1", testSecret, check); code != http.StatusAccepted {
		t.Fatalf("check_run delivery: %d", code)
	}
	r.settle()
	if got := r.loops.Registered(); !slices.Equal(got, []string{other, proven}) { // sorted
		t.Fatalf("registered %v after a re-run on %s's head", got, other)
	}
}

// TestPR_T14_NewsWhileALoopRunsIsNotLost: news on a PR whose loop is live
// only wakes it; once that loop ended two-stable on an observation
// older than the news, the news rearms the PR. News the proof's
// observation already read does not.
func TestPR_T14_NewsWhileALoopRunsIsNotLost(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	for _, pr := range []string{prA, prB} {
		if err := r.st.PutRegistration(ctx, pr); err != nil {
			t.Fatal(err)
		}
	}
	// Both loops are live (the rig's runs); a new review on each.
	r.deliver(t, "pull_request_review", "d-1", testSecret, reviewPayload(7))
	r.deliver(t, "pull_request_review", "d-2", testSecret, reviewPayload(8))
	r.settle()
	if len(r.loops.Registered()) != 0 {
		t.Fatalf("a live loop's PR was registered again: %v", r.loops.Registered())
	}
	// Both end two-stable: prA's proof observed before the news, prB's
	// well after it.
	news := r.clock.Now()
	for i, c := range []struct {
		target   string
		observed time.Time
	}{{prA, news.Add(-time.Minute)}, {prB, news.Add(time.Minute)}} {
		proof := `{"head_sha":"aaa111","observed_at":"` + c.observed.UTC().Format(time.RFC3339Nano) + `"}`
		if err := r.st.CreateRun(ctx, store.Run{ID: "r-" + itoa(i), Kind: "pr", Target: c.target, Status: "two-stable",
			EndedAt: news, Proof: []byte(proof)}); err != nil {
			t.Fatal(err)
		}
	}
	endLoopsThenRearm(t, r, "the news kept while prA's loop ran never rearmed it")
	if got := r.loops.Registered(); !slices.Equal(got, []string{prA}) {
		t.Fatalf("registered %v, want only %s (prB's proof read the news)", got, prA)
	}
}

// TestPR_T14_NewsAfterAProofIsNotLostBehindOlderNews: news on a live
// loop's PR, then a proof observed after it, then more news before the
// loop ends: the proof read the first news but not the last, and the
// PR is rearmed (under load the two may be minutes apart).
func TestPR_T14_NewsAfterAProofIsNotLostBehindOlderNews(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	if err := r.st.PutRegistration(ctx, prA); err != nil {
		t.Fatal(err)
	}
	r.deliver(t, "pull_request_review", "d-1", testSecret, reviewPayload(7))
	r.settle()
	r.clock.Advance(time.Minute)
	observed := r.clock.Now()
	r.clock.Advance(time.Minute)
	r.deliver(t, "pull_request_review", "d-2", testSecret, reviewPayload(7))
	r.settle()
	if len(r.loops.Registered()) != 0 {
		t.Fatalf("a live loop's PR was registered again: %v", r.loops.Registered())
	}
	proof := `{"head_sha":"aaa111","observed_at":"` + observed.UTC().Format(time.RFC3339Nano) + `"}`
	if err := r.st.CreateRun(ctx, store.Run{ID: "r-1", Kind: "pr", Target: prA, Status: "two-stable",
		EndedAt: r.clock.Now(), Proof: []byte(proof)}); err != nil {
		t.Fatal(err)
	}
	endLoopsThenRearm(t, r, "news that came after the proof was observed never rearmed the PR: the older news hid it")
}

// TestPR_T14_AFailedRearmIsTriedAgain: news on a finished two-stable PR
// whose registration fails (its clone could not be read) is kept and
// tried again after a back-off until a registration succeeds: the
// retraction it may call for is never lost to a passing fault.
func TestPR_T14_AFailedRearmIsTriedAgain(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	proven := "https://github.com/acme/widget/pull/9"
	if err := r.st.PutRegistration(ctx, proven); err != nil {
		t.Fatal(err)
	}
	if err := r.st.CreateRun(ctx, store.Run{ID: "r-9", Kind: "pr", Target: proven, Status: "two-stable",
		EndedAt: r.clock.Now(), Proof: []byte(`{"head_sha":"cafe0001"}`)}); err != nil {
		t.Fatal(err)
	}
	r.loops.mu.Lock()
	r.loops.failNext = 3
	r.loops.mu.Unlock()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.srv.runPending(runCtx) }()
	defer func() { cancel(); <-done }()
	status := `{"sha":"cafe0001","state":"failure","context":"ci/integration","branches":[],"repository":{"full_name":"acme/widget"}}`
	if code := r.deliver(t, "status", "s-1", testSecret, status); code != http.StatusAccepted {
		t.Fatalf("status delivery: %d", code)
	}
	r.settle()
	deadline := time.After(time.Minute)
	for len(r.loops.Registered()) == 0 {
		r.clock.Advance(pendingEvery)
		select {
		case <-deadline:
			r.loops.mu.Lock()
			defer r.loops.mu.Unlock()
			t.Fatalf("the PR was never registered after %d failed tries", r.loops.failed)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.loops.mu.Lock()
	failed := r.loops.failed
	r.loops.mu.Unlock()
	if got := r.loops.Registered(); failed != 3 || !slices.Equal(got, []string{proven}) {
		t.Fatalf("registered %v after %d failures; want %s once, after 3", got, failed, proven)
	}
}

// endLoopsThenRearm ends the rig's live loops and runs the deferred news
// on the test's clock until a PR is registered again, failing with why
// when none is within a minute.
func endLoopsThenRearm(t *testing.T, r *rig, why string) {
	t.Helper()
	r.loops.mu.Lock()
	r.loops.runs = nil
	r.loops.mu.Unlock()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.srv.runPending(runCtx) }()
	defer func() { cancel(); <-done }()
	deadline := time.After(time.Minute)
	for len(r.loops.Registered()) == 0 {
		r.clock.Advance(pendingEvery)
		select {
		case <-deadline:
			t.Fatal(why)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
