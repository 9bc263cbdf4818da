// Package copilot is GitHub Copilot as a review bot: who it is on every
// API surface (PR-O2), how a review is requested and its start proven
// (PR-O5, PR-S1), and the fail-closed reading of its review bodies
// (PR-O2, PR-O3, PR-O4). The PR loop sees it only through its ReviewBot
// interface.
package copilot

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
)

// RequestLogin is the botLogins value requestReviewsByLogin takes (PR-O5).
const RequestLogin = "copilot-pull-request-reviewer"

// StartedEvent is the issue event that proves a requested review started.
const StartedEvent = "copilot_work_started"

// DefaultAllowlist are Copilot's logins on every surface (PR-O2).
func DefaultAllowlist() []string {
	return []string{"copilot", "copilot-pull-request-reviewer", "copilot-pull-request-reviewer[bot]", "copilot[bot]", "github-copilot[bot]"}
}

// defaultAllowlist is DefaultAllowlist lower-cased for Is, which the
// loop asks about every comment of every thread on every step; never
// written.
var defaultAllowlist = func() []string {
	out := DefaultAllowlist()
	for i, a := range out {
		out[i] = strings.ToLower(a)
	}
	return out
}()

// Bot is Copilot. Allowlist are the logins it is recognised by (matched
// lower-case); empty means DefaultAllowlist.
type Bot struct {
	Allowlist []string
}

// New returns Copilot with its default logins.
func New() Bot { return Bot{} }

// Name is the bot's name: in findings and reports, and how a PR loop's
// configuration names it when it crosses a process (prloop.RegisterBot).
const Name = "copilot"

// Name names the bot in findings and reports.
func (Bot) Name() string { return Name }

// RequestLogin is the login a review is requested from.
func (Bot) RequestLogin() string { return RequestLogin }

// StartedEvent is the issue event that proves a review started.
func (Bot) StartedEvent() string { return StartedEvent }

// Is matches Copilot on every API surface (PR-O2): the login must be on
// the allowlist, so a user who names themselves "copilot-fan" is not
// Copilot, and must look like Copilot, so another allowlisted bot's review
// does not count as Copilot's.
func (b Bot) Is(login string) bool {
	list, lowered := b.Allowlist, false
	if len(list) == 0 {
		list, lowered = defaultAllowlist, true
	}
	for _, a := range list {
		la := a
		if !lowered {
			la = strings.ToLower(a)
		}
		if lowerEquals(la, login) {
			return strings.Contains(la, "copilot")
		}
	}
	return false
}

// lowerEquals is strings.ToLower(s) == lower without lower-casing s when
// s is ASCII (logins are): the loop asks Is about every comment it reads.
func lowerEquals(lower, s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.ToLower(s) == lower
		}
	}
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// statedCountRE matches the ways a Copilot review states its own count.
var statedCountRE = regexp.MustCompile(`generated (no new|no|\d+)(?: new)? comments?|comments generated:\s*(\d+)|\*\*findings:\*\*\s*(none|\d+)`)

// reviewedFilesRE reads "reviewed N out of M changed files": a review that
// looked at no file (of several, or of none: an empty diff) found nothing
// because it saw nothing.
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
	text := review.OwnText(body)
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
	text := review.OwnText(body)
	for _, p := range noSignalPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// Read is the one fail-closed reading of a Copilot review (PR-O2,
// PR-O3): clean only with zero comments everywhere and a recognized
// no-findings line; findings only when the stated count, the review's own
// comment count and its visible threads agree; anything else no signal or,
// while the forge may still be catching up, unsettled.
func (Bot) Read(r forge.Review, pr *forge.PullRequest) (review.Signal, string) {
	n, ok := statedCount(r.Body)
	if !ok {
		if isErrorReview(r.Body) {
			return review.NoSignal, "Copilot reported an error, a quota or unavailability"
		}
		if strings.TrimSpace(r.Body) == "" {
			return review.NoSignal, "the review body is empty"
		}
		return review.NoSignal, "the review body states no recognized count"
	}
	if n == 0 && isErrorReview(r.Body) {
		return review.NoSignal, "Copilot reported an error, a quota or unavailability"
	}
	if m := reviewedFilesRE.FindStringSubmatch(review.OwnText(r.Body)); m != nil && m[1] == "0" && n == 0 {
		return review.NoSignal, "Copilot reviewed none of the changed files"
	}
	rooted := reviewThreads(r, pr)
	if n != r.CommentCount || n != rooted {
		return review.Unsettled, fmt.Sprintf("the body says %d comment(s), the review has %d, %d thread(s) visible", n, r.CommentCount, rooted)
	}
	if n == 0 {
		return review.Clean, ""
	}
	return review.Findings, ""
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
