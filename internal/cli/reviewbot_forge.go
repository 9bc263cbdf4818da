package cli

import (
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/review/duo"
)

// reviewBotFor is the independent review bot of a forge: Copilot on
// GitHub, GitLab Duo Code Review on GitLab. A forge converge does not know
// has none (nil): the loop then runs without a bot (single-iteration
// mode, PR-M3) rather than asking a bot of another forge.
func reviewBotFor(kind forge.Kind) prloop.ReviewBot {
	switch kind {
	case forge.GitHub:
		return copilot.New()
	case forge.GitLab:
		return duo.New()
	}
	return nil
}
