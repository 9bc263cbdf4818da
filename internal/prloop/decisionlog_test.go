package prloop

import (
	"bytes"
	"encoding/json"
	"fmt"
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
			Usage:    agent.Usage{InputTokens: 1000, CacheReadTokens: 200, OutputTokens: 300, CostUSD: 0.0125, CostReported: true, Runs: 2, PricedRuns: 1}},
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
		"- agent usage: 1200 input (200 cache read), 300 output token(s) in 2 agent run(s); cost $0.0125 reported by 1 of 2 agent run(s) (partial",
		"- agent usage: no agent usage recorded; cost not reported",
		"- agent usage, all rounds: 1200 input (200 cache read), 300 output token(s) in 2 agent run(s); cost $0.0125 reported by 1 of 2",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "$0.00") {
		t.Errorf("a cost no agent reported reads as $0:\n%s", b.String())
	}
}

// TestAG_T4_DecisionLogQuotesTheAgentThatCouldNotRun: an errored run's
// log names the agent that could not run and quotes its CLI's message,
// redacted (SEC-3).
func TestAG_T4_DecisionLogQuotesTheAgentThatCouldNotRun(t *testing.T) {
	pr := newPR("h1")
	cause := fmt.Errorf("fix: %w", &agent.RunFailure{Agent: "claude", What: "x", CLI: &agent.CLIError{Agent: "claude", Kind: agent.FailAuth,
		Message: "Invalid API key sk-ant-api03-abcdefghijklmnopqrstuvwx · Please run /login"}})
	s, _ := (&Loop{Deps: Deps{Config: cfg()}}).Fail(verifying("h1", 1), obs(at(1), pr), cause)
	raw, _ := json.Marshal(s)
	var b bytes.Buffer
	if err := WriteDecisionLog(&b, RunRecord{Run: store.Run{ID: "r-1", Kind: "pr", State: raw}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**errored** (exit 6): fix: agent claude: authentication failed",
		"- agent that could not run: claude (auth): agent claude: authentication failed: \"Invalid API key [REDACTED] · Please run /login\""} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "sk-ant-api03") {
		t.Errorf("the log holds the key:\n%s", b.String())
	}
}
