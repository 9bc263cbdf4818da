package cli

import "github.com/convergeloop/converge/internal/cmdutil"

// unpricedAgents are the agents whose runs never report a price to
// converge pr, with why: a run they are in cannot be bounded by cost.
var unpricedAgents = map[string]string{
	"codex":   "Codex reports tokens only",
	"gemini":  "Gemini CLI reports tokens only",
	"command": "converge pr reads no usage from a command agent",
}

// maxCostCheck refuses a cost bound (PR-T5) that no agent of the run
// could ever prove it kept: an unknown cost never passes the bound
// silently, so such a run would end at its first agent run. The bound
// is checked at run time too, against each run's own report.
func maxCostCheck(opts *prOptions, maxCost float64, where string) error {
	if maxCost <= 0 {
		return nil
	}
	roles := []struct{ flag, name string }{
		{"--agent", opts.Agent},
		{"--review-agent", reviewAgentName(opts)},
		{"--judge-agent", opts.JudgeAgent},
	}
	for _, r := range roles {
		if why, ok := unpricedAgents[r.name]; ok {
			return cmdutil.UsageErr("%s cannot bound this run: %s %s reports no price (%s), and a cost no agent reports is never taken to be under the bound; bound the run with max_iterations or max_wall_clock instead, or use agents that report a price (claude, opencode; suggest costs nothing)", where, r.flag, r.name, why)
		}
	}
	return nil
}
