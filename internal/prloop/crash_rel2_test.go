package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// Two defects the crash matrix (internal/cli TestREL2_CrashMatrix...)
// found, each pinned here.

// TestREL2_RequestLostInACrashIsMadeAgain: converge saved round 1 (phase
// await-review) and died before its pending status and review request
// reached the forge. Resumed, the forge shows neither, and no observation
// reported them made: both are made again, with the lost ones' keys.
// Without this the run waited for a review nobody had asked for.
func TestREL2_RequestLostInACrashIsMadeAgain(t *testing.T) {
	c := cfg()
	pr := newPR("h0")
	pr.Checks = ciWith("IN_PROGRESS", "")
	s, acts, _ := Decide(State{}, obs(at(0), pr), c)
	wantActs(t, acts, "set-status pending h0", "request-review round-1/request-review")

	// The crash: neither act ran. The resumed run's first observation.
	s, acts, term := Decide(s, obs(at(1), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h0", "request-review round-1/request-review", "wait")

	// They landed (the act reports the request made): wait for the review.
	pr = forgeApply(pr, acts, at(1))
	o := obs(at(2), pr)
	o.Result = &ActResult{Requested: true}
	s, acts, _ = Decide(s, o, c)
	wantActs(t, acts, "wait")
	if s.Request.Unconfirmed {
		t.Fatalf("the request is still unconfirmed after the forge showed it: %+v", s.Request)
	}
}

// TestREL2_RequestMadeBeforeACrashIsNotMadeAgain: the crash came after
// the request reached the forge, before any observation reported it: the
// forge shows the bot requested, so nothing is asked twice.
func TestREL2_RequestMadeBeforeACrashIsNotMadeAgain(t *testing.T) {
	c := cfg()
	pr := newPR("h0")
	pr.Checks = ciWith("IN_PROGRESS", "")
	s, acts, _ := Decide(State{}, obs(at(0), pr), c)
	pr = forgeApply(pr, acts, at(0))
	s, acts, _ = Decide(s, obs(at(1), pr), c)
	wantActs(t, acts, "wait")
	if s.Request.Unconfirmed {
		t.Fatalf("the forge shows the request, yet it is unconfirmed: %+v", s.Request)
	}
}

// TestREL2_TerminalCutShortByACrashResumes: converge saved its terminal
// and died before its labels and status reached the forge (or before it
// recorded the run finished). That run resumes, to write what the forge
// lacks and record its own terminal and proof; a new run would start
// over, leaving the run that did the work "interrupted" without a proof.
// An errored terminal is not resumed: the next run retries.
func TestREL2_TerminalCutShortByACrashResumes(t *testing.T) {
	started := State{Phase: PhaseAwaitReview, Round: 1, StartedAt: at(0)}
	if !Resumable(started) {
		t.Fatal("a run in its first round does not resume")
	}
	done := started
	done.Phase, done.Terminal = PhaseDone, &Terminal{Reason: ReasonTwoStable, ExitCode: ExitCode(ReasonTwoStable)}
	if !Resumable(done) {
		t.Fatal("a two-stable terminal whose run was not recorded finished does not resume")
	}
	errored := done
	errored.Terminal = &Terminal{Reason: ReasonErrored, ExitCode: ExitCode(ReasonErrored)}
	if Resumable(errored) {
		t.Fatal("an errored terminal resumes; the next run should retry")
	}
	if Resumable(State{Phase: PhaseStart}) {
		t.Fatal("a state never started resumes")
	}
}

// TestREL2_SummaryLostInACrashIsPosted: triage saved round 1 (a clean
// local review of h1, phase verify) and converge died before the review's
// summary comment reached the forge. Resumed, the summary is posted from
// the stored review, once: not again when the forge shows it.
func TestREL2_SummaryLostInACrashIsPosted(t *testing.T) {
	c := cfg()
	c.LocalReview = true
	s := awaiting("h1", 1)
	pr := newPR("h1")
	pr.Checks = ciWith("IN_PROGRESS", "")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(0.1))}
	o := obs(at(0.1), pr)
	o.BotStartedMax = 101
	o.Result = &ActResult{LocalReview: &LocalReviewResult{Head: "h1", Summary: "clean <!-- converge:local-review head=h1 round=1 -->"}}
	o.Result.Requested = true
	s, acts, _ := Decide(s, o, c)
	if findAct(acts, ActComment, "") == nil {
		t.Fatalf("triage posts no summary: %q", sig(acts))
	}

	// The crash: no act ran. The resumed run's first observation.
	s2, acts, _ := Decide(s, obs(at(1), pr), c)
	if a := findAct(acts, ActComment, ""); a == nil || a.Key != "summary/h1" {
		t.Fatalf("the lost summary is not posted again: %q", sig(acts))
	}
	pr = forgeApply(pr, acts, at(1))
	_, acts, _ = Decide(s2, obs(at(2), pr), c)
	if findAct(acts, ActComment, "") != nil {
		t.Fatalf("the summary is posted twice: %q", sig(acts))
	}
}

// TestREL2_SummaryLostWithTheTerminalIsPosted: the last round's triage
// and the two-stable terminal were one step; converge died before that
// step's summary comment was posted. The resumed terminal posts it with
// its label and status, and only while the forge does not show it.
func TestREL2_SummaryLostWithTheTerminalIsPosted(t *testing.T) {
	c := cfg()
	c.LocalReview = true
	s := verifying("h1", 1)
	s.Phase, s.Terminal = PhaseDone, &Terminal{Reason: ReasonTwoStable, ExitCode: ExitCode(ReasonTwoStable)}
	s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 1, Summary: "clean <!-- converge:local-review head=h1 round=1 -->"}}
	pr := newPR("h1")
	pr.Checks = green()
	_, acts, term := Decide(s, obs(at(1), pr), c)
	wantTerminal(t, term, ReasonTwoStable)
	if a := findAct(acts, ActComment, ""); a == nil || a.Key != "summary/h1" {
		t.Fatalf("the lost summary is not posted with the terminal: %q", sig(acts))
	}
	pr = forgeApply(pr, acts, at(1))
	_, acts, _ = Decide(s, obs(at(2), pr), c)
	if findAct(acts, ActComment, "") != nil {
		t.Fatalf("the summary is posted twice: %q", sig(acts))
	}
}
