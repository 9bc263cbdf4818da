package prloop

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_T9_ProofCarriesEachRoundsUsageAndTheTotal: the two-stable proof
// and the terminal's record say, per round and in total, the tokens the
// agents reported (input, cache read and write, output) and the cost with
// whether every agent run reported one; a round whose agents reported no
// price says "not reported", never $0 (PR-M5).
func TestPR_T9_ProofCarriesEachRoundsUsageAndTheTotal(t *testing.T) {
	s := verifying("h2", 2)
	s.Request.Accepted = "R2"
	s.Rounds[0].Usage = agent.Usage{InputTokens: 100, CacheReadTokens: 900, CacheWriteTokens: 50, OutputTokens: 40, CostUSD: 0.03, CostReported: true, Runs: 2, PricedRuns: 2}
	s.Rounds[1].Usage = agent.Usage{InputTokens: 300, OutputTokens: 60, Runs: 1} // Codex: tokens, no price
	pr := newPR("h2")
	pr.Reviews = []forge.Review{okReview("R2", "h2", at(1))}
	_, _, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	u := term.Proof.Usage
	if u == nil || term.Usage != u {
		t.Fatalf("proof usage %+v, terminal usage %+v", u, term.Usage)
	}
	if len(u.Rounds) != 2 || u.Rounds[0].Round != 1 || u.Rounds[0].Cost != agent.CostKnown || *u.Rounds[0].CostUSD != 0.03 ||
		u.Rounds[0].CacheReadTokens != 900 || u.Rounds[0].CacheWriteTokens != 50 || u.Rounds[0].TotalTokens != 1090 {
		t.Fatalf("round 1: %+v", u.Rounds)
	}
	if r2 := u.Rounds[1]; r2.Cost != agent.CostNotReported || r2.CostUSD != nil || r2.OutputTokens != 60 {
		t.Fatalf("round 2, no price reported: %+v", r2)
	}
	if tot := u.Total; tot.Cost != agent.CostPartial || *tot.CostUSD != 0.03 || tot.AgentRuns != 3 || tot.PricedRuns != 2 || tot.TotalTokens != 1450 {
		t.Fatalf("total: %+v", tot)
	}
	raw, _ := json.Marshal(term.Proof)
	for _, want := range []string{`"usage":{"rounds":[{"round":1,`, `"cost_usd":null,"cost":"not reported"`, `"cost":"partial"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("proof JSON lacks %s: %s", want, raw)
		}
	}
}

// TestPR_T8_ErroredTerminalCountsTheFailedFixsUsage: a run that ended
// errored records the usage of its rounds, the fix that failed included:
// its agents were paid for.
func TestPR_T8_ErroredTerminalCountsTheFailedFixsUsage(t *testing.T) {
	s := verifying("h1", 1)
	s.Rounds[0].Usage = agent.Usage{OutputTokens: 5, CostUSD: 0.01, CostReported: true, Runs: 1, PricedRuns: 1}
	spent := agent.Usage{OutputTokens: 7, CostUSD: 0.02, CostReported: true, Runs: 2, PricedRuns: 2}
	cause := &spentError{err: errors.New("fix: boom"), round: 1, usage: spent}
	next, _ := (&Loop{Deps: Deps{Config: cfg()}}).Fail(s, obs(at(1), newPR("h1")), cause)
	tot := next.Terminal.Usage.Total
	if tot.OutputTokens != 12 || tot.AgentRuns != 3 || *tot.CostUSD != 0.03 || next.Rounds[0].Usage.OutputTokens != 12 {
		t.Fatalf("errored usage %+v, round %+v", tot, next.Rounds[0].Usage)
	}
	if s.Rounds[0].Usage.OutputTokens != 5 {
		t.Fatal("Fail changed its input state")
	}
}
