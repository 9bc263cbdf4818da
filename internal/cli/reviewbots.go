package cli

import (
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/review/duo"
)

// The PR loop's configuration names its review bot when it crosses a
// process (a Temporal workflow's input); prloop makes the bot again from
// its registry and stays forge-neutral. Copilot (GitHub) and GitLab Duo
// (GitLab) are both registered, so a worker reads back a loop of either
// forge. Copilot cannot register itself:
// prloop's own tests import it, so it may not import prloop. It is
// registered here, in the package that picks it (pr.go), so every command
// of the binary, a worker included, reads back what any of them wrote.
func init() {
	prloop.RegisterBot(copilot.Name, func() prloop.ReviewBot { return copilot.New() })
	prloop.RegisterBot(duo.Name, func() prloop.ReviewBot { return duo.New() })
}
