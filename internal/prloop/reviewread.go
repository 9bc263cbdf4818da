package prloop

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// reviewSignal is what one Copilot review says, read fail-closed (PR-O3).
type reviewSignal int

const (
	// sigNone: no signal — an error or quota review, an unknown wording,
	// an empty body. Never classified, never terminal.
	sigNone reviewSignal = iota
	// sigUnsettled: the body's count, the review's own comment count and
	// the threads visible for it disagree; GitHub is eventually consistent,
	// so observe again before believing any of them (PR-O2).
	sigUnsettled
	// sigClean: zero comments, a recognized no-findings line, and the
	// forge agrees.
	sigClean
	// sigFindings: the stated count matches its visible comments.
	sigFindings
)

func (s reviewSignal) String() string {
	switch s {
	case sigUnsettled:
		return "unsettled"
	case sigClean:
		return "clean"
	case sigFindings:
		return "findings"
	}
	return "no signal"
}

// statedCountRE matches the ways a Copilot review states its own count.
var statedCountRE = regexp.MustCompile(`generated (no new|no|\d+)(?: new)? comments?|comments generated:\s*(\d+)|\*\*findings:\*\*\s*(none|\d+)`)

// reviewedFilesRE reads "reviewed N out of M changed files": a review that
// looked at none of several files found nothing because it saw nothing.
var reviewedFilesRE = regexp.MustCompile(`reviewed (\d+) out of (\d+) changed files`)

// noSignalPhrases mark a body that is not a review of the diff, whatever
// count it states alongside.
var noSignalPhrases = []string{
	"copilot encountered an error",
	"encountered an error and was unable to review",
	"unable to review this pull request",
	"wasn't able to review",
	"was not able to review",
	"premium request",
	"temporarily unavailable",
	"quota has been reached",
	"quota was reached",
	"reached your quota",
	"reached the quota",
	"quota exceeded",
	"exceeded your quota",
	"exceeded the quota",
}

// statedCount is the count a review body states in its own words (not in
// a fence or a quote). A current non-zero count beats a zero (PR-O4).
func statedCount(body string) (int, bool) {
	text := ownText(body)
	n, ok := 0, false
	for _, m := range statedCountRE.FindAllStringSubmatch(text, -1) {
		v := m[1] + m[2] + m[3]
		ok = true
		if c, err := strconv.Atoi(v); err == nil && c > n {
			n = c
		}
	}
	return n, ok
}

// isErrorReview reports a body that is Copilot saying it could not review
// (an error, a quota, unavailability) rather than a review.
func isErrorReview(body string) bool {
	text := ownText(body)
	for _, p := range noSignalPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// readReview is the one fail-closed reading of a Copilot review (PR-O2,
// PR-O3): clean only with zero comments everywhere and a recognized
// no-findings line; findings only when the stated count, the review's own
// comment count and its visible threads agree; anything else no signal or,
// while the forge may still be catching up, unsettled.
func readReview(r forge.Review, pr *forge.PullRequest) (reviewSignal, string) {
	n, ok := statedCount(r.Body)
	if !ok {
		if isErrorReview(r.Body) {
			return sigNone, "Copilot reported an error, a quota or unavailability"
		}
		if strings.TrimSpace(r.Body) == "" {
			return sigNone, "the review body is empty"
		}
		return sigNone, "the review body states no recognized count"
	}
	if n == 0 && isErrorReview(r.Body) {
		return sigNone, "Copilot reported an error, a quota or unavailability"
	}
	if m := reviewedFilesRE.FindStringSubmatch(ownText(r.Body)); m != nil && m[1] == "0" && m[2] != "0" && n == 0 {
		return sigNone, "Copilot reviewed none of the changed files"
	}
	rooted := reviewThreads(r, pr)
	if n != r.CommentCount || n != rooted {
		return sigUnsettled, fmt.Sprintf("the body says %d comment(s), the review has %d, %d thread(s) visible", n, r.CommentCount, rooted)
	}
	if n == 0 {
		return sigClean, ""
	}
	return sigFindings, ""
}

// reviewThreads counts the threads whose first comment belongs to r.
func reviewThreads(r forge.Review, pr *forge.PullRequest) int {
	n := 0
	for _, t := range pr.Threads {
		if len(t.Comments) > 0 && r.ID != "" && t.Comments[0].ReviewID == r.ID {
			n++
		}
	}
	return n
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

// latestCopilot is Copilot's latest review on the PR: latest by submission
// time, ties to the one on the head (PR-T1(4), PR-O4).
func latestCopilot(pr *forge.PullRequest, c Config) *forge.Review {
	return bestReview(pr.Reviews, pr.HeadSHA, func(r forge.Review) bool { return isCopilot(r.Author, c) })
}
