package review

import "github.com/convergeloop/converge/internal/forge"

// Bot is a forge's review bot (Copilot on GitHub, Duo on GitLab) as the
// PR loop needs it: who it is, how to ask it, how to tell it started, and
// what one of its reviews says. Its methods are pure, so Decide stays
// pure. A forge's provider names its bot; the loop takes it as
// prloop.ReviewBot, this same interface.
type Bot interface {
	Name() string
	// Is reports whether login is the bot, on any API surface.
	Is(login string) bool
	// RequestLogin is the login a review is requested from.
	RequestLogin() string
	// StartedEvent is the issue event that proves a requested review
	// started ("" when the forge shows none).
	StartedEvent() string
	// Read reads one of its reviews fail-closed against the PR it is on.
	Read(r forge.Review, pr *forge.PullRequest) (Signal, string)
}
