package plan

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// TestPLAN_1_ResultCountsEachTasksUsageAndTheTotal: the plan's result
// says per task and in all what its implementers and reviewers reported
// consuming — tokens, and the cost with whether every run reported one;
// a task whose agents reported no price says "not reported", never $0.
func TestPLAN_1_ResultCountsEachTasksUsageAndTheTotal(t *testing.T) {
	claude := agent.Usage{InputTokens: 100, CacheWriteTokens: 20, OutputTokens: 10, CostUSD: 0.05, CostReported: true, Runs: 1, PricedRuns: 1}
	codex := agent.Usage{InputTokens: 300, OutputTokens: 30, Runs: 1}
	s := newSim(t)
	s.impl = func(task string, _ Dispatch) Report {
		if task == "b" {
			return Report{Implementer: TaskDone, Usage: codex}
		}
		return Report{Implementer: TaskDone, Usage: claude, CostUSD: claude.CostUSD}
	}
	s.rev = func(task string, _ int) Review {
		if task == "b" {
			return Review{Valid: true, Approved: true, Usage: codex}
		}
		return Review{Valid: true, Approved: true, Usage: claude, CostUSD: claude.CostUSD}
	}
	st := s.run(newRun(mustPlan(t, `
groups:
  - name: one
    tasks:
      - {id: a, prompt: do a, files: [a.go]}
      - {id: b, prompt: do b, files: [b.go]}
`), 1))
	res := BuildResult(st, t0)
	byID := map[string]TaskResult{}
	for _, tr := range res.Tasks {
		byID[tr.ID] = tr
	}
	a, b := byID["a"].Usage, byID["b"].Usage
	if a == nil || a.Cost != agent.CostKnown || *a.CostUSD != 0.1 || a.AgentRuns != 2 || a.CacheWriteTokens != 40 {
		t.Fatalf("task a usage %+v", a)
	}
	if b == nil || b.Cost != agent.CostNotReported || b.CostUSD != nil || b.OutputTokens != 60 {
		t.Fatalf("task b usage %+v", b)
	}
	if u := res.Usage; u.Cost != agent.CostPartial || u.AgentRuns != 4 || u.PricedRuns != 2 || u.TotalTokens != 2*130+2*330 {
		t.Fatalf("total %+v", u)
	}
	var w strings.Builder
	WriteReport(&w, res)
	for _, want := range []string{"- agent usage: 840 input (40 cache write), 80 output token(s) in 4 agent run(s); cost $0.1000 reported by 2 of 4 agent run(s) (partial",
		"- agent usage: 600 input, 60 output token(s) in 2 agent run(s); cost not reported"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, w.String())
		}
	}
}
