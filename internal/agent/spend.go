package agent

import (
	"fmt"
	"strings"
)

// AddRun adds the usage of one agent run, as its Result reports it: it
// counts as one run, priced when its CLI reported a price. A Usage that
// already counts its runs (a sum, e.g. a Runner's) is added as it is, so
// a run is never counted twice.
func (u *Usage) AddRun(o Usage) {
	u.Add(o.Counted())
}

// Counted is u as the usage of one run, unless it already counts runs.
func (u Usage) Counted() Usage {
	if u.Runs == 0 {
		u.Runs = 1
		if u.CostReported {
			u.PricedRuns = 1
		}
	}
	return u
}

// How much of a cost the agents reported (Spend.Cost).
const (
	CostKnown       = "reported"     // every run reported its price
	CostPartial     = "partial"      // some runs did not: the cost is a lower bound
	CostNotReported = "not reported" // no run did: the cost is unknown, not zero
)

// Coverage says how much of u's cost the agents reported: CostKnown,
// CostPartial or CostNotReported. A sum without run counts (recorded
// before runs were counted) is CostKnown when any run reported a price.
func (u Usage) Coverage() string {
	switch {
	case !u.CostReported && u.PricedRuns == 0:
		return CostNotReported
	case u.Runs > 0 && u.PricedRuns < u.Runs:
		return CostPartial
	}
	return CostKnown
}

// Spend is a Usage as a proof, a result or a log shows it (PR-M5, PR-T9,
// LOOP-7): the tokens, and the price only as far as the agents reported
// one. CostUSD is null when no agent reported a price: an unknown cost is
// never $0.
type Spend struct {
	// InputTokens are input tokens read without a cache; with
	// CacheReadTokens and CacheWriteTokens they are all input.
	InputTokens      int64    `json:"input_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens"`
	OutputTokens     int64    `json:"output_tokens"`
	TotalTokens      int64    `json:"total_tokens"`
	CostUSD          *float64 `json:"cost_usd"`
	// Cost is CostKnown, CostPartial or CostNotReported.
	Cost string `json:"cost"`
	// AgentRuns are the runs counted, PricedRuns those that reported a
	// price (0 for sums recorded before runs were counted).
	AgentRuns  int `json:"agent_runs"`
	PricedRuns int `json:"priced_runs"`
}

// Spend is u as reports show it.
func (u Usage) Spend() Spend {
	s := Spend{InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
		OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens(), Cost: u.Coverage(), AgentRuns: u.Runs, PricedRuns: u.PricedRuns}
	if s.Cost != CostNotReported {
		c := u.CostUSD
		s.CostUSD = &c
	}
	return s
}

// Reported reports whether u holds anything an agent reported, or any run.
func (u Usage) Reported() bool {
	return u.TotalTokens() > 0 || u.CostReported || u.Runs > 0
}

// String is u in one line: the tokens, then the cost as far as it is
// known, e.g. "1200 input (1000 cache read), 300 output token(s); cost
// $0.0125 reported by 1 of 2 agent run(s) (partial)".
func (u Usage) String() string {
	if !u.Reported() {
		return "no agent usage recorded; cost not reported"
	}
	var b strings.Builder
	in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	fmt.Fprintf(&b, "%d input", in)
	var cache []string
	if u.CacheReadTokens > 0 {
		cache = append(cache, fmt.Sprintf("%d cache read", u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		cache = append(cache, fmt.Sprintf("%d cache write", u.CacheWriteTokens))
	}
	if len(cache) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(cache, ", "))
	}
	fmt.Fprintf(&b, ", %d output token(s)", u.OutputTokens)
	if u.Runs > 0 {
		fmt.Fprintf(&b, " in %d agent run(s)", u.Runs)
	}
	switch u.Coverage() {
	case CostNotReported:
		b.WriteString("; cost not reported")
	case CostPartial:
		fmt.Fprintf(&b, "; cost $%.4f reported by %d of %d agent run(s) (partial: the rest reported no price)", u.CostUSD, u.PricedRuns, u.Runs)
	default:
		fmt.Fprintf(&b, "; cost $%.4f reported", u.CostUSD)
	}
	return b.String()
}

// Usage is s back as a Usage, e.g. to print a stored Spend.
func (s Spend) Usage() Usage {
	u := Usage{InputTokens: s.InputTokens, CacheReadTokens: s.CacheReadTokens, CacheWriteTokens: s.CacheWriteTokens,
		OutputTokens: s.OutputTokens, Runs: s.AgentRuns, PricedRuns: s.PricedRuns}
	if s.CostUSD != nil {
		u.CostUSD, u.CostReported = *s.CostUSD, true
	}
	return u
}

// String is s in one line, as Usage.String.
func (s Spend) String() string { return s.Usage().String() }
