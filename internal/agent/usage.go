package agent

// Usage is what one agent run consumed, as its CLI reported it (AG-B1).
// Token figures are normalised across CLIs: InputTokens are the input
// tokens read without a cache (Claude Code's input_tokens; Codex's
// input_tokens less cached_input_tokens), so InputTokens +
// CacheReadTokens + CacheWriteTokens is all input. Backends that report
// nothing leave it zero.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens are part of OutputTokens where a CLI reports them.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// CostUSD is the CLI's own estimate of the run's price; meaningful
	// only when CostReported (Codex reports tokens, no price).
	CostUSD      float64 `json:"cost_usd,omitempty"`
	CostReported bool    `json:"cost_reported,omitempty"`
	// Turns is the number of turns as the CLI counts them (Claude Code's
	// num_turns), where it reports one.
	Turns int `json:"turns,omitempty"`
	// Runs counts the agent runs summed here, and PricedRuns those that
	// reported a price (AddRun): a cost is known in full only when every
	// run reported one. A backend's Result leaves both zero.
	Runs       int `json:"runs,omitempty"`
	PricedRuns int `json:"priced_runs,omitempty"`
}

// Add adds o to u, e.g. the runs of one step and its extensions.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CostUSD += o.CostUSD
	u.CostReported = u.CostReported || o.CostReported
	u.Turns += o.Turns
	u.Runs += o.Runs
	u.PricedRuns += o.PricedRuns
}

// TotalTokens is all input and output tokens.
func (u Usage) TotalTokens() int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
}
