package prloop

import (
	"regexp"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// isSelf reports whether login is converge's own identity.
func isSelf(login string, c Config) bool {
	return c.Self != "" && strings.EqualFold(login, c.Self)
}

func trustedBot(login string, c Config) bool {
	l := strings.ToLower(login)
	for _, b := range c.TrustedBots {
		if strings.ToLower(b) == l {
			return true
		}
	}
	return false
}

// trusted is SEC-1: write, maintain or admin on the repository, or the
// trusted-bot allowlist. A login without a known permission is untrusted,
// so a lookup the engine skipped can never let a stranger drive a fix.
func trusted(login string, o Observation, c Config) bool {
	if login == "" || isSelf(login, c) {
		return false
	}
	if trustedBot(login, c) {
		return true
	}
	switch strings.ToLower(o.Permissions[strings.ToLower(login)]) {
	case "admin", "maintain", "write":
		return true
	}
	return false
}

// isCopilot matches Copilot on every API surface (PR-O2): the login must be
// on the allowlist, so a user who names themselves "copilot-fan" is not
// Copilot, and must look like Copilot, so another allowlisted bot's review
// does not count as Copilot's.
func isCopilot(login string, c Config) bool {
	return trustedBot(login, c) && strings.Contains(strings.ToLower(login), "copilot")
}

func source(login string, c Config) string {
	switch {
	case isCopilot(login, c):
		return "copilot"
	case trustedBot(login, c) || strings.HasSuffix(strings.ToLower(login), "[bot]"):
		return "bot"
	}
	return "human"
}

// ownText drops the lines of a review body that are not the review's own
// words: fenced blocks and `>` quotes may carry another review's text
// (PR-O4), so neither an error phrase nor a count inside them counts.
func ownText(body string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if strings.HasPrefix(t, ">") {
			continue
		}
		out = append(out, line)
	}
	return strings.ToLower(strings.Join(out, "\n"))
}

var errorPhrases = []string{
	"copilot encountered an error",
	"encountered an error and was unable to review",
	"unable to review this pull request",
	"quota has been reached",
	"quota was reached",
	"reached your quota",
	"reached the quota",
	"quota exceeded",
	"exceeded your quota",
	"exceeded the quota",
}

// reviewCount matches the ways a Copilot review states what it found; a
// body that states a count reviewed the diff, whatever else it says.
var reviewCount = regexp.MustCompile(`generated (no new|\d+) comments?|comments generated:\s*\d+|\*\*findings:\*\*|reviewed changes`)

// isErrorReview is PR-O3: a Copilot review saying it hit an error or a
// quota is no signal. A real review whose overview happens to mention
// quotas states its count, which keeps it a review.
func isErrorReview(body string) bool {
	text := ownText(body)
	if reviewCount.MatchString(text) {
		return false
	}
	for _, p := range errorPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// bestReview picks, among the reviews pred admits, the latest; at equal
// times the one on the head wins (PR-O4), then the later in the list.
func bestReview(reviews []forge.Review, head string, pred func(forge.Review) bool) *forge.Review {
	var best *forge.Review
	for i := range reviews {
		r := &reviews[i]
		if !pred(*r) {
			continue
		}
		switch {
		case best == nil, r.SubmittedAt.After(best.SubmittedAt):
			best = r
		case r.SubmittedAt.Equal(best.SubmittedAt):
			if r.CommitSHA == head || best.CommitSHA != head {
				best = r
			}
		}
	}
	return best
}

// reviewedHead returns the review that proves conjunct 4 on head: a
// successful Copilot review whose commit is the head (PR-T1).
func reviewedHead(pr *forge.PullRequest, c Config) *forge.Review {
	return bestReview(pr.Reviews, pr.HeadSHA, func(r forge.Review) bool {
		return isCopilot(r.Author, c) && r.CommitSHA == pr.HeadSHA && !isErrorReview(r.Body)
	})
}

// threadKind is what converge makes of one observed thread.
type threadKind int

const (
	thResolved  threadKind = iota // resolved on the forge: nothing to do
	thOwn                         // opened by converge: never a finding
	thUntrusted                   // SEC-1: listed as a hand-off, never acted on
	thEscalated                   // converge escalated it on this head: a hand-off
	thDeferred                    // converge deferred it on this head: a hand-off
	thStale                       // converge resolved it before and the resolve never landed
	thFinding                     // actionable: goes to triage
)

// threadView is one thread as triage and verify see it.
type threadView struct {
	T         forge.Thread
	Kind      threadKind
	StaleFrom int  // thStale: the round whose resolve never landed
	Reopened  bool // thFinding: converge resolved it once and it is open again
}

// classifyThreads is the single reading of the thread list that triage,
// the reply phase and the verdict all share, so "actionable" means the same
// thing wherever it is counted.
func classifyThreads(s State, o Observation, c Config) []threadView {
	out := make([]threadView, 0, len(o.PR.Threads))
	for _, t := range o.PR.Threads {
		out = append(out, classifyThread(t, s, o, c))
	}
	return out
}

func classifyThread(t forge.Thread, s State, o Observation, c Config) threadView {
	v := threadView{T: t}
	switch {
	case t.IsResolved:
		v.Kind = thResolved
		return v
	case len(t.Comments) == 0:
		v.Kind = thUntrusted
		return v
	case isSelf(t.Comments[0].Author, c):
		v.Kind = thOwn
		return v
	case !trusted(t.Comments[0].Author, o, c):
		v.Kind = thUntrusted
		return v
	}
	head := o.PR.HeadSHA
	markers := threadMarkers(t, c)
	for _, m := range markers {
		if m.Head != markerField(head) {
			continue
		}
		switch m.Disposition {
		case DispEscalated:
			v.Kind = thEscalated
			return v
		case DispDeferred:
			v.Kind = thDeferred
			return v
		}
	}
	last := lastResolveRecord(s.Threads, t.ID, s.Round)
	lastMarker := -1
	for _, m := range markers {
		if m.Disposition == DispAddressed || m.Disposition == DispStale {
			v.Reopened = true
		}
		lastMarker = max(lastMarker, m.Index)
	}
	if last != nil {
		v.Reopened = true
		// Stale only when the forge never showed our resolve and no one
		// spoke in the thread since our reply: otherwise a human reopened
		// it or answered, and it goes back to triage (PR-S12).
		if !last.ObservedResolved && !humanSpokeAfter(t, lastMarker, c) {
			v.Kind = thStale
			v.StaleFrom = last.Round
			v.Reopened = false
			return v
		}
	}
	v.Kind = thFinding
	return v
}

// lastResolveRecord is converge's latest resolve of id in an earlier round.
func lastResolveRecord(recs []ThreadRecord, id string, round int) *ThreadRecord {
	var last *ThreadRecord
	for i := range recs {
		r := &recs[i]
		if r.ThreadID == id && r.Resolved && r.Round < round && (last == nil || r.Round >= last.Round) {
			last = r
		}
	}
	return last
}

func humanSpokeAfter(t forge.Thread, idx int, c Config) bool {
	for i := idx + 1; i < len(t.Comments); i++ {
		if !isSelf(t.Comments[i].Author, c) {
			return true
		}
	}
	return false
}

// finding normalises a trusted thread. Every finding is structural while no
// classifier runs (PR-S5, fail-closed).
func finding(v threadView, c Config) Finding {
	t := v.T
	first := t.Comments[0]
	end, start := t.Line, t.StartLine
	if end == 0 {
		// An outdated thread may no longer map to a line; its original
		// range still says where the reviewer pointed.
		end, start = t.OrigLine, t.OrigStart
	}
	if start == 0 {
		start = end
	}
	path := t.Path
	if path == "" {
		path = first.Path
	}
	return Finding{
		ID:        t.ID,
		ThreadID:  t.ID,
		Path:      path,
		StartLine: start,
		EndLine:   end,
		Summary:   first.Body,
		Verdict:   "structural",
		Source:    source(first.Author, c),
		Author:    first.Author,
		Reopened:  v.Reopened,
	}
}

// latestActivity is the newest comment or review by anyone but converge
// (PR-T3).
func latestActivity(pr *forge.PullRequest, c Config) time.Time {
	var latest time.Time
	for _, t := range pr.Threads {
		for _, cm := range t.Comments {
			if !isSelf(cm.Author, c) && cm.CreatedAt.After(latest) {
				latest = cm.CreatedAt
			}
		}
	}
	for _, r := range pr.Reviews {
		if !isSelf(r.Author, c) && r.SubmittedAt.After(latest) {
			latest = r.SubmittedAt
		}
	}
	return latest
}
