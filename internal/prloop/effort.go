package prloop

import (
	"fmt"
	"strings"

	localreview "github.com/convergeloop/converge/internal/review"
)

// Review effort (PR-S4): after a round whose local review found
// structural items, the next local review looks harder. Decide counts
// the rounds (a fact of the state); the workspace decides what looking
// harder means (more angles, a stronger model, review_escalation).

// reviewEffort is how many local reviews in a row, the latest before this
// round's first, found structural items: the effort of this round's
// review. Each head is reviewed once, so the reviews of the heads the
// loop pushed are the rounds' reviews; the state keeps the last few,
// which bounds the count (a ladder is short).
func (s State) reviewEffort() int {
	n := 0
	for i := len(s.LocalReviews) - 1; i >= 0; i-- {
		r := s.LocalReviews[i]
		if r.Round >= s.Round {
			continue
		}
		if r.found() == 0 {
			break
		}
		n++
	}
	return n
}

// found counts the review's structural findings, without the stand-ins
// of angles that could not be parsed: a review that could not be read
// found nothing to look harder for.
func (r LocalReviewRecord) found() int {
	n := 0
	for _, f := range r.Findings {
		if f.Verdict != VerdictMinor && f.Summary != localreview.UnparsedSummary(strings.TrimPrefix(f.Author, "local-review/")) {
			n++
		}
	}
	return n
}

// escalationNote records in the round's ledger that its review looks
// harder, and why.
func escalationNote(effort int) string {
	return fmt.Sprintf("local review escalated (level %d): the %d local review(s) before found structural items (PR-S4)", effort, effort)
}
