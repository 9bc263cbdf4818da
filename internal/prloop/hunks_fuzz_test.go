package prloop

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/text"
)

// renderHunks writes hunks back as `git diff --unified=0` would, every
// path quoted and each header counting the lines it holds.
func renderHunks(hs []Hunk) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "diff --git a/x b/x\n--- %s\n+++ %s\n", strconv.Quote("a/"+h.Path), strconv.Quote("b/"+h.Path))
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.OldStart, len(h.Removed), h.NewStart, len(h.Added))
		for _, l := range h.Removed {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range h.Added {
			b.WriteString("+" + l + "\n")
		}
	}
	return b.String()
}

// FuzzPR_S8_ParseHunks: whatever diff text comes, every hunk has a path
// and bounded lines, and the hunks written back as a diff read back as
// themselves; and a well-formed diff of any two blocks of lines — lines
// that look like "--- a/x" or "+++ b/y" included — reads as exactly
// those lines.
func FuzzPR_S8_ParseHunks(f *testing.F) {
	f.Add(sampleDiff, "old", "new")
	f.Add("", "-- a/evil.go", "++ b/evil.go")
	f.Add("diff --git a/a b/a\n--- \"a/sp ace\"\n+++ \"b/sp ace\"\n@@ -1 +1 @@\n-x\r\n+y\n", "a\nb", "")
	f.Add("--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n@@ bad @@\n+c", "", "@@ -1 +1 @@")
	f.Fuzz(func(t *testing.T, diff, removed, added string) {
		hs := ParseHunks(diff)
		for _, h := range hs {
			if h.Path == "" || len(h.Removed) > maxHunkLines || len(h.Added) > maxHunkLines ||
				h.OldStart < 0 || h.OldCount < 0 || h.NewStart < 0 || h.NewCount < 0 {
				t.Fatalf("diff %q gave hunk %+v", diff, h)
			}
			for _, l := range append(h.Removed, h.Added...) {
				if strings.Contains(l, "\n") || len([]rune(l)) > maxHunkLineLen {
					t.Fatalf("diff %q gave line %q", diff, l)
				}
			}
		}
		back := ParseHunks(renderHunks(hs))
		if !sameHunks(hs, back) {
			t.Fatalf("hunks of %q do not read back as themselves:\n got %+v\nback %+v", diff, hs, back)
		}

		lines := func(s string) []string {
			var out []string
			if s == "" {
				return nil
			}
			for l := range strings.SplitSeq(s, "\n") {
				out = append(out, text.Clip(strings.TrimRight(l, "\r"), maxHunkLineLen))
			}
			return out
		}
		want := Hunk{Path: "f.go", OldStart: 3, NewStart: 3, Removed: lines(removed), Added: lines(added)}
		if len(want.Removed) > maxHunkLines || len(want.Added) > maxHunkLines {
			return
		}
		want.OldCount, want.NewCount = len(want.Removed), len(want.Added)
		if want.OldCount == 0 && want.NewCount == 0 {
			return
		}
		tail := Hunk{Path: "g.go", OldStart: 1, OldCount: 1, NewStart: 1, NewCount: 1, Removed: []string{"a"}, Added: []string{"b"}}
		got := ParseHunks(renderHunks([]Hunk{want, tail}))
		if !sameHunks(got, []Hunk{want, tail}) || got[0].OldCount != want.OldCount || got[0].NewCount != want.NewCount {
			t.Fatalf("a diff removing %q and adding %q reads as %+v", removed, added, got)
		}
	})
}

// sameHunks compares what renderHunks keeps of hunks: paths, starts and
// lines (a header's counts are rewritten from the lines it holds).
func sameHunks(a, b []Hunk) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Path != y.Path || x.OldStart != y.OldStart || x.NewStart != y.NewStart ||
			!reflect.DeepEqual(x.Removed, y.Removed) || !reflect.DeepEqual(x.Added, y.Added) {
			return false
		}
	}
	return true
}
