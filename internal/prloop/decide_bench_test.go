package prloop_test

import (
	"testing"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
)

// TestPR_S5_ReviewedRoundFixtureIsARound: the benchmark's fixture is the
// step it claims to be, one that reads every thread, not a wait.
func TestPR_S5_ReviewedRoundFixtureIsARound(t *testing.T) {
	s, o, c := prlooptest.ReviewedRound(20)
	_, acts, term := prloop.Decide(s, o, c)
	if term != nil {
		t.Fatalf("terminal %+v", term)
	}
	if len(acts) == 0 || acts[0].Kind == prloop.ActWait {
		t.Fatalf("actions %+v: the fixture does not reach the round", acts)
	}
}

// BenchmarkDecide_500Threads times one Decide of a round whose review
// left 500 new threads (issue 18's target: under 1 ms), on the
// observation as the loop gives it: its comments classified when first
// observed.
func BenchmarkDecide_500Threads(b *testing.B) {
	s, o, c := prlooptest.ReviewedRound(500)
	for b.Loop() {
		prloop.Decide(s, o, c)
	}
}

// BenchmarkDecide_500ThreadsUnclassified is the same Decide classifying
// the 500 comments itself, as it did before observations carried them.
func BenchmarkDecide_500ThreadsUnclassified(b *testing.B) {
	s, o, c := prlooptest.ReviewedRound(500)
	o.Classes = nil
	for b.Loop() {
		prloop.Decide(s, o, c)
	}
}

// BenchmarkClassifyObserved_500New times classifying the 500 comments on
// their first observation: paid once per comment, not once per step.
func BenchmarkClassifyObserved_500New(b *testing.B) {
	s, o, c := prlooptest.ReviewedRound(500)
	for b.Loop() {
		prloop.ClassifyObserved(s, o, c, nil)
	}
}

// BenchmarkClassifyObserved_500Seen times the same observation read
// again (a later wake-up, a probe): every comment is in the previous
// observation's classes.
func BenchmarkClassifyObserved_500Seen(b *testing.B) {
	s, o, c := prlooptest.ReviewedRound(500)
	prev := o.Classes
	for b.Loop() {
		prloop.ClassifyObserved(s, o, c, prev)
	}
}

// TestPR_S2_WaitingRoundFixtureWaits: the waiting fixture reads every
// thread and finds nothing to do but wait, as a fleet's wake-ups mostly do.
func TestPR_S2_WaitingRoundFixtureWaits(t *testing.T) {
	s, o, c := prlooptest.WaitingRound(20)
	_, acts, term := prloop.Decide(s, o, c)
	if term != nil || len(acts) != 1 || acts[0].Kind != prloop.ActWait {
		t.Fatalf("terminal %+v, actions %+v: want one wait", term, acts)
	}
}

// BenchmarkDecide_500ThreadsWaiting times the step most wake-ups take:
// 500 answered threads, nothing new, a wait.
func BenchmarkDecide_500ThreadsWaiting(b *testing.B) {
	s, o, c := prlooptest.WaitingRound(500)
	for b.Loop() {
		prloop.Decide(s, o, c)
	}
}
