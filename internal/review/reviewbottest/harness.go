// Package reviewbottest is the contract every prloop.ReviewBot passes.
//
// As forgetest is for forges (and litestream keeps one suite all its
// replica clients run), a bot's own test calls Run with a constructor of
// fresh harnesses; Run runs every rule as a subtest. The rules are the
// fail-closed reading converge relies on (PR-O2, PR-O3, PR-O4, PR-O5,
// PR-S1): a bot is known by its logins and only by them, and only a
// review that proves "the bot reviewed this head and found nothing" reads
// clean; everything else is findings (when they are visible and agree),
// unsettled (when the forge may still be catching up) or no signal.
//
// The suite knows no bot's wording. A Harness hands it the bot and a
// Fixture: samples of what the bot leaves on a pull request, in the
// bot's own format, as the forge backend reports them (forge.Review,
// forge.Thread, forge.IssueComment). The suite puts them on pull requests
// of its own making, alone, combined and tampered with, and reads them.
package reviewbottest

import (
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
)

// Harness is one bot under test with its samples.
type Harness struct {
	Bot     prloop.ReviewBot
	Fixture Fixture
}

// Fixture makes samples of the bot's traces on a pull request. Every call
// returns a fresh sample: its review, comment and note ids must not
// collide with any other sample's, so the suite can put several on one
// pull request. Times may be fixed: the suite shifts a whole sample in
// time when it needs one after another.
type Fixture interface {
	// Logins are every login the bot shows under, on every API surface.
	Logins() []string
	// LookAlikes are logins that must not be taken for the bot: users
	// named like it, other bots. The suite adds its own variations.
	LookAlikes() []string

	// Clean is the bot's review of head that proves a clean pass: it
	// reviewed head and found nothing.
	Clean(head string) Sample
	// Findings is the bot's review of head with n ≥ 1 findings, each
	// opening a thread on the pull request (Sample.Threads).
	Findings(head string, n int) Sample
	// Contradicted is a review of head whose words say clean while n ≥ 1
	// comments of the same review are on the pull request.
	Contradicted(head string, n int) Sample
	// Empty is a review of head that says nothing (an empty body, or
	// whatever the bot's format has for it).
	Empty(head string) Sample
	// Garbled is a review of head whose words are not the bot's format.
	Garbled(head string) Sample
	// Truncated is the clean review of head cut off before it says so.
	Truncated(head string) Sample
	// Errors are the bot saying it could not review head: errors,
	// quotas, unavailability, nothing it could read.
	Errors(head string) []Sample
	// Hostile are reviews of head made to look clean: the clean words in
	// a quote or a fence, beside an error, from someone else, …
	Hostile(head string) []Sample
}

// Sample is what one review by the bot leaves on a pull request.
type Sample struct {
	// Name tells the sample apart in failures (Errors, Hostile).
	Name string
	// Review is the review the loop reads: the bot's latest of the run.
	Review forge.Review
	// Others are the bot's other reviews the same run left (on GitLab a
	// change request beside the diff notes), oldest first.
	Others []forge.Review
	// Threads are the review threads the run opened.
	Threads []forge.Thread
	// IssueComments are the top-level notes the run posted.
	IssueComments []forge.IssueComment
}
