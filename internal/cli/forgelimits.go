package cli

import (
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/forge/provider"
)

// limitsOf are REL-1's settings of every forge client, from the flags,
// the environment and --config: one client serves every PR of the host,
// so a repository's own file does not change them.
func limitsOf(v config.Values) provider.Limits {
	return provider.Limits{
		Timeout:     v.Duration("forge_timeout"),
		Backoff:     v.Duration("forge_backoff"),
		Concurrency: v.Int("forge_concurrency"),
		// A rate-limit wait is sat out in-process only within the fault
		// budget; a longer one ends the call at once, the host refusing
		// requests locally until its reset, and the engine rides that
		// out (and ends the run errored, exit 7) under the same budget.
		MaxWait: min(forgehttp.DefaultMaxWait, v.Duration("fault_budget")),
	}
}
