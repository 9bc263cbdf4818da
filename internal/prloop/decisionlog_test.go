package prloop

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/store"
)

// TestPR_M5_DecisionLogShowsTheRecaps: each recap gate held, its verdict
// and the rounds it reverted are in the log.
func TestPR_M5_DecisionLogShowsTheRecaps(t *testing.T) {
	s := started("h1")
	s.Recaps = []RecapRecord{
		{Count: 10, Verdict: recap.Verdict{Decision: recap.RevertAndShip, RevertRounds: []int{3, 7}, Reason: "rounds 3 and 7 drifted", Valid: true}, Reverted: "abcdef1234567890"},
		{Count: 20, Verdict: recap.Verdict{Decision: recap.HandOff, Reason: "no usable recap verdict: no answer", Why: "no answer"}},
	}
	raw, _ := json.Marshal(s)
	var b bytes.Buffer
	if err := WriteDecisionLog(&b, RunRecord{Run: store.Run{ID: "r-1", Kind: "pr", State: raw}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Recaps", "after 10 rounds: **REVERT-AND-SHIP**: rounds 3 and 7 drifted", "reverted rounds 3, 7 in `abcdef123456`", "after 20 rounds: **HAND-OFF** (no usable verdict: no answer)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPR_M5_DecisionLogRecordsEachFindingAndTheRoundsCost: per round, every
// finding with its source, verdict and why, disposition and the findings
// merged into it; the round's commit, notes, an unclear classification,
// and what its agents reported consuming, with the run's total.
func TestPR_M5_DecisionLogRecordsEachFindingAndTheRoundsCost(t *testing.T) {
	s := started("h1")
	s.Round = 2
	s.Rounds = []RoundRecord{
		{N: 1, HeadSHA: "h1", CommitSHA: "c1c1c1c1c1c1c1", Structural: true, Unclear: true,
			Findings: []Finding{{ID: "T1", ThreadID: "T1", Verdict: VerdictStructural, Class: "judge: unclear (no output)", MergedFrom: []string{"T2", "local-3"}}},
			Notes:    []string{"base sync: merged main into the branch as c1c1c1c1c1c1"},
			Usage:    agent.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: 0.0125, CostReported: true}},
		{N: 2, HeadSHA: "c1c1c1c1c1c1c1"},
	}
	raw, _ := json.Marshal(s)
	rounds := []store.Round{{N: 1, HeadSHA: "h1", CommitSHA: "c1c1c1c1c1c1c1", Structural: true}, {N: 2, HeadSHA: "c1c1c1c1c1c1c1"}}
	for i := range rounds {
		rounds[i].Summary, _ = json.Marshal(s.Rounds[i])
	}
	fs := []store.Finding{{ID: "T1", Round: 1, ThreadID: "T1", Path: "a.go", EndLine: 4, Summary: "off by one", Verdict: "structural", Source: "copilot", Author: "Copilot", Disposition: "addressed"}}
	var b bytes.Buffer
	if err := WriteDecisionLog(&b, RunRecord{Run: store.Run{ID: "r-1", Kind: "pr", State: raw}, Rounds: rounds, Findings: fs}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| T1 | copilot | Copilot | structural | judge: unclear (no output) | a.go:4 | addressed | T2, local-3 | off by one |",
		"- commit `c1c1c1c1c1c1`",
		"- unclear classification (counts as structural, PR-G4)",
		"- note: base sync: merged main",
		"- cost: 1200 input, 300 output token(s), $0.0125 reported",
		"- cost: no agent reported usage",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Count(b.String(), "- cost: 1200 input") != 2 {
		t.Errorf("the run's total cost should repeat round 1's:\n%s", b.String())
	}
}
