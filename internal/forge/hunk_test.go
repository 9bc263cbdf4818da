package forge

import (
	"fmt"
	"strings"
	"testing"
)

// TestPR_O1_ClipDiffHunk: a long hunk keeps its last lines under a header
// rewritten to where they start, counted per side; a short one is
// untouched; the commented range is never cut, and a range that cannot fit
// the byte bound drops the hunk rather than a part of it.
func TestPR_O1_ClipDiffHunk(t *testing.T) {
	var b strings.Builder
	b.WriteString("@@ -10,60 +10,70 @@ func f() {")
	old, nw := 10, 10
	var want []string
	for i := range 100 {
		var l string
		switch i % 4 {
		case 0:
			l = fmt.Sprintf(" ctx%d", i)
		case 1:
			l = fmt.Sprintf("-old%d", i)
		default:
			l = fmt.Sprintf("+new%d", i)
		}
		b.WriteString("\n" + l)
		if i >= 100-DiffHunkLines {
			want = append(want, l)
			continue
		}
		switch l[0] {
		case ' ':
			old++
			nw++
		case '-':
			old++
		case '+':
			nw++
		}
	}
	got := ClipDiffHunk(b.String(), 1)
	lines := strings.Split(got, "\n")
	wantHeader := fmt.Sprintf("@@ -%d,%d +%d,%d @@ func f() {", old, 60-(old-10), nw, 70-(nw-10))
	if lines[0] != wantHeader {
		t.Errorf("header %q, want %q", lines[0], wantHeader)
	}
	if strings.Join(lines[1:], "\n") != strings.Join(want, "\n") {
		t.Errorf("kept lines:\n%s\nwant:\n%s", strings.Join(lines[1:], "\n"), strings.Join(want, "\n"))
	}
	if got := ClipDiffHunk(b.String(), 70); len(strings.Split(got, "\n")) != 71 {
		t.Errorf("a 70-line range keeps %d lines", len(strings.Split(got, "\n"))-1)
	}

	short := "@@ -1,2 +1,3 @@\n a\n-b\n+c\n+d"
	if got := ClipDiffHunk(short, 1); got != short {
		t.Errorf("short hunk changed: %q", got)
	}
	if ClipDiffHunk("", 1) != "" {
		t.Error("empty hunk")
	}

	long := strings.Repeat("x", MaxDiffHunkBytes/2)
	huge := "@@ -1,3 +1,3 @@\n " + long + "\n " + long + "\n+" + long
	got = ClipDiffHunk(huge, 1)
	if got != "@@ -3,1 +3,1 @@\n+"+long {
		t.Errorf("byte bound: kept %d bytes, %q…", len(got), got[:min(len(got), 40)])
	}
	if got := ClipDiffHunk(huge, 3); got != "" {
		t.Errorf("a range past the byte bound keeps %d bytes, want none", len(got))
	}
}
