package forge

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DiffHunkLines is how many diff lines of a comment's hunk a backend keeps
// at least: GitHub's diff_hunk runs from the start of the hunk to the
// commented line, which deep in a new file is hundreds of lines, and the
// classifier reads only the last few (the lines a suggestion replaces),
// the judge a little context above them.
const DiffHunkLines = 40

// MaxDiffHunkBytes bounds a kept hunk, header included, whatever its
// lines: one minified line can be megabytes.
const MaxDiffHunkBytes = 16 << 10

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$`)

// ClipDiffHunk bounds a diff hunk as the forge gave it to its last
// max(DiffHunkLines, need) lines and MaxDiffHunkBytes, where need is how
// many last lines the comment is on (its range). The header is rewritten
// to start where the kept lines start, so the result is the hunk GitHub
// would give had the hunk begun there. When the need lines alone exceed
// the byte bound the hunk is dropped (""): a hunk missing some of the
// commented lines would make a suggestion look like it replaces others.
func ClipDiffHunk(h string, need int) string {
	if h == "" {
		return ""
	}
	lines := strings.Split(h, "\n")
	header := ""
	if strings.HasPrefix(lines[0], "@@") {
		header, lines = lines[0], lines[1:]
	}
	need = max(need, 1)
	start := max(0, len(lines)-max(DiffHunkLines, need))
	// The rewritten header's numbers may be a few digits longer.
	size := len(header) + 16
	for _, l := range lines[start:] {
		size += len(l) + 1
	}
	for size > MaxDiffHunkBytes && len(lines)-start > need {
		size -= len(lines[start]) + 1
		start++
	}
	switch {
	case size > MaxDiffHunkBytes:
		return ""
	case start == 0:
		return h
	}
	var oldDrop, newDrop int
	for _, l := range lines[:start] {
		switch {
		case strings.HasPrefix(l, "-"):
			oldDrop++
		case strings.HasPrefix(l, "+"):
			newDrop++
		case strings.HasPrefix(l, `\`):
			// "\ No newline at end of file" belongs to neither side.
		default:
			oldDrop++
			newDrop++
		}
	}
	kept := strings.Join(lines[start:], "\n")
	m := hunkHeader.FindStringSubmatch(header)
	if m == nil {
		if header == "" {
			return kept
		}
		return header + "\n" + kept
	}
	n := func(s string, def int) int {
		if s == "" {
			return def
		}
		v, _ := strconv.Atoi(s)
		return v
	}
	oldStart, oldLen, newStart, newLen := n(m[1], 0), n(m[2], 1), n(m[3], 0), n(m[4], 1)
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@%s\n%s", oldStart+oldDrop, max(0, oldLen-oldDrop), newStart+newDrop, max(0, newLen-newDrop), m[5], kept)
}
