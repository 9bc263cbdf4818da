package prloop

import (
	"fmt"

	"github.com/convergeloop/converge/internal/agent"
)

// costBound is PR-T5's cost bound, one of the guards (PR-G1): once the
// cost the run's agents reported (fixers, verifiers, local review
// angles, the classifier's and the recap's judges: every round's Usage)
// reaches Config.MaxCostUSD, no further round, review or judge starts and
// the run ends cap-exhausted. Like the wall clock it is checked at every
// step but a fix in flight and its replies, which finish first (PR-S12):
// the spend can pass the bound by what that fix costs.
//
// An unknown cost never passes the bound silently: once any agent run of
// a bounded run reported no price (Codex and Gemini CLI report tokens
// only; a run stopped before its CLI's result line has none), the bound
// cannot be checked and the run ends cap-exhausted saying so. `converge
// pr` refuses max_cost at start for agents that never report a price.
// It returns the terminal's message, or "" while the bound holds.
func (d *step) costBound() string {
	bound := d.c.MaxCostUSD
	if bound <= 0 {
		return ""
	}
	var u agent.Usage
	for _, r := range d.s.Rounds {
		u.Add(r.Usage)
	}
	if !u.Reported() {
		return "" // no agent has run yet
	}
	switch u.Coverage() {
	case agent.CostKnown:
		if u.CostUSD >= bound {
			return fmt.Sprintf("max_cost %s spent: the agents reported %s in %s", usd(bound), usd(u.CostUSD), runsWord(u))
		}
		return ""
	case agent.CostPartial:
		return fmt.Sprintf("max_cost %s cannot be checked: %d of %d agent runs reported no price (at least %s spent); a cost bound that cannot be checked ends the run", usd(bound), u.Runs-u.PricedRuns, u.Runs, usd(u.CostUSD))
	default:
		return fmt.Sprintf("max_cost %s cannot be checked: the agents reported no price (%s); a cost bound that cannot be checked ends the run", usd(bound), runsWord(u))
	}
}

func runsWord(u agent.Usage) string {
	if u.Runs == 1 {
		return "1 agent run"
	}
	return fmt.Sprintf("%d agent runs", u.Runs)
}

// usd writes dollars with cents, and with more digits below a cent, so a
// small bound does not read as $0.00.
func usd(v float64) string {
	if v != 0 && v < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
