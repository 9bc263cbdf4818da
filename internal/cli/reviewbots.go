package cli

import (
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/prloop"
)

// The PR loop's configuration names its review bot when it crosses a
// process (a Temporal workflow's input); prloop makes the bot again from
// its registry and stays forge-neutral. Every registered forge's bot
// (Copilot, GitLab Duo) is registered, so a worker reads back a loop of
// any forge. A bot cannot register itself: prloop's own tests import
// Copilot, so it may not import prloop. It is registered here, after the
// forges' providers registered (forgesite.go's imports run first), so
// every command of the binary, a worker included, reads back what any of
// them wrote.
func init() {
	for _, p := range provider.All() {
		prloop.RegisterBot(p.ReviewBot().Name(), func() prloop.ReviewBot { return p.ReviewBot() })
	}
}
