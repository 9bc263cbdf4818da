package prloop

import (
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/forge"
)

// isSelf reports whether login is converge's own identity.
func isSelf(login string, c Config) bool {
	return c.self != "" && strings.EqualFold(login, c.self)
}

// observed is c as the pure functions read it: converge's own login is the
// observation's (Observation.Self), never the worker's Config.Self, so the
// same observation decides the same on every worker and in a replay.
func (c Config) observed(o Observation) Config {
	c.self = o.Self
	return c
}

func trustedBot(login string, c Config) bool {
	if isBot(login, c) {
		return true
	}
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
	return o.Permissions[strings.ToLower(login)].CanWrite()
}

func source(login string, c Config) string {
	switch {
	case isBot(login, c):
		return c.Bot.Name()
	case trustedBot(login, c) || strings.HasSuffix(strings.ToLower(login), "[bot]"):
		return "bot"
	}
	return "human"
}

// classSource is the classifier's name for who wrote a comment.
func classSource(login, src string, c Config) string {
	if isBot(login, c) || src == "bot" {
		return classify.SourceCopilot
	}
	return classify.SourceHuman
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

// threadKind is what converge makes of one observed thread.
type threadKind int

const (
	thResolved  threadKind = iota // resolved on the forge: nothing to do
	thOwn                         // opened by converge: never a finding
	thUntrusted                   // SEC-1: listed as a hand-off, never acted on
	thEscalated                   // converge escalated it and no one spoke since: a hand-off
	thDeferred                    // converge deferred it and no one spoke since: a hand-off
	thStale                       // converge resolved it before and the resolve never landed
	// thPendingResolve: converge replied (addressed, by a commit on the
	// branch) and the resolve never followed — a crash between the two.
	thPendingResolve
	// thDropped: resolved as addressed by a commit that is no longer in
	// the head's history (PR-T12): unresolve it and handle it again.
	thDropped
	thFinding // actionable: goes to triage
	// thAcknowledged: a trusted thread converge never answered whose
	// every trusted comment only thanks or approves: no finding, nothing
	// to fix or answer (classify.Acknowledges).
	thAcknowledged
)

// threadView is one thread as triage and verify see it.
type threadView struct {
	T         forge.Thread
	Kind      threadKind
	StaleFrom int  // thStale: the round whose resolve never landed
	Reopened  bool // thFinding: converge resolved it once and it is open again
	// Marker is converge's last reply marker in the thread, if any.
	Marker *ReplyMarker
	// Text is what the thread says since converge's last reply in it
	// (threadText, PR-V6).
	Text string
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
	v := threadView{T: t, Text: threadText(t, o, c)}
	markers := threadMarkers(t, c)
	var last *markerAt
	if n := len(markers); n > 0 {
		last = &markers[n-1]
		v.Marker = &last.ReplyMarker
	}
	switch {
	case t.IsResolved:
		v.Kind = thResolved
		if last != nil && last.Disposition == DispAddressed && len(t.Comments) > 0 && !isSelf(t.Comments[0].Author, c) &&
			trusted(t.Comments[0].Author, o, c) && inHistory(o.PR, last.Head) == historyAbsent {
			v.Kind, v.Reopened = thDropped, true
			return v
		}
		if last != nil && len(t.Comments) > 0 && !isSelf(t.Comments[0].Author, c) && trustedSpokeAfter(t, last.Index, o, c) {
			// PR-V6: a trusted comment after converge's last reply makes
			// the thread actionable again although it stays resolved;
			// triage unresolves it and takes it up.
			v.Kind, v.Reopened = thFinding, true
		}
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
	spoke := last != nil && trustedSpokeAfter(t, last.Index, o, c)
	if last != nil && !spoke {
		// A hand-off stays handed off on every later head until a human
		// adds to the thread: answered once per hand-off (PR-T11).
		switch last.Disposition {
		case DispEscalated:
			v.Kind = thEscalated
			return v
		case DispDeferred:
			v.Kind = thDeferred
			return v
		}
	}
	rec := lastResolveRecord(s.Threads, t.ID, s.Round)
	for _, m := range markers {
		if resolves(m.Disposition) {
			v.Reopened = true
		}
	}
	if rec != nil {
		v.Reopened = true
		// Stale only when the forge never showed our resolve and no one
		// spoke in the thread since our reply: otherwise a human reopened
		// it or answered, and it goes back to triage (PR-S12).
		if !rec.ObservedResolved && !spoke {
			v.Kind = thStale
			v.StaleFrom = rec.Round
			v.Reopened = false
			return v
		}
		v.Kind = thFinding
		return v
	}
	if last != nil && !spoke && !slices.Contains(s.PriorResolved, PriorResolvedKey(t.ID, last.Head, last.Disposition)) {
		// converge's reply is the last word and no run ever saw the thread
		// resolved: the resolve after it never happened (a crash, REL-2).
		// Believed only while git still holds the addressing commit.
		switch {
		case last.Disposition == DispStale, last.Disposition == DispSettled,
			last.Disposition == DispAddressed && inHistory(o.PR, last.Head) == historyPresent:
			v.Kind, v.Reopened = thPendingResolve, false
			return v
		}
	}
	if last == nil && onlyAcknowledges(t, o, c) {
		// "Nice!" on a line asks for nothing: a trusted "Thanks" is no
		// finding, structural or minor (issue 36).
		v.Kind = thAcknowledged
		return v
	}
	v.Kind = thFinding
	return v
}

// onlyAcknowledges: every trusted comment of t only thanks or approves
// (classify.Acknowledges), and there is one.
func onlyAcknowledges(t forge.Thread, o Observation, c Config) bool {
	seen := false
	for _, cm := range t.Comments {
		if isSelf(cm.Author, c) || !trusted(cm.Author, o, c) {
			continue
		}
		if !classify.Acknowledges(cm.Body) {
			return false
		}
		seen = true
	}
	return seen
}

// PriorResolvedKey names one converge reply that an earlier run saw
// followed by a resolve; a thread open under that same reply now was
// reopened by a human.
func PriorResolvedKey(thread, head string, disposition Disposition) string {
	return markerField(thread) + "|" + markerField(head) + "|" + string(disposition)
}

type history int

const (
	historyUnknown history = iota
	historyPresent
	historyAbsent
)

// inHistory says whether sha is a commit of the PR's branch, as far as the
// observation can prove: absent only when the commit list is complete.
func inHistory(pr *forge.PullRequest, sha string) history {
	for _, c := range pr.Commits {
		if markerField(c.SHA) == sha || c.SHA == sha {
			return historyPresent
		}
	}
	if pr.CommitsComplete {
		return historyAbsent
	}
	return historyUnknown
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

// trustedSpokeAfter reports a comment by a trusted author (SEC-1) after
// the comment at idx (PR-V6) that says more than thanks: a "Thanks!" or
// "LGTM" after converge's reply asks for nothing and reopens nothing
// (classify.Acknowledges, issue 36).
func trustedSpokeAfter(t forge.Thread, idx int, o Observation, c Config) bool {
	for i := idx + 1; i < len(t.Comments); i++ {
		if a := t.Comments[i].Author; !isSelf(a, c) && trusted(a, o, c) && !classify.Acknowledges(t.Comments[i].Body) {
			return true
		}
	}
	return false
}

// threadText is what a finding of t says (PR-V6): the trusted comments
// since converge's last reply in it, or the whole thread when converge
// never replied (its first comment when no trusted one is new); one
// comment's body as it is, several each under its author.
// Classifier, judge and fixer all read it, so a reviewer's answer to a
// fix is what the next fix works on, not the first comment again.
func threadText(t forge.Thread, o Observation, c Config) string {
	start := 0
	if ms := threadMarkers(t, c); len(ms) > 0 {
		start = ms[len(ms)-1].Index + 1
	}
	var since []int // indexes: a thread's comments are read on every step
	for i := min(start, len(t.Comments)); i < len(t.Comments); i++ {
		// SEC-1: an untrusted reply in a trusted thread is never an
		// instruction to the fixer.
		if a := t.Comments[i].Author; !isSelf(a, c) && trusted(a, o, c) {
			since = append(since, i)
		}
	}
	switch len(since) {
	case 0:
		if len(t.Comments) == 0 {
			return ""
		}
		return t.Comments[0].Body
	case 1:
		return t.Comments[since[0]].Body
	}
	parts := make([]string, 0, len(since))
	for _, i := range since {
		cm := t.Comments[i]
		parts = append(parts, "@"+cm.Author+" wrote:\n"+cm.Body)
	}
	return strings.Join(parts, "\n\n")
}

// finding normalises a trusted thread. Its verdict is the classifier's
// heuristic (PR-S5): minor only when the heuristic decides minor; a
// borderline comment is structural, fail-closed, until a judge answers
// (judgeBorderline).
// The heuristic's result for the comment comes from known when the
// observation classified it already (Classes), else it is worked out here:
// the same either way.
func finding(v threadView, known Classes, c Config) Finding {
	t := v.T
	first := t.Comments[0]
	end, start := t.Line, t.StartLine
	if start == 0 {
		start = end
	}
	ostart := t.OrigStart
	if ostart == 0 {
		ostart = t.OrigLine
	}
	in := classInput(v, c)
	path, src, body := in.Path, source(first.Author, c), in.Body
	class := known.heuristic(in)
	verdict := VerdictStructural
	if class.verdict == classify.Minor {
		verdict = VerdictMinor
	}
	return Finding{
		ID:         t.ID,
		ThreadID:   t.ID,
		Path:       path,
		StartLine:  start,
		EndLine:    end,
		Summary:    body,
		Verdict:    verdict,
		Class:      class.text,
		Borderline: class.verdict == classify.Borderline,
		Source:     src,
		Author:     first.Author,
		Reopened:   v.Reopened,
		// An outdated thread keeps its current position (0 when it no
		// longer maps to a line) apart from what the reviewer saw, so a
		// suggestion is never applied at stale line numbers (case 8).
		Outdated:       t.IsOutdated || t.Line == 0,
		OrigStart:      ostart,
		OrigEnd:        t.OrigLine,
		OriginalCommit: first.OriginalCommit,
	}
}

// findingPath is the thread's path, else its first comment's.
func findingPath(t forge.Thread) string {
	if t.Path == "" {
		return t.Comments[0].Path
	}
	return t.Path
}

// findingText is what the finding says: the thread's text, else its
// first comment.
func findingText(v threadView) string {
	if v.Text == "" {
		return v.T.Comments[0].Body
	}
	return v.Text
}

// classInput is the comment the heuristic classifies for a thread's
// finding (PR-S5).
func classInput(v threadView, c Config) classify.Comment {
	t := v.T
	first := t.Comments[0]
	cstart, cend := hunkRange(first.DiffHunk, t.StartLine, t.Line, t.OrigStart, t.OrigLine)
	return classify.Comment{ID: t.ID, Source: classSource(first.Author, source(first.Author, c), c), Author: first.Author,
		Path: findingPath(t), StartLine: cstart, Line: cend, DiffHunk: first.DiffHunk, Body: findingText(v)}
}

// hunkRange is the line range to classify a comment at: the range its
// diff hunk ends on, which is the thread's original one (the hunk was cut
// at the original commit; an outdated thread has no current range), when
// there is a hunk and the original range is known; else the current.
func hunkRange(hunk string, start, end, origStart, origEnd int) (int, int) {
	if hunk == "" || origEnd == 0 {
		return start, end
	}
	return origStart, origEnd
}

// latestActivity is the newest comment or review by anyone but converge
// (PR-T3): thread comments, reviews, and top-level PR comments by people.
// A bot's top-level comment (a CI report, a deploy preview) follows a
// push rather than a reviewer; bots review through reviews and threads,
// as PR-T13 reads top-level comments too.
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
	for _, ic := range pr.IssueComments {
		if !isSelf(ic.Author, c) && isHumanLogin(ic.Author, c) && ic.CreatedAt.After(latest) {
			latest = ic.CreatedAt
		}
	}
	return latest
}
