package cli

import (
	"github.com/convergeloop/converge/internal/config"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
)

// forgeLimits sets the forge client's REL-1 settings from the flags, the
// environment and --config: one client serves every PR of the host, so a
// repository's own file does not change them.
func forgeLimits(o ghclient.Options, v config.Values) ghclient.Options {
	o.Timeout = v.Duration("forge_timeout")
	o.Retry.BaseDelay = v.Duration("forge_backoff")
	o.MaxConcurrent = v.Int("forge_concurrency")
	// A rate-limit wait is sat out in-process only within the fault
	// budget; a longer one ends the call at once, the host refusing
	// requests locally until its reset, and the engine rides that out
	// (and ends the run errored, exit 7) under the same budget.
	o.Retry.MaxWait = min(ghclient.DefaultMaxWait, v.Duration("fault_budget"))
	return o
}
