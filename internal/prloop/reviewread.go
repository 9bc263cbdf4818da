package prloop

import (
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
)

// ReviewBot is a forge's review bot as the loop needs it (review.Bot):
// the loop consumes it, a forge's provider names it.
type ReviewBot = review.Bot

// botName names the review bot in what converge writes and prints: its
// Name ("copilot" on GitHub), or "the review bot" when none is configured.
// Human-facing text never names a forge's bot by a literal: the same loop
// drives GitLab, whose bot is another.
func botName(c Config) string {
	if c.Bot == nil {
		return "the review bot"
	}
	return c.Bot.Name()
}

// isBot reports whether login is the configured review bot.
func isBot(login string, c Config) bool { return c.Bot != nil && c.Bot.Is(login) }

// readReview is the bot's reading of r; with no bot, nothing is a review.
func readReview(r forge.Review, pr *forge.PullRequest, c Config) (review.Signal, string) {
	if c.Bot == nil {
		return review.NoSignal, "no review bot is configured"
	}
	return c.Bot.Read(r, pr)
}

// reviewComments counts the comments in the threads that were submitted
// with r, first or reply.
func reviewComments(r forge.Review, pr *forge.PullRequest) int {
	n := 0
	for _, t := range pr.Threads {
		for _, c := range t.Comments {
			if r.ID != "" && c.ReviewID == r.ID {
				n++
			}
		}
	}
	return n
}

// latestBot is the review bot's latest review on the PR: latest by
// submission time, ties to the one on the head (PR-T1(4), PR-O4).
func latestBot(pr *forge.PullRequest, c Config) *forge.Review {
	return bestReview(pr.Reviews, pr.HeadSHA, func(r forge.Review) bool { return isBot(r.Author, c) })
}
