package prloop

import "github.com/convergeloop/converge/internal/agent"

// UsageReport is what the run's agents reported consuming, per round and
// in total (PR-M5): the proof (PR-T9) and every terminal carry it. A cost
// no agent reported is "not reported", never $0.
type UsageReport struct {
	Rounds []RoundUsage `json:"rounds"`
	Total  agent.Spend  `json:"total"`
}

// RoundUsage is one round's line of a UsageReport.
type RoundUsage struct {
	Round int `json:"round"`
	agent.Spend
}

// UsageOf is the usage report of the rounds s recorded.
func UsageOf(s State) *UsageReport {
	r := &UsageReport{Rounds: []RoundUsage{}}
	var total agent.Usage
	for _, rr := range s.Rounds {
		total.Add(rr.Usage)
		r.Rounds = append(r.Rounds, RoundUsage{Round: rr.N, Spend: rr.Usage.Spend()})
	}
	r.Total = total.Spend()
	return r
}
