package prloop

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	localreview "github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
)

// Memory of settled findings. Copilot does not read replies: a point
// converge deferred or escalated comes back in its next review as a new
// thread, and the local review, which never saw the thread, raises it
// again too. Fixing it then would overrule the human it was handed to.
//
// The memory is the forge itself: a settled decision is a trusted thread
// whose last converge reply is deferred or escalated and in which no
// trusted author spoke since (open, awaiting the human, or resolved by
// one). A finding of the round that Copilot or the local review raised
// (itself and everything merged into it, PR-S6), that is not a reopened
// thread, and that is one finding with a settled decision's point by
// PR-S6's own measure (duplicates: same file, spans at most nearLines
// apart, word-set Jaccard ≥ 1/2) is settled: held with DispSettled, never
// fixed, its thread answered with converge's earlier answer quoted and the
// earlier thread linked, then resolved (the earlier thread still carries
// the decision). A human who raises the point again is heard: only the
// review bot and the local review are answered from memory.
//
// The earlier thread's position is its current one; an outdated thread
// that lost its line is compared at its original lines, where the
// reviewer saw it (a re-raise is usually on unchanged lines).
//
// With review_memory on, the settled decisions also go into the
// repository: a delimited section of the review instructions
// (MemorySection), the same section in Copilot's instructions, written by
// the workspace into a round's own commit and never on their own.

// SettledRef is the earlier decision a settled finding is answered from.
type SettledRef struct {
	ThreadID    string      `json:"thread_id"`
	URL         string      `json:"url,omitempty"` // the earlier thread's first comment
	Disposition Disposition `json:"disposition"`   // deferred or escalated
	// Round is the round of this run that decided it; 0 when an earlier
	// run did.
	Round    int    `json:"round,omitempty"`
	Head     string `json:"head,omitempty"`
	Resolved bool   `json:"resolved,omitempty"` // a human resolved the earlier thread since
	// Rationale is converge's answer in the earlier thread, without its
	// signature and marker.
	Rationale string `json:"rationale"`
}

// settledDecision is one decision of the memory: the reference and the
// point it decided on (position and text, as PR-S6 compares them).
type settledDecision struct {
	ref   SettledRef
	point Finding
}

// declines reports a disposition that hands a point to a human unfixed.
func declines(d Disposition) bool {
	return d == DispDeferred || d == DispEscalated
}

// settledDecisions is the memory as the observation shows it, in thread
// order.
func settledDecisions(s State, o Observation, c Config) []settledDecision {
	var out []settledDecision
	for _, t := range o.PR.Threads {
		if len(threadMarkers(t, c)) == 0 {
			continue // settledFrom wants converge's reply in the thread
		}
		if dec, ok := settledFrom(classifyThread(t, s, o, c), s, o, c); ok {
			out = append(out, dec)
		}
	}
	return out
}

func settledFrom(v threadView, s State, o Observation, c Config) (settledDecision, bool) {
	t := v.T
	switch v.Kind {
	case thDeferred, thEscalated, thResolved:
	default:
		return settledDecision{}, false
	}
	if v.Marker == nil || !declines(v.Marker.Disposition) || len(t.Comments) == 0 {
		return settledDecision{}, false
	}
	if first := t.Comments[0].Author; isSelf(first, c) || !trusted(first, o, c) {
		return settledDecision{}, false
	}
	ms := threadMarkers(t, c)
	last := ms[len(ms)-1]
	if trustedSpokeAfter(t, last.Index, o, c) {
		return settledDecision{}, false // reopened by its reviewer: not settled
	}
	ref := SettledRef{
		ThreadID: t.ID, URL: t.Comments[0].URL, Disposition: last.Disposition, Head: last.Head,
		Resolved: t.IsResolved, Rationale: replyWords(t.Comments[last.Index].Body),
	}
	for _, r := range s.Threads {
		if r.ThreadID == t.ID && r.Disposition == last.Disposition && r.Round > ref.Round {
			ref.Round = r.Round
		}
	}
	return settledDecision{ref: ref, point: threadPoint(t)}, true
}

// replyWords is what a converge reply says: its text before the
// signature, without any marker.
func replyWords(body string) string {
	if i := strings.Index(body, "\n\n— converge"); i >= 0 {
		body = body[:i]
	}
	return strings.TrimSpace(markerRE.ReplaceAllString(body, ""))
}

// threadPoint is a thread's point as PR-S6 compares it: its first
// comment, at its current lines or, when it lost them, its original ones.
func threadPoint(t forge.Thread) Finding {
	first := t.Comments[0]
	path := t.Path
	if path == "" {
		path = first.Path
	}
	start, end := t.StartLine, t.Line
	if end == 0 && t.OrigLine > 0 {
		start, end = t.OrigStart, t.OrigLine
	}
	return Finding{ID: t.ID, ThreadID: t.ID, Path: path, StartLine: start, EndLine: end, Summary: first.Body}
}

// settle answers from memory the round's findings that raise a settled
// point again: each is held DispSettled with the decision it repeats, so
// it is never fixed and its thread is answered from that decision.
func (d *step) settle(fs []Finding) []Finding {
	decisions := settledDecisions(d.s, d.o, d.c)
	if len(decisions) == 0 {
		return fs
	}
	src := d.findingSources()
	out := slices.Clone(fs)
	for i := range out {
		f := &out[i]
		if f.Held != "" || f.Reopened || !d.reRaisedByReviewers(*f, src) {
			continue
		}
		if dec, ok := settledMatch(*f, decisions); ok {
			ref := dec.ref
			f.Settled = &ref
			f.Held, f.HeldReason = DispSettled, settledWords(ref)
		}
	}
	return out
}

// settledMatch is the first decision whose point f repeats (PR-S6's
// measure), other than f's own threads.
func settledMatch(f Finding, ds []settledDecision) (settledDecision, bool) {
	for _, dec := range ds {
		if dec.ref.ThreadID == f.ThreadID || slices.Contains(f.MergedFrom, dec.ref.ThreadID) {
			continue
		}
		if duplicates(f, dec.point) {
			return dec, true
		}
	}
	return settledDecision{}, false
}

// findingSources names who raised each finding the round can hold: the
// threads by their first author, the local review's findings "local".
func (d *step) findingSources() map[string]string {
	out := map[string]string{}
	for _, t := range d.pr.Threads {
		if len(t.Comments) > 0 {
			out[t.ID] = source(t.Comments[0].Author, d.c)
		}
	}
	if lr := d.s.localReview(d.head); lr != nil {
		for _, f := range lr.Findings {
			out[f.ID] = "local"
		}
	}
	return out
}

// reRaisedByReviewers: f, and every finding merged into it, was raised by
// the review bot or the local review; anyone else (a human, an id no
// source is known for) is heard again.
func (d *step) reRaisedByReviewers(f Finding, src map[string]string) bool {
	for _, id := range append([]string{f.ID}, f.MergedFrom...) {
		s := src[id]
		if s != "local" && (d.c.Bot == nil || s != d.c.Bot.Name()) {
			return false
		}
	}
	return true
}

// settledWords is a settled finding's reply: the earlier decision,
// linked, with converge's answer there quoted.
func settledWords(ref SettledRef) string {
	link := "an earlier thread (" + ref.ThreadID + ")"
	if ref.URL != "" {
		link = fmt.Sprintf("[an earlier thread](%s)", ref.URL)
	}
	what := "deferred to a human"
	if ref.Disposition == DispEscalated {
		what = "escalated to a human"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Settled earlier: converge %s this same point in %s", what, link)
	if ref.Round > 0 {
		fmt.Fprintf(&b, " (round %d)", ref.Round)
	}
	b.WriteString(" and does not fix it again here. Its answer there:\n\n")
	for _, l := range strings.Split(text.Clip(ref.Rationale, 1500), "\n") {
		b.WriteString(strings.TrimRight("> "+l, " ") + "\n")
	}
	b.WriteString("\n")
	if ref.Resolved {
		b.WriteString("That thread has been resolved since. ")
	} else {
		b.WriteString("That thread stays open for a human. ")
	}
	b.WriteString("To change the decision, answer there; resolving this one")
	return b.String()
}

// holdUnsettled is hold (PR-S7, PR-S8) over the findings memory did not
// settle: a settled point is not fixed, so it conflicts with nothing and
// is none of the round's structural work.
func (d *step) holdUnsettled(fs []Finding) bool {
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Held == DispSettled }) {
		return d.hold(fs)
	}
	var idx []int
	var live []Finding
	for i, f := range fs {
		if f.Held != DispSettled {
			idx, live = append(idx, i), append(live, f)
		}
	}
	if len(live) == len(fs) {
		return d.hold(fs)
	}
	all := d.hold(live)
	for k, i := range idx {
		fs[i] = live[k]
	}
	return all
}

// settledLocal is, for the local review's summary, each local finding
// memory settled, with the thread whose decision answers it.
func settledLocal(local, kept []Finding) []localreview.Merged {
	var out []localreview.Merged
	for _, l := range local {
		for _, k := range kept {
			if k.ID != l.ID || k.Settled == nil {
				continue
			}
			out = append(out, localreview.Merged{Angle: strings.TrimPrefix(l.Author, "local-review/"), File: l.Path,
				StartLine: l.StartLine, EndLine: l.EndLine,
				Into: fmt.Sprintf("review thread %s, where converge %s it earlier (settled)", k.Settled.ThreadID, k.Settled.Disposition)})
			break
		}
	}
	return out
}

// ReviewMemory is what a round's commit writes into the settled section
// of the review instructions (review_memory): this pull request's
// decisions that stand, and its threads whose decision no longer does.
type ReviewMemory struct {
	Entries []MemoryEntry `json:"entries,omitempty"`
	// Drop are threads of this pull request converge once declined in
	// whose decision a human has since reopened or converge has since
	// fixed: their entries leave the section.
	Drop []string `json:"drop,omitempty"`
}

// MemoryEntry is one settled decision as the section lists it.
type MemoryEntry struct {
	ID       string      `json:"id"` // the thread
	URL      string      `json:"url,omitempty"`
	Path     string      `json:"path"`
	Start    int         `json:"start,omitempty"`
	End      int         `json:"end,omitempty"`
	Point    string      `json:"point"`
	Decision Disposition `json:"decision"`
	Why      string      `json:"why"`
}

// reviewMemory is the fix's ReviewMemory with review_memory on: the
// settled decisions the forge shows, this round's hand-offs (decided
// before the fix; their replies follow the push), and the threads to drop.
func (d *step) reviewMemory() *ReviewMemory {
	if !d.c.ReviewMemory {
		return nil
	}
	m := &ReviewMemory{}
	listed := map[string]bool{}
	for _, dec := range settledDecisions(d.s, d.o, d.c) {
		listed[dec.ref.ThreadID] = true
		m.Entries = append(m.Entries, memoryEntry(dec.point, dec.ref.URL, dec.ref.Disposition, decisionWhy(dec.ref.Rationale)))
	}
	for _, f := range d.s.Kept {
		if f.ThreadID == "" || listed[f.ThreadID] || !declines(f.Held) {
			continue
		}
		listed[f.ThreadID] = true
		url := ""
		for _, t := range d.pr.Threads {
			if t.ID == f.ThreadID && len(t.Comments) > 0 {
				url = t.Comments[0].URL
			}
		}
		m.Entries = append(m.Entries, memoryEntry(f, url, f.Held, f.HeldReason))
	}
	for _, t := range d.pr.Threads {
		if listed[t.ID] {
			continue
		}
		for _, mk := range threadMarkers(t, d.c) {
			if declines(mk.Disposition) {
				m.Drop = append(m.Drop, t.ID)
				break
			}
		}
	}
	if len(m.Entries) == 0 && len(m.Drop) == 0 {
		return nil
	}
	return m
}

func memoryEntry(f Finding, url string, decision Disposition, why string) MemoryEntry {
	start, end := f.StartLine, f.EndLine
	if start == 0 {
		start = end
	}
	return MemoryEntry{ID: f.ThreadID, URL: url, Path: f.Path, Start: start, End: end, Point: FirstLine(f.Summary), Decision: decision, Why: why}
}

// decisionWhy is the reason in converge's deferred or escalated reply.
func decisionWhy(rationale string) string {
	w := text.OneLine(rationale)
	for _, p := range []string{"Deferred to a human: ", "Escalated to a human: "} {
		w = strings.TrimPrefix(w, p)
	}
	return strings.TrimSuffix(w, ". Leaving this thread open.")
}

// The settled section's delimiters and each entry's hidden id.
const (
	memoryBegin = "<!-- converge:review-memory begin -->"
	memoryEnd   = "<!-- converge:review-memory end -->"
)

var memoryIDRE = regexp.MustCompile(`<!-- converge:settled id=([^\s>]+) -->\s*$`)

// memoryHeader opens the section: what it is and how a reviewer reads it.
const memoryHeader = "## Settled review points\n\n" +
	"converge writes this section (`review_memory: true`) and replaces any edit made inside it. " +
	"Each point below was raised in a review of a pull request here and deliberately left as it is: " +
	"converge deferred or escalated it to a human, for the reason given. " +
	"Do not raise these points again as new findings; to reopen one, answer in its thread.\n"

// MemorySection is the settled section after m: the entries of the
// section current holds (current is the review instructions' text, "" when
// there is none) stay in their order unless m replaces or drops them, and
// m's new entries follow. It is "" when no entry is left.
func MemorySection(current string, m ReviewMemory) string {
	type line struct{ id, text string }
	var lines []line
	if inner, ok := sectionOf(current); ok {
		for _, l := range strings.Split(inner, "\n") {
			if mm := memoryIDRE.FindStringSubmatch(l); mm != nil && strings.HasPrefix(l, "- ") {
				lines = append(lines, line{mm[1], strings.TrimRight(l, " \t\r")})
			}
		}
	}
	for _, e := range m.Entries {
		l := line{markerField(e.ID), renderEntry(e)}
		if i := slices.IndexFunc(lines, func(x line) bool { return x.id == l.id }); i >= 0 {
			lines[i] = l
			continue
		}
		lines = append(lines, l)
	}
	lines = slices.DeleteFunc(lines, func(x line) bool {
		return slices.ContainsFunc(m.Drop, func(id string) bool { return markerField(id) == x.id })
	})
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(memoryBegin + "\n" + memoryHeader + "\n")
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	b.WriteString(memoryEnd + "\n")
	return b.String()
}

// PutMemorySection puts section in place of content's settled section,
// after content when it has none, or removes the section when section is
// "". Text outside the delimiters is kept as it is.
func PutMemorySection(content, section string) string {
	i := strings.Index(content, memoryBegin)
	j := strings.Index(content, memoryEnd)
	if i >= 0 && j > i {
		rest := content[j+len(memoryEnd):]
		rest = strings.TrimPrefix(rest, "\n")
		if section == "" {
			return strings.TrimRight(content[:i], "\n") + joinAfter(content[:i], rest)
		}
		return content[:i] + section + rest
	}
	if section == "" {
		return content
	}
	if strings.TrimSpace(content) == "" {
		return section
	}
	return strings.TrimRight(content, "\n") + "\n\n" + section
}

// joinAfter is what follows text before a removed section: the rest, on
// its own paragraph when both hold something.
func joinAfter(before, rest string) string {
	rest = strings.TrimLeft(rest, "\n")
	switch {
	case strings.TrimSpace(rest) == "":
		if strings.TrimSpace(before) == "" {
			return ""
		}
		return "\n"
	case strings.TrimSpace(before) == "":
		return rest
	}
	return "\n\n" + rest
}

// sectionOf is the text between content's delimiters.
func sectionOf(content string) (string, bool) {
	i := strings.Index(content, memoryBegin)
	j := strings.Index(content, memoryEnd)
	if i < 0 || j < i {
		return "", false
	}
	return content[i+len(memoryBegin) : j], true
}

// renderEntry is one settled decision on one line, ending in its id.
// Reviewer text is data here: one line, clipped, unable to close the
// section or forge an id.
func renderEntry(e MemoryEntry) string {
	where := "`" + strings.ReplaceAll(e.Path, "`", "") + "`"
	switch {
	case e.End > 0 && e.Start > 0 && e.Start != e.End:
		where += fmt.Sprintf(" lines %d-%d", e.Start, e.End)
	case e.End > 0:
		where += " line " + strconv.Itoa(e.End)
	}
	link := ""
	if e.URL != "" {
		link = fmt.Sprintf(" ([thread](%s))", strings.NewReplacer(" ", "%20", ")", "%29").Replace(e.URL))
	}
	return fmt.Sprintf("- %s: %s — %s: %s%s <!-- converge:settled id=%s -->", where, memoryText(e.Point, 200), e.Decision, memoryText(e.Why, 300), link, markerField(e.ID))
}

// memoryText keeps reviewer or fixer text inert in the section.
func memoryText(s string, n int) string {
	return defang(text.Clip(text.OneLine(s), n))
}

// findingTags are what the decision log adds to a finding's disposition:
// the decision memory answered it from, and its fix-caused tag.
func findingTags(f Finding) string {
	var tags []string
	if r := f.Settled; r != nil {
		what := fmt.Sprintf("settled: as thread %s (%s", r.ThreadID, r.Disposition)
		if r.Round > 0 {
			what += fmt.Sprintf(" in round %d", r.Round)
		}
		tags = append(tags, what+")")
	}
	if t := fixCausedTag(f); t != "" {
		tags = append(tags, t)
	}
	if len(tags) == 0 {
		return ""
	}
	return "; " + strings.Join(tags, "; ")
}

// MemoryWorkspace is a Workspace that writes the review memory: the
// engine hands it each fix's ReviewMemory (nil: none) right before Fix,
// and the fix's commit, if it makes one, carries the section.
type MemoryWorkspace interface {
	SetReviewMemory(m *ReviewMemory)
}
