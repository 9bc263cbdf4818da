package cli

import (
	"time"

	"github.com/convergeloop/converge/internal/config"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	glclient "github.com/convergeloop/converge/internal/forge/gitlab"
)

// forgeLimits sets the forge client's REL-1 settings from the flags, the
// environment and --config: one client serves every PR of the host, so a
// repository's own file does not change them.
func forgeLimits(o ghclient.Options, v config.Values) ghclient.Options {
	l := limitsOf(v)
	o.Timeout, o.Retry.BaseDelay, o.MaxConcurrent, o.Retry.MaxWait = l.timeout, l.backoff, l.concurrency, l.maxWait
	return o
}

// gitlabLimits is forgeLimits for a GitLab client.
func gitlabLimits(o glclient.Options, v config.Values) glclient.Options {
	l := limitsOf(v)
	o.Timeout, o.Retry.BaseDelay, o.MaxConcurrent, o.Retry.MaxWait = l.timeout, l.backoff, l.concurrency, l.maxWait
	return o
}

// clientLimits are REL-1's settings every forge client takes.
type clientLimits struct {
	timeout, backoff, maxWait time.Duration
	concurrency               int
}

func limitsOf(v config.Values) clientLimits {
	return clientLimits{
		timeout:     v.Duration("forge_timeout"),
		backoff:     v.Duration("forge_backoff"),
		concurrency: v.Int("forge_concurrency"),
		// A rate-limit wait is sat out in-process only within the fault
		// budget; a longer one ends the call at once, the host refusing
		// requests locally until its reset, and the engine rides that
		// out (and ends the run errored, exit 7) under the same budget.
		maxWait: min(ghclient.DefaultMaxWait, v.Duration("fault_budget")),
	}
}
