package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// TestPR_M5_RoundCostCountsTheLocalReview: the local review's angles are
// agent runs like the fixers, so what they reported is the round's cost
// (PR-M5); a cached review, which ran nothing, adds nothing.
func TestPR_M5_RoundCostCountsTheLocalReview(t *testing.T) {
	c := cfg()
	c.LocalReview = true
	u := agent.Usage{InputTokens: 40, OutputTokens: 20, CostUSD: 0.02, CostReported: true}
	s := awaiting("h1", 1)
	for i, lr := range []LocalReviewResult{{Head: "h1", Usage: u}, {Head: "h1", Cached: true}} {
		o := obs(at(0.1*float64(i+1)), newPR("h1"))
		o.Result = &ActResult{LocalReview: &lr}
		s, _, _ = Decide(s, o, c)
		if got := s.Rounds[len(s.Rounds)-1]; got.N != 1 || got.Usage != u {
			t.Fatalf("after review %d: round %d usage %+v, want round 1 %+v", i+1, got.N, got.Usage, u)
		}
	}
}
