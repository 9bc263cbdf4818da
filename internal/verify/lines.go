package verify

import "fmt"

// Range is a 1-based inclusive line range of one file.
type Range struct {
	Path       string
	Start, End int
}

func (r Range) String() string {
	if r.Start == r.End {
		return fmt.Sprintf("%s:%d", r.Path, r.Start)
	}
	return fmt.Sprintf("%s:%d-%d", r.Path, r.Start, r.End)
}

// Widen is the slack PR-V1 gives a finding's range on each side: a fix
// may rightly change the line above the one a reviewer pointed at.
const Widen = 3

// Widened is r with n lines more on each side, never before line 1.
func (r Range) Widened(n int) Range {
	r.Start = max(1, r.Start-n)
	r.End += n
	return r
}

// MapForward maps r through diffs, applied in order (the commits since
// the comment's commit, each against its parent): each line is followed
// to where it stands after the diff; a range whose lines a diff rewrote
// maps onto what replaced them. ok is false when a diff deletes the file
// (the finding's lines are gone). A rename a diff detected is followed.
func MapForward(r Range, diffs ...[]FileDiff) (Range, bool) {
	if r.Start <= 0 {
		r.Start = r.End
	}
	if r.End < r.Start {
		r.End = r.Start
	}
	for _, d := range diffs {
		f := fileBefore(d, r.Path)
		if f == nil {
			continue
		}
		if f.Deleted() {
			return Range{}, false
		}
		r.Path = f.NewPath
		r.Start = mapLine(f.Changes, r.Start, false)
		r.End = mapLine(f.Changes, r.End, true)
		if r.End < r.Start {
			r.End = r.Start
		}
	}
	return r, true
}

// fileBefore is the part of d about the file that was at path before it.
func fileBefore(d []FileDiff, path string) *FileDiff {
	for i := range d {
		if d[i].OldPath == path {
			return &d[i]
		}
	}
	return nil
}

// mapLine maps old line n through changes (in file order) to the new
// side. A line a change removed maps to the first (or, for the end of a
// range, last) line that replaced it, or to where they stood.
func mapLine(changes []Change, n int, end bool) int {
	delta := 0
	for _, c := range changes {
		first := c.OldStart
		if len(c.Removed) == 0 {
			first = c.OldStart + 1
		}
		if n < first {
			break
		}
		if len(c.Removed) > 0 && n < c.oldEnd() {
			if len(c.Added) == 0 {
				// The line is gone: the range keeps the place it had.
				if end {
					return max(1, c.NewStart)
				}
				return c.NewStart + 1
			}
			if end {
				return c.NewStart + len(c.Added) - 1
			}
			return c.NewStart
		}
		delta = c.newEnd() - c.oldEnd()
	}
	return max(1, n+delta)
}

// Touches reports whether f's changes change a line of the old side's
// [start, end] or add lines inside it or at its edges, and the first
// change that does. A file the diff adds or deletes is touched whole.
func Touches(f *FileDiff, start, end int) (Change, bool) {
	if f == nil {
		return Change{}, false
	}
	if f.Deleted() || f.Added() {
		if len(f.Changes) > 0 {
			return f.Changes[0], true
		}
		return Change{}, true
	}
	for _, c := range f.Changes {
		if len(c.Removed) == 0 {
			// Lines added after old line OldStart sit between it and the
			// next: inside the range or at its edges.
			if c.OldStart >= start-1 && c.OldStart <= end {
				return c, true
			}
			continue
		}
		if c.OldStart <= end && c.oldEnd()-1 >= start {
			return c, true
		}
	}
	return Change{}, false
}

// Lines says where a change stands, for a reply: the new lines it wrote,
// or the old ones it removed.
func (c Change) Lines() string {
	switch {
	case len(c.Added) == 1:
		return fmt.Sprintf("line %d", c.NewStart)
	case len(c.Added) > 1:
		return fmt.Sprintf("lines %d-%d", c.NewStart, c.NewStart+len(c.Added)-1)
	case len(c.Removed) == 1:
		return fmt.Sprintf("removed line %d", c.OldStart)
	case len(c.Removed) > 1:
		return fmt.Sprintf("removed lines %d-%d", c.OldStart, c.OldStart+len(c.Removed)-1)
	}
	return "the whole file"
}
