package verify

import (
	"fmt"
	"sort"
	"strings"
)

// Proof is PR-V1(a)'s verdict on one finding: whether the round's change
// touches it, and what a reply can say of it either way.
type Proof struct {
	Touched bool
	// Evidence says what the change did at the finding (Touched), in
	// words a reply quotes: "summary.go lines 18-21 changed (the
	// finding's lines 16-17, ±3)".
	Evidence string
	// Why says why not (not Touched).
	Why string
}

// Touched is PR-V1(a): f is touched by change (the round's diff against
// the head it started from) when change alters lines of f's file inside
// its range widened by Widen lines; a file-level finding (End 0) when it
// alters the file; a finding about no file when it alters a file the
// fixers' records name with a reason (explained: path → reason). f's
// range must already be on the head the round started from (see
// MapForward).
func Touched(f Finding, change []FileDiff, explained map[string]string) Proof {
	switch {
	case f.Path == "":
		var hit []string
		for _, d := range change {
			if r := strings.TrimSpace(explained[d.Path()]); r != "" {
				hit = append(hit, fmt.Sprintf("%s (%s)", d.Path(), r))
			}
		}
		sort.Strings(hit)
		if len(hit) == 0 {
			return Proof{Why: "the change alters no file the fixer named with a reason for this finding"}
		}
		return Proof{Touched: true, Evidence: "changed " + strings.Join(clipList(hit, 5), ", ")}
	case f.End <= 0:
		d := File(change, f.Path)
		if d == nil {
			return Proof{Why: fmt.Sprintf("the change does not alter %s", f.Path)}
		}
		if d.Deleted() {
			return Proof{Touched: true, Evidence: fmt.Sprintf("deleted %s", f.Path)}
		}
		return Proof{Touched: true, Evidence: fmt.Sprintf("changed %s", f.Path)}
	}
	r := Range{Path: f.Path, Start: f.Start, End: f.End}
	if r.Start <= 0 || r.Start > r.End {
		r.Start = r.End
	}
	w := r.Widened(Widen)
	d := File(change, f.Path)
	c, ok := Touches(d, w.Start, w.End)
	if !ok {
		why := fmt.Sprintf("the change does not alter %s near the finding (%s, ±%d)", f.Path, rangeWords(r), Widen)
		if d == nil {
			why = fmt.Sprintf("the change does not alter %s", f.Path)
		}
		return Proof{Why: why}
	}
	return Proof{Touched: true, Evidence: fmt.Sprintf("%s %s changed (the finding's %s, ±%d)", f.Path, c.Lines(), rangeWords(r), Widen)}
}

func rangeWords(r Range) string {
	if r.Start == r.End {
		return fmt.Sprintf("line %d", r.Start)
	}
	return fmt.Sprintf("lines %d-%d", r.Start, r.End)
}
