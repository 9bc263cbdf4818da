package prloop

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/convergeloop/converge/internal/agent/suggest"
	"github.com/convergeloop/converge/internal/forge"
	localreview "github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
)

// This file is the round's judgment over its findings before any fix, all
// pure: merge and dedupe (PR-S6), conflicts (PR-S7) and oscillation
// (PR-S8). triage calls them in that order.
//
// Positions. A finding's span is its inclusive line range StartLine..EndLine
// in the file at the current head (StartLine 0 means the single line
// EndLine). A finding with a path and no line at all (a file comment) is
// file-level: near every finding in its file, and intersecting all of it.
// A finding without a path (a top-level comment, a review body, a local
// angle that could not be parsed) and an outdated thread that lost its
// current line (it had one, OrigEnd > 0) have no comparable position:
// they are never merged and never conflict.
//
// Similarity (PR-S6). Two findings are one when they are on the same path,
// their spans are near — at most nearLines lines apart, inclusive ([10,12]
// and [15,15] are 3 apart: near; [10,12] and [16,16] are 4: not), or
// either is file-level — and their summaries are similar: the Jaccard
// index |A∩B| / |A∪B| of their normalized word sets is at least 1/2. A
// summary's word set is its text without fenced code blocks (a suggestion
// is code, not what the reviewer says; a summary that is only code keeps
// it) and without HTML comments, lower-cased, split at every rune that is
// not a letter or digit, without a few English function words that carry
// no meaning (stopWords). Two empty sets are not similar.

const (
	// nearLines: two inclusive spans at most this many lines apart are near.
	nearLines = 3
	// Jaccard ≥ similarNum/similarDen: similar summaries.
	similarNum, similarDen = 1, 2
)

// stopWords carry no meaning of their own; "not" and "no" do, and stay.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true,
	"in": true, "on": true, "at": true, "for": true, "with": true, "by": true, "from": true,
	"as": true, "is": true, "are": true, "was": true, "were": true, "be": true, "been": true,
	"this": true, "that": true, "these": true, "those": true, "it": true, "its": true,
}

var (
	fencedBlock = regexp.MustCompile("(?ms)^[ \t]*(```|~~~).*?^[ \t]*(```|~~~)[ \t]*$")
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
)

// words is the normalized word set of a summary.
func words(summary string) map[string]bool {
	s := htmlComment.ReplaceAllString(summary, " ")
	if prose := fencedBlock.ReplaceAllString(s, " "); strings.TrimSpace(prose) != "" {
		s = prose
	}
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !stopWords[w] {
			out[w] = true
		}
	}
	return out
}

// similar reports a Jaccard index of the two summaries' word sets of at
// least similarNum/similarDen.
func similar(a, b string) bool {
	return similarWords(words(a), words(b))
}

func similarWords(wa, wb map[string]bool) bool {
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	union := len(wa) + len(wb) - inter
	return union > 0 && inter*similarDen >= union*similarNum
}

// spanKind is how a finding's position compares with others.
type spanKind int

const (
	spanNone  spanKind = iota // no comparable position
	spanFile                  // file-level
	spanLines                 // an inclusive line range
)

type span struct {
	kind       spanKind
	path       string
	start, end int
}

func spanOf(f Finding) span {
	sp := span{path: f.Path}
	start, end := f.StartLine, f.EndLine
	switch {
	case f.Path == "":
		return sp
	case end <= 0 && start > 0:
		end = start
	case end <= 0 && f.OrigEnd > 0:
		return sp // an outdated thread that lost its line
	case end <= 0:
		sp.kind = spanFile
		return sp
	}
	if start <= 0 {
		start = end
	}
	sp.kind, sp.start, sp.end = spanLines, min(start, end), max(start, end)
	return sp
}

// gap is how many lines apart two inclusive ranges are: 0 when they
// intersect.
func gap(s1, e1, s2, e2 int) int {
	return max(0, s2-e1, s1-e2)
}

// near is PR-S6's position test: same file, and spans at most nearLines
// apart or either file-level.
func near(a, b span) bool {
	if a.kind == spanNone || b.kind == spanNone || a.path != b.path {
		return false
	}
	return a.kind == spanFile || b.kind == spanFile || gap(a.start, a.end, b.start, b.end) <= nearLines
}

// intersects is PR-S7's position test: same file, and inclusive spans that
// share a line, a file-level one sharing all of its file.
func intersects(a, b span) bool {
	if a.kind == spanNone || b.kind == spanNone || a.path != b.path {
		return false
	}
	return a.kind == spanFile || b.kind == spanFile || gap(a.start, a.end, b.start, b.end) == 0
}

// duplicates: PR-S6's "one finding".
func duplicates(a, b Finding) bool {
	return near(spanOf(a), spanOf(b)) && similar(a.Summary, b.Summary)
}

// mergeRank orders who wins a merge: a forge thread (it has the thread to
// reply to and resolve), then a top-level comment, then the rest (the
// local review).
func mergeRank(f *Finding) int {
	switch {
	case f.ThreadID != "":
		return 0
	case f.CommentID != "":
		return 1
	}
	return 2
}

// mergeFindings is PR-S6: it folds each finding into the first finding of
// a better or equal rank (and, at an equal rank, earlier in fs) that it
// duplicates; the survivor records the folded ids in MergedFrom, and is
// structural when any of them is (fail-closed). A finding is compared
// with survivors only, so the result does not depend on chains of
// near-misses. Survivors keep their order in fs. Two forge threads can be
// one finding: the survivor is fixed, and the other thread gets the same
// disposition (it asked for the same change).
func mergeFindings(fs []Finding) []Finding {
	// By rank, and in fs order within a rank (a stable sort by rank).
	order := make([]int, 0, len(fs))
	for rank := range 3 {
		for i := range fs {
			if mergeRank(&fs[i]) == rank {
				order = append(order, i)
			}
		}
	}
	into := make([]int, len(fs)) // survivor index of each finding
	// Only findings near each other can be one, and near is on one path:
	// each is compared with the survivors on its path only, in the order
	// they survived, with spans and word sets worked out once (a round
	// of hundreds of threads costs no pairwise work across files).
	spans := make([]span, len(fs))
	for i := range fs {
		spans[i] = spanOf(fs[i])
	}
	ws := make([]map[string]bool, len(fs))
	wordsOf := func(i int) map[string]bool {
		if ws[i] == nil {
			ws[i] = words(fs[i].Summary)
		}
		return ws[i]
	}
	paths := newPathIndex(spans, order)
	out := fs // copied at the first merge: fs is not written
	merged := false
	for _, i := range order {
		into[i] = i
		// The findings on i's path before it in order are done: the
		// survivors among them, in the order they survived.
		for _, w := range paths.group(i) {
			if w == i {
				break
			}
			if into[w] == w && near(spans[w], spans[i]) && similarWords(wordsOf(w), wordsOf(i)) {
				into[i] = w
				break
			}
		}
		if into[i] == i {
			continue
		}
		if !merged {
			out, merged = slices.Clone(fs), true
		}
		w := &out[into[i]]
		w.MergedFrom = append(slices.Clone(w.MergedFrom), fs[i].ID)
		w.MergedFrom = append(w.MergedFrom, fs[i].MergedFrom...)
		if fs[i].Verdict != VerdictMinor {
			w.Verdict = VerdictStructural
		}
	}
	if len(fs) == 0 {
		return nil
	}
	if !merged {
		return fs
	}
	kept := out[:0] // in place in the copy: a survivor moves down only
	for i := range out {
		if into[i] == i {
			kept = append(kept, out[i])
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// summaryWithMerged is the local review's summary naming the local
// findings merged into a forge finding (PR-S6).
func summaryWithMerged(lr LocalReviewRecord, merged []Finding) string {
	return localreview.WithMerged(lr.Summary, append(mergedLocal(lr.Findings, merged), settledLocal(lr.Findings, merged)...))
}

// mergedLocal is, for the local review's summary, each local finding that
// mergeFindings folded into a finding with a place on the forge (a thread
// or a top-level comment), with where it is answered, in local order. A
// local finding folded into another local one is no such case: the
// summary lists both already.
func mergedLocal(local, merged []Finding) []localreview.Merged {
	var out []localreview.Merged
	for _, l := range local {
		for _, m := range merged {
			if !slices.Contains(m.MergedFrom, l.ID) {
				continue
			}
			into := ""
			switch {
			case m.ThreadID != "":
				into = "review thread " + m.ThreadID
			case m.CommentID != "":
				into = "comment " + m.CommentID
			}
			if into == "" {
				break
			}
			if m.Author != "" {
				into += " (" + m.Author + ")"
			}
			out = append(out, localreview.Merged{Angle: strings.TrimPrefix(l.Author, "local-review/"), File: l.Path,
				StartLine: l.StartLine, EndLine: l.EndLine, Into: into})
			break
		}
	}
	return out
}

// Hold is triage's hand-off of a finding before any fix: deferred to a
// human (PR-S7, a conflict) or escalated (PR-S8, an oscillation). A held
// finding is not fixed; its thread is replied to and stays open.
type Hold struct {
	Disposition Disposition
	Reason      string
}

// conflicts is PR-S7: the structural forge-thread findings whose spans
// intersect another's, each with the ids it conflicts with, in fs order.
// Only threads can conflict ("from different threads"): a local finding
// has no thread a human could decide in.
func conflicts(fs []Finding) map[string][]string {
	out := map[string][]string{}
	// Spans intersect on one path only: each finding is compared with
	// the others on its path, in fs order.
	spans := make([]span, len(fs)) // spanNone but for structural threads
	seq := make([]int, 0, len(fs))
	for i, f := range fs {
		if f.ThreadID != "" && f.Verdict != VerdictMinor {
			spans[i] = spanOf(f)
			seq = append(seq, i)
		}
	}
	paths := newPathIndex(spans, seq)
	for _, i := range seq {
		for _, j := range paths.group(i) {
			if i != j && intersects(spans[i], spans[j]) {
				out[fs[i].ID] = append(out[fs[i].ID], fs[j].ID)
			}
		}
	}
	return out
}

// pathIndex groups findings with a position by path: Decide compares
// findings only with the others on their path (a round of hundreds of
// threads does no pairwise work across files).
type pathIndex struct {
	of      []int // finding -> its group, -1 when it has no position
	start   []int // group g is members[start[g]:start[g+1]]
	members []int
}

// newPathIndex groups the findings seq names (indexes into spans), each
// group in seq's order; a finding whose span is spanNone is in none.
func newPathIndex(spans []span, seq []int) pathIndex {
	x := pathIndex{of: make([]int, len(spans))}
	for i := range x.of {
		x.of[i] = -1
	}
	ids := make(map[string]int, len(seq))
	var count []int
	for _, i := range seq {
		if spans[i].kind == spanNone {
			continue
		}
		g, ok := ids[spans[i].path]
		if !ok {
			g = len(count)
			ids[spans[i].path] = g
			count = append(count, 0)
		}
		x.of[i] = g
		count[g]++
	}
	x.start = make([]int, len(count)+1)
	for g, n := range count {
		x.start[g+1] = x.start[g] + n
	}
	x.members = make([]int, x.start[len(count)])
	next := slices.Clone(x.start[:len(count)])
	for _, i := range seq {
		if g := x.of[i]; g >= 0 {
			x.members[next[g]] = i
			next[g]++
		}
	}
	return x
}

// group is the findings on i's path, i among them; nil without a position.
func (x pathIndex) group(i int) []int {
	g := x.of[i]
	if g < 0 {
		return nil
	}
	return x.members[x.start[g]:x.start[g+1]]
}

func conflictReason(f Finding, with []string) string {
	return fmt.Sprintf("it conflicts with %s on the same lines of %s (%s); converge does not pick between reviewers",
		strings.Join(with, ", "), f.Path, spanWhere(spanOf(f)))
}

// spanWhere names a span for a reply.
func spanWhere(sp span) string {
	switch sp.kind {
	case spanFile:
		return "the whole file"
	case spanLines:
		if sp.start == sp.end {
			return "line " + strconv.Itoa(sp.start)
		}
		return fmt.Sprintf("lines %d-%d", sp.start, sp.end)
	}
	return "no position"
}

// Oscillation (PR-S8). What a loop commit changed is kept, per round, as
// the hunks of its diff (RoundRecord.Hunks, from FixResult.Hunks: the
// workspace reads them with `git diff --unified=0` right after it
// commits, so nothing has to be read again on every observation). A hunk
// is placed on the current head by carrying its line numbers through the
// hunks of every later loop commit (exact: within a run, only loop
// commits land on the branch, or the run ends human-push); a line a later
// commit rewrote belongs to that later commit (so A→B→C→A is compared
// with C's commit only, where it is no way back). A round whose commit has
// no hunks recorded (a push recovered after a crash) is a gap: hunks of
// the rounds before it are not placed, and no oscillation is claimed
// across it (fail-open; the consecutive-structural guard still bounds the
// run).
//
// A change undoes a placed hunk when it touches the hunk's lines (the
// lines it added, or the two lines around a pure deletion) and either
//   - restores: it adds a line the hunk removed (and did not add back), or
//   - removes what it added: it removes a line the hunk added, and every
//     line it adds is one the hunk removed (nothing new: a pure removal,
//     or a way back).
//
// Lines compare with their whitespace collapsed; only significant lines
// count (with a letter or a digit: a lone brace proves nothing). Two
// changes are checked against that:
//   - before the fix, a finding's ```suggestion block (the exact text that
//     would replace the finding's lines): a fixer's free-text change
//     cannot be predicted, but a suggestion can. What the suggestion
//     removes is known when every line it replaces is one the hunk added;
//     otherwise only "restores" is checked. Such a finding is not fixed:
//     it is escalated, citing the earlier round and this one.
//   - after the fix, the hunks of the round's own commit: a commit that
//     undoes an earlier loop commit is already pushed, so the findings it
//     addressed near that hunk are escalated instead of addressed (their
//     threads stay open, citing both rounds) and a human decides; the
//     loop never changes those lines back again on its own.

// Hunk is one hunk of a loop commit's diff, as `git diff --unified=0`
// prints it: lines OldStart.. (OldCount of them) of the parent became
// NewStart.. (NewCount) of the commit. A count of 0 puts the start on the
// line before the change. Removed and Added hold the lines' text, at most
// maxHunkLines each.
type Hunk struct {
	Path     string   `json:"path"`
	OldStart int      `json:"old_start"`
	OldCount int      `json:"old_count"`
	NewStart int      `json:"new_start"`
	NewCount int      `json:"new_count"`
	Removed  []string `json:"removed,omitempty"`
	Added    []string `json:"added,omitempty"`
}

// maxHunkLines and maxHunkLineLen bound what the state keeps of a hunk's
// text; a cut hunk only matches less.
const (
	maxHunkLines   = 200
	maxHunkLineLen = 400
)

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// ParseHunks reads the output of `git diff --unified=0 --no-renames`.
// Binary files have no hunks.
func ParseHunks(diff string) []Hunk {
	var out []Hunk
	var path string
	var cur *Hunk
	// oldLeft and newLeft are the lines cur's header says are still to
	// come: within them a line is the hunk's, even one that reads like
	// a file header (a removed "-- a/x" is printed "--- a/x").
	var oldLeft, newLeft int
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, l := range strings.Split(diff, "\n") {
		l = strings.TrimRight(l, "\r") // a CRLF line, as either side has it
		if cur != nil && (oldLeft > 0 || newLeft > 0) {
			switch {
			case strings.HasPrefix(l, "-") && oldLeft > 0:
				oldLeft--
				if len(cur.Removed) < maxHunkLines {
					cur.Removed = append(cur.Removed, text.Clip(l[1:], maxHunkLineLen))
				}
				continue
			case strings.HasPrefix(l, "+") && newLeft > 0:
				newLeft--
				if len(cur.Added) < maxHunkLines {
					cur.Added = append(cur.Added, text.Clip(l[1:], maxHunkLineLen))
				}
				continue
			case strings.HasPrefix(l, " ") && oldLeft > 0 && newLeft > 0:
				oldLeft, newLeft = oldLeft-1, newLeft-1
				continue
			case strings.HasPrefix(l, `\`):
				continue // "\ No newline at end of file"
			}
			oldLeft, newLeft = 0, 0 // a hunk shorter than its header: read on as before
		}
		switch {
		case strings.HasPrefix(l, "diff --git "):
			flush()
			path = ""
		case strings.HasPrefix(l, "+++ "):
			flush()
			if p := diffPath(strings.TrimPrefix(l, "+++ ")); p != "" {
				path = p
			}
		case strings.HasPrefix(l, "--- "):
			flush()
			if p := diffPath(strings.TrimPrefix(l, "--- ")); p != "" && path == "" {
				path = p // a deleted file: +++ is /dev/null
			}
		case strings.HasPrefix(l, "@@ "):
			flush()
			m := hunkHeader.FindStringSubmatch(l)
			if m == nil || path == "" {
				continue
			}
			cur = &Hunk{Path: path, OldStart: atoi(m[1]), OldCount: countOf(m[2]), NewStart: atoi(m[3]), NewCount: countOf(m[4])}
			oldLeft, newLeft = cur.OldCount, cur.NewCount
		case cur != nil && strings.HasPrefix(l, "-"):
			if len(cur.Removed) < maxHunkLines {
				cur.Removed = append(cur.Removed, text.Clip(l[1:], maxHunkLineLen))
			}
		case cur != nil && strings.HasPrefix(l, "+"):
			if len(cur.Added) < maxHunkLines {
				cur.Added = append(cur.Added, text.Clip(l[1:], maxHunkLineLen))
			}
		}
	}
	flush()
	return out
}

// diffPath is the path of a ---/+++ line without its a/ or b/ prefix; ""
// for /dev/null. A quoted path (git quotes unusual bytes) is unquoted.
func diffPath(p string) string {
	p = strings.TrimRight(p, "\t")
	if strings.HasPrefix(p, `"`) {
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		}
	}
	if p == "/dev/null" {
		return ""
	}
	for _, pre := range []string{"a/", "b/"} {
		if strings.HasPrefix(p, pre) {
			return p[len(pre):]
		}
	}
	return p
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func countOf(s string) int {
	if s == "" {
		return 1
	}
	return atoi(s)
}

// mapLine carries line n of path through a commit's hunks hs: its number
// after the commit, or false when the commit rewrote it.
func mapLine(hs []Hunk, path string, n int) (int, bool) {
	delta := 0
	for _, h := range hs {
		if h.Path != path {
			continue
		}
		if h.OldCount == 0 {
			if n > h.OldStart {
				delta += h.NewCount
			}
			continue
		}
		switch end := h.OldStart + h.OldCount - 1; {
		case n < h.OldStart:
		case n <= end:
			return 0, false
		default:
			delta += h.NewCount - h.OldCount
		}
	}
	return n + delta, true
}

// placed is an earlier loop commit's hunk on the current head.
type placed struct {
	Round      int
	Commit     string
	Path       string
	Start, End int            // the lines it touched, as far as they survive
	Added      map[int]string // head line → a line it added, still there
	Removed    map[string]bool
	AddedAny   map[string]bool // every line it added, by text
}

// placeHunks places the hunks of rounds before round on the current head,
// latest round first (see the Oscillation comment for gaps).
func placeHunks(rounds []RoundRecord, round int) []placed {
	var earlier []RoundRecord
	for _, r := range rounds {
		if r.N < round && r.CommitSHA != "" {
			earlier = append(earlier, r)
		}
	}
	slices.SortStableFunc(earlier, func(a, b RoundRecord) int { return a.N - b.N })
	var out []placed
	for k := len(earlier) - 1; k >= 0; k-- {
		r := earlier[k]
		if len(r.Hunks) == 0 {
			break // a gap: nothing before it can be placed
		}
		later := earlier[k+1:]
		for _, h := range r.Hunks {
			p, ok := placeHunk(h, r, later)
			if ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// placeHunk carries one hunk of round r through the later rounds' hunks.
func placeHunk(h Hunk, r RoundRecord, later []RoundRecord) (placed, bool) {
	carry := func(n int) (int, bool) {
		for _, l := range later {
			var ok bool
			if n, ok = mapLine(l.Hunks, h.Path, n); !ok {
				return 0, false
			}
		}
		return n, true
	}
	p := placed{Round: r.N, Commit: r.CommitSHA, Path: h.Path, Added: map[int]string{}, Removed: lineSet(h.Removed), AddedAny: lineSet(h.Added)}
	first, last := h.NewStart, h.NewStart+h.NewCount-1
	if h.NewCount == 0 {
		// A pure deletion: the lines around the gap.
		first, last = max(h.NewStart, 1), h.NewStart+1
	}
	for n := first; n <= last; n++ {
		m, ok := carry(n)
		if !ok {
			continue
		}
		if p.Start == 0 || m < p.Start {
			p.Start = m
		}
		p.End = max(p.End, m)
	}
	if p.Start == 0 {
		return p, false // every line it touched was rewritten since
	}
	if len(h.Added) == h.NewCount {
		for i, a := range h.Added {
			if m, ok := carry(h.NewStart + i); ok {
				p.Added[m] = a
			}
		}
	}
	return p, true
}

// normLine collapses a line's whitespace; "" for a line that is not
// significant (no letter or digit).
func normLine(l string) string {
	if !strings.ContainsFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return ""
	}
	return strings.Join(strings.Fields(l), " ")
}

func lineSet(ls []string) map[string]bool {
	out := map[string]bool{}
	for _, l := range ls {
		if n := normLine(l); n != "" {
			out[n] = true
		}
	}
	return out
}

// undoes reports whether a change of lines start..end of the head (the
// lines it removes, when removedKnown, and the lines it adds) undoes part
// of the placed hunk p.
func undoes(p placed, start, end int, removed []string, removedKnown bool, added []string) bool {
	if gap(start, end, p.Start, p.End) > 0 {
		return false
	}
	for _, a := range added {
		if n := normLine(a); n != "" && p.Removed[n] && !p.AddedAny[n] {
			return true // restores a line the hunk removed
		}
	}
	if !removedKnown {
		return false
	}
	hunkAdded := map[string]bool{}
	for line, a := range p.Added {
		if line >= start && line <= end {
			if n := normLine(a); n != "" {
				hunkAdded[n] = true
			}
		}
	}
	removes := false
	for _, r := range removed {
		if n := normLine(r); n != "" && hunkAdded[n] {
			removes = true
		}
	}
	if !removes {
		return false
	}
	for _, a := range added {
		if n := normLine(a); n != "" && !p.Removed[n] {
			return false // it adds something new: a further change, not a way back
		}
	}
	return true
}

// suggestionUndoes is the check before a fix: the finding's suggestion
// block, replacing its lines, would undo a hunk of an earlier round. It
// returns the latest such hunk.
func suggestionUndoes(f Finding, hunks []placed) (placed, bool) {
	sp := spanOf(f)
	if sp.kind != spanLines || f.Outdated {
		return placed{}, false
	}
	repl, above, below, reason := suggest.ParseSuggestionSpan(f.Summary)
	if reason != "" {
		return placed{}, false
	}
	if above > 0 || below > 0 {
		// GitLab's suggestion:-A+B replaces lines around the comment's.
		sp.start, sp.end = max(sp.end-above, 1), sp.end+below
	}
	for _, p := range hunks {
		if p.Path != f.Path {
			continue
		}
		// What the suggestion replaces is known when every line of the
		// finding is one the hunk added.
		var current []string
		known := true
		for n := sp.start; n <= sp.end; n++ {
			a, ok := p.Added[n]
			if !ok {
				known = false
				break
			}
			current = append(current, a)
		}
		var removed, added []string
		if known {
			removed, added = lineDiff(current, repl)
		} else {
			_, added = lineDiff(addedIn(p, sp.start, sp.end), repl)
		}
		if undoes(p, sp.start, sp.end, removed, known, added) {
			return p, true
		}
	}
	return placed{}, false
}

// addedIn is the lines p added that are now at lines start..end of the
// head, in line order.
func addedIn(p placed, start, end int) []string {
	var out []string
	for n := start; n <= end; n++ {
		if a, ok := p.Added[n]; ok {
			out = append(out, a)
		}
	}
	return out
}

// lineDiff is what replacing from with to removes and adds, by line text
// (whitespace collapsed).
func lineDiff(from, to []string) (removed, added []string) {
	f, t := lineSet(from), lineSet(to)
	for _, l := range from {
		if n := normLine(l); n != "" && !t[n] {
			removed = append(removed, l)
		}
	}
	for _, l := range to {
		if n := normLine(l); n != "" && !f[n] {
			added = append(added, l)
		}
	}
	return removed, added
}

// reversal is a hunk of this round's commit that undoes an earlier one.
type reversal struct {
	hunk    Hunk
	earlier placed
}

// changedLines is the head lines a hunk of a new commit changes: its old
// lines, or the two around a pure insertion.
func (h Hunk) changedLines() (int, int) {
	if h.OldCount == 0 {
		return max(h.OldStart, 1), h.OldStart + 1
	}
	return h.OldStart, h.OldStart + h.OldCount - 1
}

// commitUndoes is the check after a fix: the hunks of the round's commit
// that undo a hunk of an earlier round, each with the latest it undoes.
func commitUndoes(hs []Hunk, earlier []placed) []reversal {
	var out []reversal
	for _, h := range hs {
		start, end := h.changedLines()
		for _, p := range earlier {
			if p.Path == h.Path && undoes(p, start, end, h.Removed, len(h.Removed) == h.OldCount, h.Added) {
				out = append(out, reversal{hunk: h, earlier: p})
				break
			}
		}
	}
	return out
}

// hunkWhere names a placed hunk's lines for a reply.
func hunkWhere(p placed) string {
	return fmt.Sprintf("%s:%d-%d", p.Path, p.Start, p.End)
}

// hold hands this round's conflicting (PR-S7) and oscillating (PR-S8)
// findings to a human: it sets Held on them. allConflicting: at least one
// structural finding conflicted, and every structural finding did.
func (d *step) hold(fs []Finding) (allConflicting bool) {
	with := conflicts(fs)
	hunks := placeHunks(d.s.Rounds, d.s.Round)
	structural, deferred := 0, 0
	for i := range fs {
		f := &fs[i]
		if f.Verdict == VerdictMinor {
			continue
		}
		structural++
		if w, ok := with[f.ID]; ok {
			f.Held, f.HeldReason = DispDeferred, conflictReason(*f, w)
			deferred++
			continue
		}
		if f.ThreadID == "" {
			continue // a local finding has no thread to escalate in
		}
		if p, ok := suggestionUndoes(*f, hunks); ok {
			f.Held = DispEscalated
			f.HeldReason = fmt.Sprintf("oscillation: its suggestion would undo what round %d (commit %s) changed on %s; not fixed again in round %d, a human decides",
				p.Round, text.ShortSHA(p.Commit), hunkWhere(p), d.s.Round)
		}
	}
	return deferred > 0 && deferred == structural
}

// targets are the threads (or comment keys) a finding's disposition goes
// to: its own, and every forge thread merged into it (PR-S6), which asked
// for the same change.
func (d *step) targets(f Finding) []string {
	id := f.ThreadID
	if id == "" {
		id = f.ID
	}
	out := []string{id}
	for _, m := range f.MergedFrom {
		if slices.ContainsFunc(d.pr.Threads, func(t forge.Thread) bool { return t.ID == m }) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// reversals is the check after a fix (PR-S8): when the round's commit
// undoes a hunk of an earlier loop commit, the findings it addressed near
// that hunk (else in its file) that have a thread or a comment to answer
// in are escalated instead of addressed, citing both rounds; the round
// records a note either way. It returns res, or a copy with those
// findings moved from Addressed to Blocked.
func (d *step) reversals(res *FixResult, earlier []placed) *FixResult {
	if res.CommitSHA == "" || len(res.Hunks) == 0 {
		return res
	}
	revs := commitUndoes(res.Hunks, earlier)
	if len(revs) == 0 {
		return res
	}
	var addressed []Finding
	for _, f := range fixable(d.s.Kept) {
		if slices.Contains(res.Addressed, f.ID) && (f.ThreadID != "" || f.CommentID != "") {
			addressed = append(addressed, f)
		}
	}
	held := map[string]string{}
	rr := d.round()
	for _, rv := range revs {
		reason := fmt.Sprintf("oscillation: round %d's fix (commit %s) undoes what round %d (commit %s) changed on %s; converge will not change these lines back and forth, a human decides",
			d.s.Round, text.ShortSHA(res.CommitSHA), rv.earlier.Round, text.ShortSHA(rv.earlier.Commit), hunkWhere(rv.earlier))
		ids := attribute(rv.hunk, addressed)
		for _, id := range ids {
			if _, ok := held[id]; !ok {
				held[id] = reason
			}
		}
		note := reason
		if len(ids) > 0 {
			note += "; escalated: " + strings.Join(ids, ", ")
		}
		if !slices.Contains(rr.Notes, note) {
			rr.Notes = append(rr.Notes, note)
		}
	}
	if len(held) == 0 {
		return res
	}
	out := *res
	out.Addressed, out.Blocked = nil, slices.Clone(res.Blocked)
	for _, id := range res.Addressed {
		if r, ok := held[id]; ok {
			out.Blocked = append(out.Blocked, BlockedFinding{ID: id, Reason: r})
			continue
		}
		out.Addressed = append(out.Addressed, id)
	}
	return &out
}

// attribute is which addressed findings a hunk of the round's commit
// belongs to: those in its file near its lines (or file-level), else every
// one in its file.
func attribute(h Hunk, addressed []Finding) []string {
	start, end := h.changedLines()
	hs := span{kind: spanLines, path: h.Path, start: start, end: end}
	var nearby, inFile []string
	for _, f := range addressed {
		if f.Path != h.Path {
			continue
		}
		inFile = append(inFile, f.ID)
		if near(spanOf(f), hs) {
			nearby = append(nearby, f.ID)
		}
	}
	if len(nearby) > 0 {
		return nearby
	}
	return inFile
}

// roundNoted reports a note on the current round's record.
func (d *step) roundNoted(note string) bool {
	for _, r := range d.s.Rounds {
		if r.N == d.s.Round && slices.Contains(r.Notes, note) {
			return true
		}
	}
	return false
}

// allConflictingMessage names the threads PR-S7 deferred this round.
func (d *step) allConflictingMessage() string {
	var ids []string
	for _, r := range d.s.Threads {
		if r.Round == d.s.Round && r.Disposition == DispDeferred && !slices.Contains(ids, r.ThreadID) {
			ids = append(ids, r.ThreadID)
		}
	}
	return fmt.Sprintf("awaiting-human-review [%s]: every structural finding of round %d conflicts with another on the same lines (%s); deferred to a human, the threads stay open",
		NoteAllConflicting, d.s.Round, strings.Join(ids, ", "))
}
