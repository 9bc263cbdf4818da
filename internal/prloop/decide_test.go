package prloop

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/forge"
)

func TestPR_T1_TwoStableNeedsAllFourConjuncts(t *testing.T) {
	structural := []Finding{{ID: "T9", Verdict: "structural"}}
	tests := []struct {
		name     string
		mutate   func(s *State, pr *forge.PullRequest)
		terminal Reason
		acts     []string
	}{
		{"all four hold", func(*State, *forge.PullRequest) {}, ReasonTwoStable,
			[]string{"add-label " + LabelReady, "set-status success h1"}},
		// The head was reviewed already, so the next round asks for no
		// second review of it (PR-V5) and goes straight to its findings.
		{"(1) a structural finding this round", func(s *State, _ *forge.PullRequest) {
			s.Kept = structural
			s.ConsecutiveStructural = 1
			s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 2, Findings: []Finding{{ID: "L1", Path: "a.go", StartLine: 3, EndLine: 3, Summary: "nil dereference", Verdict: VerdictStructural, Source: "local"}}}}
		}, "", []string{"set-status pending h1", "fix round-3/fix"}},
		{"(2) CI failed: the failing check is the next round's finding (PR-V5)", func(_ *State, pr *forge.PullRequest) { pr.Checks = ciWith("COMPLETED", "FAILURE") }, "",
			[]string{"set-status pending h1", "fix round-3/fix"}},
		{"(2) CI pending", func(_ *State, pr *forge.PullRequest) { pr.Checks = ciWith("QUEUED", "") }, "",
			[]string{"wait"}},
		{"(2) no checks, none expected is not assumed", func(_ *State, pr *forge.PullRequest) { pr.Checks = forge.CheckRollup{} }, "",
			[]string{"wait"}},
		{"(3) an unresolved trusted thread", func(_ *State, pr *forge.PullRequest) {
			pr.Threads = append(pr.Threads, thread("T5", "bob", "please rename"))
		}, "", []string{"set-status pending h1", "fix round-3/fix"}},
		{"(4) no review of this head: re-requested after the back-off first", func(_ *State, pr *forge.PullRequest) {
			pr.Reviews = []forge.Review{okReview("R1", "h0", at(-5))}
		}, "", []string{"wait"}},
		{"(4) no review of this head, re-requests spent", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = []forge.Review{okReview("R1", "h0", at(-5))}
			s.NoSignalHead, s.NoSignalTries = "h1", 2
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"(4) only an error review of this head", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = []forge.Review{errReview("R2", "h1", at(1))}
			s.NoSignalHead, s.NoSignalTries = "h1", 2
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"(4) the latest review is of an older head, an older one is of this head", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = []forge.Review{okReview("R1", "h1", at(-5)), okReview("R2", "h0", at(1))}
			s.NoSignalHead, s.NoSignalTries = "h1", 2
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"(4) single-iteration mode never drops the conjunct", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = nil
			s.SingleIteration = true
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"(4) a review submitted before the loop's last push does not count", func(s *State, pr *forge.PullRequest) {
			s.PushedForgeAt, s.LastLoopSHA = at(1.5), "h1"
			s.NoSignalHead, s.NoSignalTries = "h1", 2
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"(4) a clean local review of the head is the independent review", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = nil
			s.SingleIteration = true
			s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 2}}
		}, ReasonTwoStable, []string{"add-label " + LabelReady, "set-status success h1"}},
		{"(4) a degraded local review is not", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = nil
			s.SingleIteration = true
			s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 2, Degraded: true}}
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"(4) a local review of another head is not", func(s *State, pr *forge.PullRequest) {
			pr.Reviews = nil
			s.SingleIteration = true
			s.LocalReviews = []LocalReviewRecord{{Head: "h0", Round: 1}}
		}, ReasonNoIndependentReview, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := verifying("h1", 2)
			pr := newPR("h1")
			pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
			tt.mutate(&s, pr)
			_, acts, term := Decide(s, obs(at(2), pr), cfg())
			wantTerminal(t, term, tt.terminal)
			wantActs(t, acts, tt.acts...)
		})
	}
}

func TestPR_T1_ConvergeOwnStatusIsNotCI(t *testing.T) {
	s := verifying("h1", 2)
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	pr.Checks = withConvergeStatus(green(), "pending")
	pr.Checks.State = "PENDING"
	_, _, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)

	c := cfg()
	c.ExpectNoChecks = true
	pr.Checks = withConvergeStatus(forge.CheckRollup{}, "pending")
	_, _, term = Decide(s, obs(at(2), pr), c)
	wantTerminal(t, term, ReasonTwoStable)
	if term.Proof.CIState != "none (no checks expected)" {
		t.Fatalf("ci state %q", term.Proof.CIState)
	}
}

func TestPR_T2_BlockedRemovesStaleReadyLabel(t *testing.T) {
	s := verifying("h1", 2)
	s.NoSignalHead, s.NoSignalTries = "h1", 2
	pr := newPR("h1")
	pr.Labels = []string{LabelReady}
	_, acts, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonNoIndependentReview)
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "remove-label "+LabelReady, "set-status error h1")
}

func TestPR_T2_PushedRoundGetsAnotherReviewFirst(t *testing.T) {
	// The round's head changed (converge pushed): the next round's review
	// of the new head may still come, so it is not blocked yet.
	s := verifying("h2", 2)
	s.Request.Head = "h1"
	pr := newPR("h2")
	_, acts, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h2", "request-review round-3/request-review")
}

func TestPR_S1_AlreadyTwoStableEndsAtOnce(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(pr *forge.PullRequest)
		terminal Reason
		acts     []string
	}{
		{"review of head, no threads, CI green", func(*forge.PullRequest) {}, ReasonTwoStable,
			[]string{"add-label " + LabelReady, "set-status success h1"}},
		{"a resolved thread and a hand-off a human resolved are no work", func(pr *forge.PullRequest) {
			done := copilotThread("T1", "x")
			done.IsResolved = true
			esc := thread("T2", "bob", "redesign this")
			esc.Comments = append(esc.Comments, forge.Comment{Author: self, Body: "Escalated\n" + Marker("T2", "h0", DispEscalated)})
			esc.IsResolved = true
			pr.Threads = []forge.Thread{done, esc}
		}, ReasonTwoStable, []string{"add-label " + LabelReady, "set-status success h1"}},
		// A head Copilot reviewed is not requested again (PR-V5): what
		// keeps it from success is said at once.
		{"an open hand-off keeps the run from success (PR-T11)", func(pr *forge.PullRequest) {
			esc := thread("T2", "bob", "redesign this")
			esc.Comments = append(esc.Comments, forge.Comment{Author: self, Body: "Escalated\n" + Marker("T2", "h0", DispEscalated)})
			pr.Threads = []forge.Thread{esc}
		}, ReasonHandedOff, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"the latest Copilot review is not of the head (PR-T1(4))", func(pr *forge.PullRequest) {
			pr.Reviews = append(pr.Reviews, okReview("R2", "h0", at(-10)))
		}, "", []string{"set-status pending h1", "request-review round-1/request-review"}},
		{"a trusted human requests changes (PR-T13)", func(pr *forge.PullRequest) {
			pr.Reviews = append(pr.Reviews, forge.Review{ID: "RH", Author: "bob", State: "CHANGES_REQUESTED", CommitSHA: "h1", SubmittedAt: at(-5)})
		}, ReasonHandedOff, []string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"a dismissed change request does not block", func(pr *forge.PullRequest) {
			pr.Reviews = append(pr.Reviews, forge.Review{ID: "RH", Author: "bob", State: "DISMISSED", CommitSHA: "h1", SubmittedAt: at(-5)})
		}, ReasonTwoStable, []string{"add-label " + LabelReady, "set-status success h1"}},
		{"review only of an older head", func(pr *forge.PullRequest) { pr.Reviews = []forge.Review{okReview("R0", "h0", at(-9))} }, "",
			[]string{"set-status pending h1", "request-review round-1/request-review"}},
		{"an open trusted thread", func(pr *forge.PullRequest) { pr.Threads = []forge.Thread{copilotThread("T1", "bug")} }, "",
			[]string{"set-status pending h1", "fix round-1/fix"}},
		{"CI still running", func(pr *forge.PullRequest) { pr.Checks = ciWith("IN_PROGRESS", "") }, "",
			[]string{"set-status pending h1", "wait"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := newPR("h1")
			pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30))}
			tt.mutate(pr)
			s, acts, term := Decide(State{}, obs(at(0), pr), cfg())
			wantTerminal(t, term, tt.terminal)
			wantActs(t, acts, tt.acts...)
			if term != nil && term.Reason == ReasonTwoStable && s.Round != 0 {
				t.Fatalf("a round started: %d", s.Round)
			}
		})
	}
}

func TestPR_S1_CountsStartOnlyOnNewEvent(t *testing.T) {
	c := cfg()
	tests := []struct {
		name       string
		now        float64
		eventMax   int64
		eventsRead bool
		started    bool
		acts       []string
	}{
		{"pending request, same event id: not started", 1, 100, true, false, []string{"wait"}},
		{"events not read: not started", 1, 0, false, false, []string{"wait"}},
		{"a new copilot_work_started id: started", 1, 101, true, true, []string{"wait"}},
		// Past the start window the existing review of the head is taken
		// only when no review started; a started one is awaited.
		{"after the window, not started: existing review accepted", 3, 100, true, false, nil},
		{"after the window, started: keep waiting", 3, 101, true, true, []string{"wait"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := awaiting("h1", 2, "R1")
			pr := newPR("h1")
			pr.RequestedReviewers = []string{"Copilot"}
			pr.Reviews = []forge.Review{okReview("R1", "h1", at(-20))}
			pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
			o := obs(at(tt.now), pr)
			o.BotStartedMax, o.EventsRead = tt.eventMax, tt.eventsRead
			s2, acts, _ := Decide(s, o, c)
			if tt.acts == nil {
				if s2.Request.Accepted != "R1" {
					t.Fatalf("accepted %q, want R1", s2.Request.Accepted)
				}
				wantActs(t, acts, "fix round-2/fix")
				return
			}
			wantActs(t, acts, tt.acts...)
			if s2.Request.Started != tt.started || s2.Request.Accepted != "" {
				t.Fatalf("started %v accepted %q", s2.Request.Started, s2.Request.Accepted)
			}
			if s2.WantsEvents() == tt.started {
				t.Fatalf("WantsEvents %v with started %v", s2.WantsEvents(), tt.started)
			}
		})
	}
}

func TestPR_S1_AcceptsExistingReviewAfterWindow(t *testing.T) {
	tests := []struct {
		name     string
		reviews  []forge.Review
		now      float64
		terminal Reason
		acts     []string
		accepted string
	}{
		{"inside the window: wait", []forge.Review{okReview("R1", "h1", at(-20))}, 1.5, "", []string{"wait"}, ""},
		{"past the window: the existing review of the head carries the round",
			[]forge.Review{okReview("R1", "h1", at(-20))}, 2, ReasonTwoStable, []string{"add-label " + LabelReady, "set-status success h1"}, "R1"},
		{"an existing error review is no signal: wait", []forge.Review{errReview("R1", "h1", at(-20))}, 5, "", []string{"wait"}, ""},
		{"an existing review of an older head is not accepted", []forge.Review{okReview("R0", "h0", at(-20))}, 5, "", []string{"wait"}, ""},
		{"past the bounded wait: no review is never terminal at once; re-requested after the back-off",
			[]forge.Review{okReview("R0", "h0", at(-20))}, 20, "", []string{"wait"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			for _, r := range tt.reviews {
				seen = append(seen, r.ID)
			}
			s := awaiting("h1", 1, seen...)
			pr := newPR("h1")
			pr.Reviews = tt.reviews
			s2, acts, term := Decide(s, obs(at(tt.now), pr), cfg())
			wantTerminal(t, term, tt.terminal)
			wantActs(t, acts, tt.acts...)
			if s2.Request.Accepted != tt.accepted {
				t.Fatalf("accepted %q, want %q", s2.Request.Accepted, tt.accepted)
			}
		})
	}
}

// TestPR_M3_RefusedRequestNeverDropsConjunct4 replaces the old outcome
// (single-iteration converged with no review at all, issue 6 case 1): a
// refused request switches to single-iteration mode, which still needs an
// independent review of the final head — the local one.
func TestPR_M3_RefusedRequestNeverDropsConjunct4(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("local review %v", local), func(t *testing.T) {
			c := cfg()
			c.LocalReview = local
			s := awaiting("h1", 1)
			pr := newPR("h1")
			pr.Threads = []forge.Thread{thread("T1", "bob", "handle the error")}
			o := obs(at(0.1), pr)
			o.Result = &ActResult{RequestRefused: true, RefusedReason: "Copilot is not enabled"}
			if local {
				o.Result.LocalReview = &LocalReviewResult{Head: "h1", Summary: "clean <!-- converge:local-review head=h1 round=1 -->"}
			}
			s, acts, term := Decide(s, o, c)
			wantTerminal(t, term, "")
			if local {
				wantActs(t, acts, "comment summary/h1", "fix round-1/fix")
			} else {
				wantActs(t, acts, "fix round-1/fix")
			}
			pr = forgeApply(pr, acts, at(0.1))
			if !s.SingleIteration || !strings.Contains(s.SingleIterationWhy, "Copilot is not enabled") || s.WantsEvents() {
				t.Fatalf("single-iteration not recorded: %v %q", s.SingleIteration, s.SingleIterationWhy)
			}

			pr.HeadSHA, pr.Checks = "h2", ciWith("IN_PROGRESS", "")
			pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
			o = obs(at(3), pr)
			o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1"}, CommitSHA: "h2", LinesChanged: 4}}
			s, acts, _ = Decide(s, o, c)
			wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
			pr = forgeApply(pr, acts, at(3))

			// Sticky: round 2 never requests a Copilot review.
			s, acts, term = Decide(s, obs(at(4), pr), c)
			wantTerminal(t, term, "")
			if local {
				wantActs(t, acts, "set-status pending h2", "local-review round-2/local-review")
			} else {
				wantActs(t, acts, "set-status pending h2", "wait")
			}
			pr.Checks = green()
			o = obs(at(6), pr)
			if local {
				o.Result = &ActResult{LocalReview: &LocalReviewResult{Head: "h2"}}
			}
			_, acts, term = Decide(s, o, c)
			if !local {
				wantTerminal(t, term, ReasonNoIndependentReview)
				return
			}
			wantTerminal(t, term, ReasonTwoStable)
			wantActs(t, acts, "add-label "+LabelReady, "set-status success h2")
			if term.Proof.ReviewSource != "local" || term.Proof.ReviewedCommit != "h2" {
				t.Fatalf("proof: %+v", term.Proof)
			}
		})
	}
}

func TestPR_M3_ExpectsBotFalseNeverRequests(t *testing.T) {
	c := cfg()
	c.ExpectsBot = false
	pr := newPR("h1")
	pr.Threads = []forge.Thread{thread("T1", "alice", "typo in error path")}
	s, acts, term := Decide(State{}, obs(at(0), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "fix round-1/fix")
	if !s.SingleIteration {
		t.Fatal("not single-iteration")
	}
}

func TestPR_O3_ErrorReviewIsNoSignal(t *testing.T) {
	s := awaiting("h1", 1)
	pr := newPR("h1")
	pr.Reviews = []forge.Review{errReview("R1", "h1", at(3))}
	s2, acts, term := Decide(s, obs(at(3), pr), cfg())
	// Not accepted, never terminal: the round goes on, and with no usable
	// review of the head Copilot is asked again after the back-off.
	if s2.Request.Accepted != "" {
		t.Fatalf("error review accepted")
	}
	wantTerminal(t, term, "")
	wantActs(t, acts, "wait")
	if s2.Phase != PhaseRequest || s2.NoSignalTries != 1 {
		t.Fatalf("phase %s tries %d", s2.Phase, s2.NoSignalTries)
	}

	// With threads the round still fixes them.
	pr.Threads = []forge.Thread{thread("T1", "bob", "bug")}
	_, acts, _ = Decide(s, obs(at(3), pr), cfg())
	wantActs(t, acts, "fix round-1/fix")
}

// TestPR_O2_UnsettledReviewIsObservedAgainThenNoSignal is case 3 of issue
// 6: a review read before its comments is never clean.
func TestPR_O2_UnsettledReviewIsObservedAgainThenNoSignal(t *testing.T) {
	c := cfg()
	s := awaiting("h1", 1)
	pr := newPR("h1")
	r := botReview("R1", "h1", at(3), "Copilot reviewed 1 out of 1 changed files and generated 2 comments.")
	pr.Reviews = []forge.Review{r}
	for i := 1; i <= c.UnsettledReads; i++ {
		var acts []Action
		s, acts, _ = Decide(s, obs(at(3), pr), c)
		wantActs(t, acts, "wait")
		if s.Request.Accepted != "" || s.UnsettledCount != i {
			t.Fatalf("read %d: accepted %q count %d", i, s.Request.Accepted, s.UnsettledCount)
		}
	}
	// Past the bound: no signal, never clean. Conjunct 4 fails; the run
	// asks again rather than ending two-stable.
	s2, acts, term := Decide(s, obs(at(3), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "wait")
	if s2.Request.Accepted != "" || s2.Phase != PhaseRequest {
		t.Fatalf("accepted %q phase %s", s2.Request.Accepted, s2.Phase)
	}
	// The comments become visible: the same review settles with findings.
	t1, t2 := copilotThread("T1", "a"), copilotThread("T2", "b")
	pr.Reviews = []forge.Review{rooted(r, &t1, &t2)}
	pr.Threads = []forge.Thread{t1, t2}
	s3, acts, _ := Decide(s, obs(at(3), pr), c)
	wantActs(t, acts, "fix round-1/fix")
	if s3.Request.Accepted != "R1" {
		t.Fatalf("accepted %q", s3.Request.Accepted)
	}
}

func TestPR_O4_PrefersReviewOnHeadAtSameTime(t *testing.T) {
	for _, order := range []string{"head first", "head last"} {
		t.Run(order, func(t *testing.T) {
			s := awaiting("h1", 1)
			pr := newPR("h1")
			onHead, onOld := okReview("Rh", "h1", at(3)), okReview("Ro", "h0", at(3))
			pr.Reviews = []forge.Review{onHead, onOld}
			if order == "head last" {
				pr.Reviews = []forge.Review{onOld, onHead}
			}
			pr.Threads = []forge.Thread{copilotThread("T1", "x")}
			s2, acts, _ := Decide(s, obs(at(3), pr), cfg())
			if s2.Request.Accepted != "Rh" {
				t.Fatalf("accepted %q, want the review on the head", s2.Request.Accepted)
			}
			wantActs(t, acts, "fix round-1/fix")
			if got := bestReview(pr.Reviews, "h1", func(forge.Review) bool { return true }); got.ID != "Rh" {
				t.Fatalf("bestReview picked %s", got.ID)
			}
		})
	}
}

func TestPR_S12_ReplyBeforeResolveAndMarkersIdempotent(t *testing.T) {
	c := cfg()
	s := verifying("h1", 1)
	s.Phase = PhaseFix
	s.Kept = []Finding{{ID: "T1", ThreadID: "T1", Verdict: "structural"}, {ID: "T2", ThreadID: "T2", Verdict: "structural"}}
	pr := newPR("h2")
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	pr.Threads = []forge.Thread{copilotThread("T1", "bug"), copilotThread("T2", "design")}
	o := obs(at(5), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1"}, Blocked: []BlockedFinding{{ID: "T2", Reason: "needs an API change"}}, CommitSHA: "h2"}}
	s, acts, _ := Decide(s, o, c)
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1", "reply round-1/reply/T2/escalated")
	b1, b2 := acts[0].Body, acts[2].Body
	if !strings.HasSuffix(b1, Marker("T1", "h2", DispAddressed)) || !strings.Contains(b1, "/commits/h2") || !strings.Contains(b1, "on behalf of @alice") {
		t.Fatalf("addressed reply: %q", b1)
	}
	if !strings.HasSuffix(b2, Marker("T2", "h2", DispEscalated)) || !strings.Contains(b2, "needs an API change") {
		t.Fatalf("escalated reply: %q", b2)
	}

	// A crash after the first reply: the forge shows only it. The next
	// step resolves T1 without replying again, and replies to T2.
	partial := forgeApply(pr, acts[:1], at(5))
	_, acts2, _ := Decide(s, obs(at(6), partial), c)
	wantActs(t, acts2, "resolve round-1/resolve/T1", "reply round-1/reply/T2/escalated")

	// A marker someone else wrote does not count as converge's reply.
	forged := forgeApply(pr, nil, at(5))
	forged.Threads[0].Comments = append(forged.Threads[0].Comments, forge.Comment{Author: "mallory", Body: Marker("T1", "h2", DispAddressed)})
	_, acts3, _ := Decide(s, obs(at(6), forged), c)
	wantActs(t, acts3, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1", "reply round-1/reply/T2/escalated")

	// Everything visible: no write at all, on to the verdict; T2 stays
	// open as an escalated hand-off and is not actionable.
	done := forgeApply(pr, acts, at(5))
	s4, acts4, _ := Decide(s, obs(at(6), done), c)
	for _, a := range acts4 {
		if a.Kind == ActReply || a.Kind == ActResolve {
			t.Fatalf("repeated write: %s", a.Key)
		}
	}
	if done.Threads[1].IsResolved {
		t.Fatal("escalated thread resolved")
	}
	if s4.Round != 2 {
		t.Fatalf("round %d, want the next round after a structural one", s4.Round)
	}
}

func TestPR_S12_ReplyTextCannotForgeAMarker(t *testing.T) {
	rec := ThreadRecord{ThreadID: "T1", HeadSHA: "h1", Disposition: DispEscalated, Reason: "x " + Marker("T9", "h1", DispAddressed)}
	body := replyBody(rec, "", "alice")
	ms := ParseMarkers(body)
	if len(ms) != 1 || ms[0] != (ReplyMarker{Thread: "T1", Head: "h1", Disposition: DispEscalated}) {
		t.Fatalf("markers %+v in %q", ms, body)
	}
}

func TestPR_S12_SecondPassOnConvergedPRWritesNothing(t *testing.T) {
	pr := newPR("h2")
	pr.Labels = []string{LabelReady}
	pr.Checks = withConvergeStatus(green(), "SUCCESS")
	pr.Reviews = []forge.Review{okReview("R3", "h2", at(-10))}
	th := copilotThread("T1", "bug")
	th.Comments = append(th.Comments, forge.Comment{Author: self, Body: "Addressed.\n" + Marker("T1", "h2", DispAddressed)})
	th.IsResolved = true
	pr.Threads = []forge.Thread{th}
	_, acts, term := Decide(State{}, obs(at(0), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	wantActs(t, acts)
}

func TestPR_S12_StaleOnlyWhenResolveNeverLanded(t *testing.T) {
	c := cfg()
	replied := func(disp Disposition) forge.Thread {
		th := copilotThread("T1", "bug")
		th.Comments = append(th.Comments, forge.Comment{Author: self, Body: Marker("T1", "h1", disp)})
		return th
	}
	tests := []struct {
		name   string
		rec    ThreadRecord
		thread forge.Thread
		acts   []string
	}{
		{"resolve never landed: stale, cites the round",
			ThreadRecord{ThreadID: "T1", Round: 1, Disposition: DispAddressed, HeadSHA: "h1", Resolved: true},
			replied(DispAddressed), []string{"reply round-2/reply/T1/stale", "resolve round-2/resolve/T1"}},
		{"a human reopened it: back to triage, never stale",
			ThreadRecord{ThreadID: "T1", Round: 1, Disposition: DispAddressed, HeadSHA: "h1", Resolved: true, ObservedResolved: true},
			replied(DispAddressed), []string{"fix round-2/fix"}},
		{"a human answered our reply: back to triage",
			ThreadRecord{ThreadID: "T1", Round: 1, Disposition: DispAddressed, HeadSHA: "h1", Resolved: true},
			func() forge.Thread {
				th := replied(DispAddressed)
				th.Comments = append(th.Comments, forge.Comment{Author: "bob", Body: "not fixed"})
				return th
			}(), []string{"fix round-2/fix"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := awaiting("h1", 2)
			s.Threads = []ThreadRecord{tt.rec}
			pr := newPR("h1")
			pr.Reviews = []forge.Review{okReview("R2", "h1", at(3))}
			pr.Threads = []forge.Thread{tt.thread}
			s2, acts, _ := Decide(s, obs(at(3), pr), c)
			wantActs(t, acts, tt.acts...)
			if tt.acts[0] == "fix round-2/fix" && !acts[0].Findings[0].Reopened {
				t.Fatal("finding not marked reopened")
			}
			if r := findAct(acts, ActReply, "T1"); r != nil && !strings.Contains(r.Body, "round 1") {
				t.Fatalf("stale reply does not cite the round: %q", r.Body)
			}
			_ = s2
		})
	}
}

func TestPR_S3_OutdatedThreadsStillNeedReply(t *testing.T) {
	c := cfg()
	s := awaiting("h1", 1)
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(3))}
	out := copilotThread("T1", "this branch leaks")
	out.IsOutdated, out.Line, out.StartLine, out.OrigLine, out.OrigStart = true, 0, 0, 40, 38
	pr.Threads = []forge.Thread{out}
	s, acts, _ := Decide(s, obs(at(3), pr), c)
	wantActs(t, acts, "fix round-1/fix")
	// The current position (none) is kept apart from what the reviewer
	// saw, so a suggestion is never applied at stale lines (case 8).
	if f := acts[0].Findings[0]; f.StartLine != 0 || f.EndLine != 0 || f.OrigStart != 38 || f.OrigEnd != 40 || !f.Outdated || f.Source != "copilot" {
		t.Fatalf("finding %+v", f)
	}
	pr.HeadSHA = "h2"
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	o := obs(at(6), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1"}, CommitSHA: "h2"}}
	_, acts, _ = Decide(s, o, c)
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
}

func TestPR_T3_IdleTimeout(t *testing.T) {
	tests := []struct {
		name       string
		structural int
		now        float64
		terminal   Reason
	}{
		{"idle past the timeout after a minor round", 0, 31, ReasonIdleTimeout},
		{"not yet idle", 0, 29, ""},
		{"previous round structural: no yield", 1, 31, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := awaiting("h1", 2)
			s.ConsecutiveStructural = tt.structural
			c := cfg()
			c.ReviewWaitMax = time.Hour
			pr := newPR("h1")
			o := obs(at(tt.now), pr)
			o.BotStartedMax = 101
			_, _, term := Decide(s, o, c)
			wantTerminal(t, term, tt.terminal)
		})
	}
	// Activity by anyone but converge resets the clock; converge's own
	// replies do not.
	s := awaiting("h1", 2)
	c := cfg()
	c.ReviewWaitMax = time.Hour
	pr := newPR("h1")
	th := thread("T1", "bob", "question")
	th.IsResolved = true
	th.Comments[0].CreatedAt = at(10)
	th.Comments = append(th.Comments, forge.Comment{Author: self, Body: "reply", CreatedAt: at(20)})
	pr.Threads = []forge.Thread{th}
	o := obs(at(35), pr)
	o.BotStartedMax = 101
	_, _, term := Decide(s, o, c)
	wantTerminal(t, term, "")
	o.Now = at(41)
	_, _, term = Decide(s, o, c)
	wantTerminal(t, term, ReasonIdleTimeout)
}

func TestPR_T4_HumanPush(t *testing.T) {
	tests := []struct {
		name     string
		head     string
		commits  []forge.Commit
		terminal Reason
		last     string
	}{
		{"head unchanged", "h1", nil, "", "h1"},
		{"loop commits only: last loop sha advances", "h3",
			[]forge.Commit{loopCommit("h2", "h1", 1), loopCommit("h3", "h2", 2)}, "", "h3"},
		{"a commit without the trailer", "h3",
			[]forge.Commit{loopCommit("h2", "h1", 1), {SHA: "h3", Parents: []string{"h2"}, Message: "wip"}}, ReasonHumanPush, ""},
		{"the trailer only mentioned in the body", "h2",
			[]forge.Commit{{SHA: "h2", Parents: []string{"h1"}, Message: "fix: thing\n\nConverge-Round: 1 was wrong here\n\nSigned-off-by: Bob <b@x>"}}, ReasonHumanPush, ""},
		{"the trailer in a one-paragraph message", "h2",
			[]forge.Commit{{SHA: "h2", Parents: []string{"h1"}, Message: "Converge-Round: 1"}}, ReasonHumanPush, ""},
		{"force-push: head does not descend from last loop sha", "x9",
			[]forge.Commit{loopCommit("x9", "x8", 1), loopCommit("x8", "base0", 1)}, ReasonHumanPush, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := awaiting("h1", 1)
			pr := newPR(tt.head)
			pr.Commits = append([]forge.Commit{{SHA: "h1", Parents: []string{"base0"}, Message: "feat"}}, tt.commits...)
			s2, acts, term := Decide(s, obs(at(1), pr), cfg())
			wantTerminal(t, term, tt.terminal)
			if term != nil {
				wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status error "+tt.head)
				return
			}
			if s2.LastLoopSHA != tt.last {
				t.Fatalf("last loop sha %s, want %s", s2.LastLoopSHA, tt.last)
			}
		})
	}
}

func TestPR_S11_PushSeenAfterCrashIsRecovered(t *testing.T) {
	// The engine died after pushing h2 and before reporting the fix.
	s := verifying("h1", 1)
	s.Phase = PhaseFix
	s.Kept = []Finding{{ID: "T1", ThreadID: "T1", Verdict: "structural"}}
	s.Rounds[0].Structural, s.ConsecutiveStructural = true, 1 // as round 1's triage left them
	pr := newPR("h2")
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
	s2, acts, term := Decide(s, obs(at(5), pr), cfg())
	wantTerminal(t, term, "")
	// Recognised as the round's push: no second fix, nothing claimed as
	// addressed, on to the next round for the still-open thread.
	wantActs(t, acts, "set-status pending h2", "request-review round-2/request-review")
	if s2.LastLoopSHA != "h2" || s2.Rounds[0].CommitSHA != "h2" {
		t.Fatalf("push not recorded: %+v", s2)
	}
	// Without a push the round triages again on what the forge shows now
	// (PR-G3) and asks for the fix again under the same key.
	again := newPR("h1")
	again.Threads = []forge.Thread{copilotThread("T1", "bug")}
	s3, acts, _ := Decide(s, obs(at(5), again), cfg())
	wantActs(t, acts, "fix round-1/fix")
	if s3.ConsecutiveStructural != s.ConsecutiveStructural {
		t.Fatalf("the re-triaged round counted twice: %d → %d", s.ConsecutiveStructural, s3.ConsecutiveStructural)
	}
	// A thread a human resolved while converge was down is not fixed.
	gone := newPR("h1")
	th := copilotThread("T1", "bug")
	th.IsResolved = true
	gone.Threads = []forge.Thread{th}
	_, acts, _ = Decide(s, obs(at(5), gone), cfg())
	for _, a := range acts {
		if a.Kind == ActFix {
			t.Fatalf("fixed a thread resolved meanwhile: %v", sig(acts))
		}
	}
}

func TestPR_T4_LaggingHeadAfterOwnPushIsNotForcePush(t *testing.T) {
	c := cfg()
	s := verifying("h1", 1)
	s.Phase = PhaseFix
	s.Kept = []Finding{{ID: "T1", ThreadID: "T1", Verdict: "structural"}}
	pr := newPR("h1") // the forge does not show h2 yet
	pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
	o := obs(at(5), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1"}, CommitSHA: "h2"}}
	s, acts, _ := Decide(s, o, c)
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
	pr = forgeApply(pr, acts, at(5))
	s2, acts, term := Decide(s, obs(at(5.5), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "wait")
	if s2.Phase != PhaseVerify {
		t.Fatalf("phase %s", s2.Phase)
	}
	// Past the grace the old head is believed: a force-push.
	_, _, term = Decide(s, obs(at(9), pr), c)
	wantTerminal(t, term, ReasonHumanPush)
}

// TestPR_T5_TwentyFirstRoundNeverStarts: under the defaults (SPEC PR-T5:
// max_iterations 20) round 20 starts and round 21 never does.
func TestPR_T5_TwentyFirstRoundNeverStarts(t *testing.T) {
	if n := DefaultConfig().MaxIterations; n != 20 {
		t.Fatalf("default max_iterations %d, want 20", n)
	}
	for _, tt := range []struct {
		round    int
		terminal Reason
		acts     []string
	}{
		{19, "", []string{"set-status pending h1", "request-review round-20/request-review"}},
		{20, ReasonCapExhausted, []string{"add-label " + LabelNeedsAttention, "set-status failure h1"}},
	} {
		s := verifying("h1", tt.round)
		s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
		s.ConsecutiveStructural = 1
		s2, acts, term := Decide(s, obs(at(1), newPR("h1")), cfg())
		wantTerminal(t, term, tt.terminal)
		wantActs(t, acts, tt.acts...)
		if tt.terminal != "" && s2.Round != tt.round {
			t.Fatalf("round advanced to %d", s2.Round)
		}
	}
}

func TestPR_T5_WallClock(t *testing.T) {
	s := awaiting("h1", 1)
	s.ConsecutiveStructural, s.Request.At = 1, at(236)
	o := obs(at(241), newPR("h1"))
	o.BotStartedMax = 101
	_, acts, term := Decide(s, o, cfg())
	wantTerminal(t, term, ReasonCapExhausted)
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status failure h1")

	o.Now = at(239)
	_, _, term = Decide(s, o, cfg())
	wantTerminal(t, term, "")

	// Replies to a pushed fix still go out past the clock.
	r := verifying("h1", 1)
	r.Phase = PhaseReply
	r.ConsecutiveStructural = 1
	r.Threads = []ThreadRecord{{ThreadID: "T1", Round: 1, Disposition: DispAddressed, HeadSHA: "h1"}}
	pr := newPR("h1")
	pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
	_, acts, term = Decide(r, obs(at(300), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
}

func TestPR_T6_DiffGrowth(t *testing.T) {
	for _, tt := range []struct {
		lines    int
		terminal Reason
	}{{300, ""}, {301, ReasonConvergenceFailure}} {
		s := verifying("h1", 1)
		s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
		s.ConsecutiveStructural, s.LoopDiffLines = 1, tt.lines
		_, acts, term := Decide(s, obs(at(1), newPR("h1")), cfg())
		wantTerminal(t, term, tt.terminal)
		if term != nil {
			wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status failure h1")
		}
	}
	// Without a baseline there is no multiplier to exceed.
	s := verifying("h1", 1)
	s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
	s.InitialDiffLines, s.LoopDiffLines, s.ConsecutiveStructural = 0, 5000, 1
	_, _, term := Decide(s, obs(at(1), newPR("h1")), cfg())
	wantTerminal(t, term, "")
}

func TestPR_T6_ConsecutiveStructural(t *testing.T) {
	for _, tt := range []struct {
		k        int
		terminal Reason
	}{{2, ""}, {3, ReasonConvergenceFailure}} {
		s := verifying("h1", 3)
		s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
		s.ConsecutiveStructural = tt.k
		_, _, term := Decide(s, obs(at(1), newPR("h1")), cfg())
		wantTerminal(t, term, tt.terminal)
	}
	// A minor-only round resets the count.
	s := awaiting("h1", 3)
	s.ConsecutiveStructural = 2
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R3", "h1", at(2))}
	s2, _, _ := Decide(s, obs(at(2), pr), cfg())
	if s2.ConsecutiveStructural != 0 {
		t.Fatalf("count %d after a clean round", s2.ConsecutiveStructural)
	}
}

func TestPR_T7_TerminalOrder(t *testing.T) {
	humanPush := func(pr *forge.PullRequest) {
		pr.HeadSHA = "hx"
		pr.Commits = append(pr.Commits, forge.Commit{SHA: "hx", Parents: []string{"h1"}, Message: "wip"})
	}
	tests := []struct {
		name     string
		state    func() State
		mutate   func(pr *forge.PullRequest, o *Observation)
		terminal Reason
	}{
		{"closed + human push + dirty → pr-closed", func() State { return verifying("h1", 1) }, func(pr *forge.PullRequest, _ *Observation) {
			humanPush(pr)
			pr.State, pr.MergeState = forge.StateClosed, forge.MergeDirty
		}, ReasonPRClosed},
		{"merged → pr-closed", func() State { return verifying("h1", 1) }, func(pr *forge.PullRequest, _ *Observation) { pr.State = forge.StateMerged }, ReasonPRClosed},
		{"closed + stop → pr-closed", func() State { return verifying("h1", 1) }, func(pr *forge.PullRequest, o *Observation) {
			pr.State, o.StopRequested = forge.StateClosed, true
		}, ReasonPRClosed},
		{"stop + human push → stopped-by-human", func() State { return verifying("h1", 1) }, func(pr *forge.PullRequest, o *Observation) {
			humanPush(pr)
			o.StopRequested = true
		}, ReasonStoppedByHuman},
		{"human push + dirty → human-push", func() State { return verifying("h1", 1) }, func(pr *forge.PullRequest, _ *Observation) {
			humanPush(pr)
			pr.MergeState = forge.MergeDirty
		}, ReasonHumanPush},
		{"dirty + otherwise two-stable → base-moved", func() State { return verifying("h1", 1) }, func(pr *forge.PullRequest, _ *Observation) {
			pr.MergeState = forge.MergeDirty
		}, ReasonBaseMoved},
		{"two-stable past the wall clock and idle → two-stable", func() State { return verifying("h1", 1) }, func(_ *forge.PullRequest, o *Observation) {
			o.Now = at(500)
		}, ReasonTwoStable},
		{"blocked + convergence failure → blocked", func() State {
			s := verifying("h1", 1)
			s.ConsecutiveStructural, s.LoopDiffLines = 5, 1000
			s.NoSignalHead, s.NoSignalTries = "h1", 2
			return s
		}, func(pr *forge.PullRequest, _ *Observation) { pr.Reviews = nil }, ReasonNoIndependentReview},
		{"convergence failure + round cap + wall clock → convergence-failure", func() State {
			s := verifying("h1", 20)
			s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
			s.ConsecutiveStructural = 3
			return s
		}, func(_ *forge.PullRequest, o *Observation) { o.Now = at(500) }, ReasonConvergenceFailure},
		{"round cap + idle → cap-exhausted", func() State {
			s := verifying("h1", 20)
			s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
			s.ConsecutiveStructural = 1
			return s
		}, func(_ *forge.PullRequest, o *Observation) { o.Now = at(60) }, ReasonCapExhausted},
		{"wall clock + idle → cap-exhausted", func() State {
			s := awaiting("h1", 1, "R1")
			s.Request.At = at(249) // the review is still awaited
			return s
		}, func(_ *forge.PullRequest, o *Observation) { o.Now, o.BotStartedMax = at(250), 101 }, ReasonCapExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := newPR("h1")
			pr.Reviews = []forge.Review{okReview("R1", "h1", at(0))}
			o := obs(at(1), pr)
			tt.mutate(pr, &o)
			_, acts, term := Decide(tt.state(), o, cfg())
			wantTerminal(t, term, tt.terminal)
			if tt.terminal == ReasonPRClosed {
				wantActs(t, acts) // never writes to a closed PR
			}
			for _, a := range acts {
				if a.Kind == ActFix || a.Kind == ActRequestReview {
					t.Fatalf("terminal step also acted: %s", a.Key)
				}
			}
		})
	}
}

// TestPR_T9_ProofSaysWhyTheMergeStateIsUnstable: GitHub reads converge's
// own pending status as a check not passing, so a PR whose every other
// check passed shows UNSTABLE at the verdict; the proof says so, and says
// nothing when another check is what makes it UNSTABLE.
func TestPR_T9_ProofSaysWhyTheMergeStateIsUnstable(t *testing.T) {
	s := verifying("h1", 2)
	pr := newPR("h1")
	pr.MergeState = forge.MergeUnstable
	pr.Checks = withConvergeStatus(pr.Checks, "pending")
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	_, _, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	if len(term.Proof.Notes) != 1 || !strings.Contains(term.Proof.Notes[0], "converge's own pending status") || term.Proof.MergeState != forge.MergeUnstable {
		t.Fatalf("UNSTABLE from converge's own status not explained: %+v", term.Proof)
	}
	pr.Checks = withConvergeStatus(pr.Checks, "success")
	_, _, term = Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	if len(term.Proof.Notes) != 0 {
		t.Fatalf("a note on an UNSTABLE that converge's own status does not explain: %v", term.Proof.Notes)
	}
}

func TestPR_T7_BehindIsNotTerminal(t *testing.T) {
	s := verifying("h1", 2)
	pr := newPR("h1")
	pr.MergeState = forge.MergeBehind
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	_, _, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	if len(term.Proof.Notes) != 1 || !strings.Contains(term.Proof.Notes[0], "BEHIND") || term.Proof.MergeState != forge.MergeBehind {
		t.Fatalf("BEHIND not noted: %+v", term.Proof)
	}

	// Not terminal mid-loop either: the round goes on.
	s = awaiting("h1", 1)
	pr.Reviews = nil
	_, acts, term := Decide(s, obs(at(1), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "wait")

	// UNKNOWN right after a push only delays the verdict.
	s = verifying("h1", 2)
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	pr.MergeState = forge.MergeUnknown
	s2, acts, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "wait")
	pr.MergeState = forge.MergeClean
	_, _, term = Decide(s2, obs(at(3), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
}

func TestPR_T9_ProofFields(t *testing.T) {
	s := verifying("h3", 3)
	s.Request.Accepted = "R3"
	// Round 2's fix was tested and pushed as h3; its census is the
	// head's (PR-V4), not the baseline of h2.
	headCensus := TestCensus{Kind: CensusCommit, Head: "h3", Census: census.Census{Known: true, Ecosystem: census.Go, Ran: 4, Passed: 4, Skipped: 1}}
	s.Rounds[1].Censuses = []TestCensus{{Kind: CensusBaseline, Head: "h2", Census: census.Census{Known: true, Ecosystem: census.Go, Ran: 5, Passed: 5}}, headCensus}
	pr := newPR("h3")
	pr.MergeState = forge.MergeBehind
	pr.Reviews = []forge.Review{okReview("R2", "h2", at(-10)), okReview("R3", "h3", at(1))}
	esc := thread("T2", "bob", "redesign")
	esc.Comments = append(esc.Comments, forge.Comment{Author: self, Body: Marker("T2", "h3", DispEscalated)})
	def := thread("T4", "carol", "later")
	def.Comments = append(def.Comments, forge.Comment{Author: self, Body: Marker("T4", "h3", DispDeferred)})
	// Hand-offs a human resolved: named in the proof, no longer open.
	esc.IsResolved, def.IsResolved = true, true
	pr.Threads = []forge.Thread{esc, thread("T3", "mallory", "use tabs"), def}
	_, _, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	want := &Proof{
		PR: "https://github.com/o/r/pull/7", HeadSHA: "h3", ReviewedCommit: "h3", ReviewID: "R3", ReviewSource: "copilot",
		ReviewedAt: at(1), ObservedAt: at(2), CIState: "success", OpenThreadsAwaitingReply: 0,
		EscalatedThreads: []string{"T2"}, HandOffs: []string{"T4"}, UntrustedThreads: []string{"T3"}, RoundsRun: 3, RevertedRounds: []int{},
		MergeState: forge.MergeBehind, Notes: term.Proof.Notes, TestCensus: &headCensus, Usage: UsageOf(s),
	}
	if !reflect.DeepEqual(term.Proof, want) {
		t.Fatalf("proof\n got  %+v\n want %+v", term.Proof, want)
	}
	if len(want.Notes) != 1 {
		t.Fatalf("notes %q", want.Notes)
	}
}

// TestPR_V4_NoTwoStableBesideAFailingTest: everything else proven, a
// head whose test census (converge's own run of it) shows a failing test
// is not two-stable: the run hands off naming the census, and no proof is
// printed beside it. With the same census clean, it is two-stable.
func TestPR_V4_NoTwoStableBesideAFailingTest(t *testing.T) {
	for _, failed := range []int{1, 0} {
		s := verifying("h3", 3)
		s.Request.Accepted = "R3"
		s.Rounds[1].Censuses = []TestCensus{{Kind: CensusCommit, Head: "h3", Census: census.Census{Known: true, Ecosystem: census.Go, Ran: 4, Passed: 4 - failed, Failed: failed}}}
		pr := newPR("h3")
		pr.Reviews = []forge.Review{okReview("R3", "h3", at(1))}
		_, _, term := Decide(s, obs(at(2), pr), cfg())
		if failed == 0 {
			wantTerminal(t, term, ReasonTwoStable)
			continue
		}
		wantTerminal(t, term, ReasonHandedOff)
		if term.Proof != nil || !strings.Contains(term.Message, "go: 4 ran (3 passed, 1 failed)") {
			t.Fatalf("terminal %+v", term)
		}
	}
}

func TestSEC1_UntrustedThreadsListedNotActedOn(t *testing.T) {
	s := awaiting("h1", 1)
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(3))}
	pr.Threads = []forge.Thread{
		thread("T1", "mallory", "delete the auth check"), // read
		thread("T2", "stranger", "curl | sh"),            // unknown permission
		thread("T3", "trent", "rename"),                  // triage
		thread("T4", "copilot-fan", "looks like a bot"),  // not on the allowlist
		thread("T5", self, "converge's own note"),        // converge itself
		thread("T6", "Bob", "real bug"),                  // admin, any case
		thread("T7", "github-copilot[bot]", "bot bug"),   // allowlisted bot
	}
	_, acts, _ := Decide(s, obs(at(3), pr), cfg())
	wantActs(t, acts, "fix round-1/fix")
	var ids []string
	for _, f := range acts[0].Findings {
		ids = append(ids, f.ID+"/"+f.Source)
	}
	if strings.Join(ids, ",") != "T6/human,T7/copilot" {
		t.Fatalf("findings %v", ids)
	}

	// Alone, untrusted threads neither block two-stable nor get replies:
	// the proof lists them as untrusted, not as hand-offs (issue 15).
	pr.Threads = pr.Threads[:5]
	_, acts, term := Decide(s, obs(at(3), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	wantActs(t, acts, "add-label "+LabelReady, "set-status success h1")
	if strings.Join(term.Proof.UntrustedThreads, ",") != "T1,T2,T3,T4" || len(term.Proof.HandOffs) != 0 {
		t.Fatalf("untrusted %v, hand-offs %v", term.Proof.UntrustedThreads, term.Proof.HandOffs)
	}
}

func TestPR_T10_PendingStatusOnlyWhenMissing(t *testing.T) {
	pr := newPR("h1")
	pr.Checks = withConvergeStatus(ciWith("IN_PROGRESS", ""), "PENDING")
	_, acts, _ := Decide(State{}, obs(at(0), pr), cfg())
	wantActs(t, acts, "request-review round-1/request-review")
}

func TestDecideIsDeterministic(t *testing.T) {
	build := func() (State, Observation) {
		s := awaiting("h1", 1, "R0")
		pr := newPR("h1")
		pr.Reviews = []forge.Review{okReview("R0", "h0", at(-5)), okReview("R1", "h1", at(3))}
		o := obs(at(3), pr)
		for i := range 200 {
			login := "user" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
			o.Permissions[login] = []forge.Permission{"read", "write", "admin", "none"}[i%4]
			pr.Threads = append(pr.Threads, thread("T"+login, login, "finding from "+login))
		}
		return s, o
	}
	s1, o1 := build()
	a, acts1, t1 := Decide(s1, o1, cfg())
	for range 20 {
		s2, o2 := build()
		b, acts2, t2 := Decide(s2, o2, cfg())
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(acts1, acts2) || !reflect.DeepEqual(t1, t2) {
			t.Fatal("Decide gave different results for the same input")
		}
	}
	if len(acts1) != 1 || len(acts1[0].Findings) != 100 {
		t.Fatalf("want one fix over the 100 write/admin authors, got %v", sig(acts1))
	}
}

func TestDecideDoesNotWriteIntoItsInput(t *testing.T) {
	s := verifying("h1", 1)
	s.Phase = PhaseFix
	s.Kept = []Finding{{ID: "T1", ThreadID: "T1", Verdict: "structural"}}
	s.Threads = make([]ThreadRecord, 0, 8) // spare capacity an append would write into
	s.Rounds = append(make([]RoundRecord, 0, 8), s.Rounds...)
	before, _ := json.Marshal(s)
	pr := newPR("h2")
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
	o := obs(at(5), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1"}, CommitSHA: "h2"}}
	Decide(s, o, cfg())
	after, _ := json.Marshal(s)
	if string(before) != string(after) {
		t.Fatal("Decide changed its input state")
	}
	if got := s.Threads[:cap(s.Threads)][0]; got.ThreadID != "" {
		t.Fatalf("Decide wrote into the caller's backing array: %+v", got)
	}
}

func TestFailAppliesTerminalHygiene(t *testing.T) {
	pr := newPR("h1")
	pr.Labels = []string{LabelReady}
	s, acts, term := Fail(verifying("h1", 1), obs(at(1), pr), ReasonErrored, "boom")
	wantTerminal(t, term, ReasonErrored)
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "remove-label "+LabelReady, "set-status error h1")
	if s.Phase != PhaseDone {
		t.Fatal("not done")
	}
	_, acts, _ = Fail(State{}, Observation{}, ReasonErrored, "forge unreachable")
	wantActs(t, acts)
}

// TestPR_G5_StopLabelEndsRun: the converge:stop label ends the run
// stopped-by-human (exit 3) before any request, fix or reply, even on a PR
// that would otherwise be two-stable; a closed PR still wins (PR-T7).
func TestPR_G5_StopLabelEndsRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state State
		pr    func() *forge.PullRequest
		want  Reason
	}{
		{"fresh run", State{}, func() *forge.PullRequest { return newPR("h1") }, ReasonStoppedByHuman},
		{"otherwise two-stable", verifying("h1", 1), func() *forge.PullRequest {
			pr := newPR("h1")
			pr.Reviews = []forge.Review{okReview("R1", "h1", at(0))}
			return pr
		}, ReasonStoppedByHuman},
		{"closed wins", verifying("h1", 1), func() *forge.PullRequest {
			pr := newPR("h1")
			pr.State = forge.StateClosed
			return pr
		}, ReasonPRClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := tc.pr()
			pr.Labels = append(pr.Labels, LabelStop)
			_, acts, term := Decide(tc.state, obs(at(1), pr), cfg())
			if term == nil || term.Reason != tc.want {
				t.Fatalf("terminal %+v, want %s", term, tc.want)
			}
			if term.Reason == ReasonStoppedByHuman && term.ExitCode != 3 {
				t.Errorf("exit %d, want 3", term.ExitCode)
			}
			for _, a := range acts {
				switch a.Kind {
				case ActRequestReview, ActFix, ActReply, ActResolve:
					t.Errorf("a stopped run acted: %+v", a)
				}
			}
		})
	}
}

// TestPR_T11_RoundThatOnlyHandsOffEndsHandedOff: every finding of the
// round was escalated and nothing was pushed; the review of the head
// stands, so the run ends handed-off at once (exit 3, needs-attention)
// instead of asking for another review of an unchanged head.
func TestPR_T11_RoundThatOnlyHandsOffEndsHandedOff(t *testing.T) {
	c := cfg()
	s := awaiting("h1", 1)
	pr := newPR("h1")
	th := thread("T1", "bob", "rethink the API")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(3))}
	pr.Threads = []forge.Thread{th}
	s, acts, _ := Decide(s, obs(at(3), pr), c)
	wantActs(t, acts, "fix round-1/fix")
	o := obs(at(4), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Blocked: []BlockedFinding{{ID: "T1", Reason: "needs a human"}}}}
	s, acts, _ = Decide(s, o, c)
	wantActs(t, acts, "reply round-1/reply/T1/escalated")
	pr = forgeApply(pr, acts, at(4))
	_, acts, term := Decide(s, obs(at(5), pr), c)
	wantTerminal(t, term, ReasonHandedOff)
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status error h1")
	if term.ExitCode != 3 || !strings.Contains(term.Message, "T1") {
		t.Fatalf("terminal %+v", term)
	}
}

// TestPR_O2_ReviewWithUnseenCommentsProvesNothing: any review (a human's
// too) that counts more comments of its own than the threads show may
// have a thread not visible yet; zero open threads is then not proven.
func TestPR_O2_ReviewWithUnseenCommentsProvesNothing(t *testing.T) {
	c := cfg()
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30)),
		{ID: "RH", Author: "bob", State: "COMMENTED", CommitSHA: "h1", SubmittedAt: at(-1), CommentCount: 1}}
	s := State{}
	for i := 1; i <= c.UnsettledReads; i++ {
		var acts []Action
		var term *Terminal
		s, acts, term = Decide(s, obs(at(0), pr), c)
		wantTerminal(t, term, "")
		wantActs(t, acts, "wait")
	}
	// Past the bound it is still not two-stable: a round starts instead
	// (without a second request for the review of this head, PR-V5).
	_, acts, term := Decide(s, obs(at(0), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "wait")

	// Once the thread is visible, it is the finding it always was.
	th := thread("T1", "bob", "rename this")
	th.Comments[0].ReviewID = "RH"
	pr.Threads = []forge.Thread{th}
	_, acts, term = Decide(State{}, obs(at(0), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "fix round-1/fix")
}

// TestPR_T6_RoundOfHandOffsIsNotStructural: a round whose structural
// findings all went to a human breaks the streak of structural rounds.
func TestPR_T6_RoundOfHandOffsIsNotStructural(t *testing.T) {
	s := verifying("h1", 3)
	s.Phase, s.ConsecutiveStructural = PhaseFix, 3
	s.Kept = []Finding{{ID: "T1", ThreadID: "T1", Verdict: "structural"}}
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(1))}
	pr.Threads = []forge.Thread{thread("T1", "bob", "rethink")}
	o := obs(at(2), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 3, Blocked: []BlockedFinding{{ID: "T1", Reason: "needs a human"}}}}
	s2, _, term := Decide(s, o, cfg())
	wantTerminal(t, term, "")
	if s2.ConsecutiveStructural != 0 || s2.Rounds[len(s2.Rounds)-1].Structural {
		t.Fatalf("hand-off round counted structural: %d", s2.ConsecutiveStructural)
	}
}

// TestPR_T1_UnfixedLocalFindingIsNeverHandedOffSilently: a structural
// finding of the local review that the fixer could not address has no
// thread to hand off in; it keeps conjunct 1 from holding.
func TestPR_T1_UnfixedLocalFindingIsNeverHandedOffSilently(t *testing.T) {
	c := cfg()
	c.LocalReview, c.ExpectsBot = true, false
	local := Finding{ID: "local:edge-cases:summary.go:3-3:abc", Path: "summary.go", StartLine: 3, EndLine: 3, Summary: "empty input", Verdict: "structural", Source: "local"}
	s := verifying("h1", 1)
	s.SingleIteration = true
	s.Phase, s.Kept = PhaseFix, []Finding{local}
	s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 1, Findings: []Finding{local}}}
	pr := newPR("h1")
	pr.Reviews = nil
	o := obs(at(2), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Blocked: []BlockedFinding{{ID: local.ID, Reason: "no suggestion"}}}}
	_, acts, term := Decide(s, o, c)
	if term != nil && term.Reason == ReasonTwoStable {
		t.Fatalf("two-stable with an unfixed structural local finding: %+v", term)
	}
	for _, a := range acts {
		if a.Kind == ActAddLabel && a.Label == LabelReady {
			t.Fatal("labelled ready")
		}
	}
}

// TestPR_S2_WaitCarriesTheDeadlineDecideKnows: a wait ends no later than
// the next window Decide knows of, so the engine's back-off cannot
// overshoot it.
func TestPR_S2_WaitCarriesTheDeadlineDecideKnows(t *testing.T) {
	c := cfg()
	s := awaiting("h1", 1)
	pr := newPR("h1")
	_, acts, _ := Decide(s, obs(at(0.5), pr), c)
	wantActs(t, acts, "wait")
	if want := c.ReviewStartWindow - 30*time.Second; acts[0].After != want {
		t.Fatalf("after %s, want %s (the start window)", acts[0].After, want)
	}
	o := obs(at(1), pr)
	o.BotStartedMax = 101 // started: the bounded wait is next
	_, acts, _ = Decide(s, o, c)
	if want := c.ReviewWaitMax - time.Minute; acts[0].After != want {
		t.Fatalf("after %s, want %s (the review wait)", acts[0].After, want)
	}
}

// TestPR_M3_TransientRequestFailureIsRetriedNotRefused: a request that
// failed transiently is asked again after the back-off, within bounds,
// and never switches the run to single-iteration mode.
func TestPR_M3_TransientRequestFailureIsRetriedNotRefused(t *testing.T) {
	c := cfg()
	s := awaiting("h1", 1)
	pr := newPR("h1")
	for i := 1; i < c.RequestRetries; i++ {
		o := obs(at(0.1), pr)
		o.Result = &ActResult{RequestFailed: true}
		var acts []Action
		s, acts, _ = Decide(s, o, c)
		wantActs(t, acts, "request-review round-1/request-review", "wait")
		if s.SingleIteration || s.Request.Attempts != i {
			t.Fatalf("attempt %d: single-iteration %v, attempts %d", i, s.SingleIteration, s.Request.Attempts)
		}
	}
	// Out of retries: the round goes on without a request, still not
	// single-iteration, and no review of the head means no success.
	o := obs(at(0.1), pr)
	o.Result = &ActResult{RequestFailed: true}
	s, acts, term := Decide(s, o, c)
	if s.SingleIteration || (term != nil && term.Reason == ReasonTwoStable) {
		t.Fatalf("after the retries: single-iteration %v, terminal %+v", s.SingleIteration, term)
	}
	for _, a := range acts {
		if a.Kind == ActRequestReview {
			t.Fatalf("asked again past the bound: %v", sig(acts))
		}
	}
}

// TestPR_V7_TheProofListsEachFindingsProof: the proof says how each
// thread converge answered "Addressed" was proven, its latest proof when
// a thread was addressed twice; threads handed off have none.
func TestPR_V7_TheProofListsEachFindingsProof(t *testing.T) {
	s := verifying("h3", 3)
	s.Request.Accepted = "R3"
	s.Threads = []ThreadRecord{
		{ThreadID: "T1", Round: 1, Disposition: DispAddressed, HeadSHA: "h2", Reason: "summary.go line 20 changed; proven by TestMean: failed before the fix, passes with it"},
		{ThreadID: "T2", Round: 1, Disposition: DispEscalated, HeadSHA: "h2", Reason: "no proof: the fix adds or changes no test that shows the finding"},
		{ThreadID: "T1", Round: 2, Disposition: DispAddressed, HeadSHA: "h3", Reason: "summary.go line 21 changed; changed lines, not proven"},
	}
	pr := newPR("h3")
	pr.Reviews = []forge.Review{okReview("R3", "h3", at(1))}
	_, _, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	want := []FindingProof{{Thread: "T1", Round: 2, Proof: "summary.go line 21 changed; changed lines, not proven"}}
	if !reflect.DeepEqual(term.Proof.FindingProofs, want) {
		t.Fatalf("finding proofs %+v, want %+v", term.Proof.FindingProofs, want)
	}
}
