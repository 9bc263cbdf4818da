package verify

import (
	"fmt"
	"sort"
	"strconv"
)

// The bounds of what one round may push (PR-V3), by default.
const (
	DefaultPushBytes int64 = 5 << 20 // added by the round's change in all
	DefaultFileBytes int64 = 1 << 20 // added to one file
	DefaultPushFiles       = 200     // files the round's change touches
)

// The rules of the bounds, as Violation.Rule names them.
const (
	RulePushBytes Rule = "max-push-bytes"
	RuleFileBytes Rule = "max-file-bytes"
	RulePushFiles Rule = "max-push-files"
)

// Bounds are what one round's change may hold (PR-V3): the bytes it adds
// in all, the bytes it adds to one file, the files it touches. A field
// below zero is no bound; zero is the default.
type Bounds struct {
	PushBytes int64
	FileBytes int64
	PushFiles int
}

// DefaultBounds are the bounds a round's change gets unless configured.
func DefaultBounds() Bounds {
	return Bounds{PushBytes: DefaultPushBytes, FileBytes: DefaultFileBytes, PushFiles: DefaultPushFiles}
}

// orDefault puts the defaults in b's zero fields.
func (b Bounds) orDefault() Bounds {
	d := DefaultBounds()
	if b.PushBytes == 0 {
		b.PushBytes = d.PushBytes
	}
	if b.FileBytes == 0 {
		b.FileBytes = d.FileBytes
	}
	if b.PushFiles == 0 {
		b.PushFiles = d.PushFiles
	}
	return b
}

// Sized is one file of a change and the bytes the change adds to it.
type Sized struct {
	Path  string
	Bytes int64
}

// AddedBytes is what d adds to its file: a text file's added lines, each
// with its newline; a binary file (whose diff carries no bytes) by its
// size after the change, size (0 for a deleted one), which the caller
// reads from git.
func AddedBytes(d FileDiff, size int64) int64 {
	if d.Binary {
		if d.Deleted() {
			return 0
		}
		return size
	}
	var n int64
	for _, c := range d.Changes {
		for _, l := range c.Added {
			n += int64(len(l)) + 1
		}
	}
	return n
}

// Bound says which parts of a round's change must be undone so that the
// rest is within b (PR-V3), each with why, in words that name the bound
// and the setting that moves it. fixed is what the round keeps whatever
// happens (an earlier pass's verified change): it counts against the
// bounds but is never undone. Each part is one fixer's files. A part
// that adds more than b.FileBytes to one file is undone; then, while what
// is left adds more than b.PushBytes in all, or touches more than
// b.PushFiles files, the part that adds the most bytes (or touches the
// most files) is undone, the earlier part first on a tie. A file in two
// parts counts once, and an undone part takes its files with it.
func Bound(fixed []Sized, parts [][]Sized, b Bounds) map[int]Violation {
	b = b.orDefault()
	out := map[int]Violation{}
	gone := map[string]bool{}
	drop := func(i int, v Violation) {
		out[i] = v
		for _, s := range parts[i] {
			gone[s.Path] = true
		}
	}
	for i, part := range parts {
		for _, s := range part {
			if b.FileBytes >= 0 && s.Bytes > b.FileBytes {
				drop(i, Violation{Path: s.Path, Rule: RuleFileBytes,
					Why: fmt.Sprintf("the change adds %s to %s, over the %s bound for one file (max_file_bytes)", sizes(s.Bytes, b.FileBytes, s.Path)...)})
				break
			}
		}
	}
	// The totals of what is left: each file once.
	totals := func() (bytes int64, files int, per map[int][2]int64) {
		seen := map[string]bool{}
		add := func(s Sized) bool {
			if seen[s.Path] || gone[s.Path] {
				return false
			}
			seen[s.Path] = true
			bytes += s.Bytes
			files++
			return true
		}
		for _, s := range fixed {
			add(s)
		}
		per = map[int][2]int64{}
		for i, part := range parts {
			if _, undone := out[i]; undone {
				continue
			}
			var pb, pf int64
			for _, s := range part {
				if add(s) {
					pb += s.Bytes
					pf++
				}
			}
			per[i] = [2]int64{pb, pf}
		}
		return bytes, files, per
	}
	for {
		bytes, files, per := totals()
		var which int // 0: bytes, 1: files
		switch {
		case b.PushBytes >= 0 && bytes > b.PushBytes:
			which = 0
		case b.PushFiles >= 0 && files > b.PushFiles:
			which = 1
		default:
			return out
		}
		idx := make([]int, 0, len(per))
		for i, p := range per {
			if p[which] > 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return out // what is over is fixed: nothing of this pass to undo
		}
		sort.Slice(idx, func(x, y int) bool {
			a, c := per[idx[x]][which], per[idx[y]][which]
			if a != c {
				return a > c
			}
			return idx[x] < idx[y]
		})
		i := idx[0]
		v := Violation{Rule: RulePushBytes,
			Why: fmt.Sprintf("the round's change adds %s, over the %s bound (max_push_bytes)", sizes(bytes, b.PushBytes, "")...)}
		if which == 1 {
			v = Violation{Rule: RulePushFiles,
				Why: fmt.Sprintf("the round's change touches %d files, over the bound of %d (max_push_files)", files, b.PushFiles)}
		}
		if len(parts[i]) > 0 {
			v.Path = parts[i][0].Path
		}
		drop(i, v)
	}
}

// sizes are n and bound in words, in bytes when the words would not
// differ; with path between them when it is given.
func sizes(n, bound int64, path string) []any {
	a, b := Size(n), Size(bound)
	if a == b {
		a, b = strconv.FormatInt(n, 10)+" B", strconv.FormatInt(bound, 10)+" B"
	}
	if path != "" {
		return []any{a, path, b}
	}
	return []any{a, b}
}

// Size is n bytes in words: 512 B, 3 KiB, 7.2 MiB.
func Size(n int64) string {
	const k = 1 << 10
	switch {
	case n < k:
		return strconv.FormatInt(n, 10) + " B"
	case n < k*k:
		return trimFloat(float64(n)/k) + " KiB"
	case n < k*k*k:
		return trimFloat(float64(n)/(k*k)) + " MiB"
	}
	return trimFloat(float64(n)/(k*k*k)) + " GiB"
}

// trimFloat is x with one decimal, none when it is whole.
func trimFloat(x float64) string {
	s := strconv.FormatFloat(x, 'f', 1, 64)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
