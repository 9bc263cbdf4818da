package forge

import (
	"strings"
	"testing"
)

// FuzzPR_O1_ClipDiffHunk: a clipped hunk is the input untouched, empty,
// or its header (rewritten) over a tail of its lines that keeps the
// commented ones; it fits the byte bound; clipping again changes nothing;
// and a rewritten header still ends where the original did.
func FuzzPR_O1_ClipDiffHunk(f *testing.F) {
	long := "@@ -10,60 +10,70 @@ func f() {" + strings.Repeat("\n ctx\n-old\n+new\n+new2", 30)
	for _, s := range []string{
		"", "@@ -1 +1 @@\n-a\n+b", "@@ -5,0 +6,2 @@ x\n+a\n+b", long, strings.Repeat("+line\n", 60),
		"@@ -1,3 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+c", "no header\nat all",
		"@@ -1,100 +1,100 @@\n+" + strings.Repeat("x", 20000) + "\n+y",
		"@@ -1,60 +1,60 @@" + strings.Repeat("\n+"+strings.Repeat("z", 1000), 60),
	} {
		f.Add(s, 1)
		f.Add(s, 45)
	}
	f.Fuzz(func(t *testing.T, h string, need int) {
		if need > 1000 || need < -10 {
			return
		}
		c := ClipDiffHunk(h, need)
		if h != "" && c == "" {
			// Dropped: only when the commented lines alone do not fit.
			ls := strings.Split(h, "\n")
			size := 16
			if strings.HasPrefix(ls[0], "@@") {
				size += len(ls[0])
				ls = ls[1:]
			}
			for _, l := range ls[max(0, len(ls)-max(need, 1)):] {
				size += len(l) + 1
			}
			if size <= MaxDiffHunkBytes {
				t.Fatalf("a hunk whose last %d lines fit (%d bytes) was dropped", max(need, 1), size)
			}
		}
		if c == "" || c == h {
			if c == h && h != "" && len(h) > MaxDiffHunkBytes+16 && strings.Count(h, "\n") < max(need, 1) {
				t.Fatalf("a %d-byte hunk of %d lines came back whole", len(h), strings.Count(h, "\n")+1)
			}
			return
		}
		if len(c) > MaxDiffHunkBytes {
			t.Fatalf("clipped hunk is %d bytes", len(c))
		}
		lines := strings.Split(h, "\n")
		body := lines
		if strings.HasPrefix(lines[0], "@@") {
			body = lines[1:]
		}
		kept := strings.Split(c, "\n")
		if strings.HasPrefix(lines[0], "@@") {
			if !strings.HasPrefix(kept[0], "@@") {
				t.Fatalf("clipping %q lost its header: %q", h, c)
			}
			kept = kept[1:]
		}
		if len(kept) < min(max(need, 1), len(body)) || !strings.HasSuffix(strings.Join(body, "\n"), strings.Join(kept, "\n")) {
			t.Fatalf("clipping %q (need %d) kept %q, not a tail of its lines holding the commented ones", h, need, c)
		}
		if again := ClipDiffHunk(c, need); again != c {
			t.Fatalf("clipping is not idempotent: %q → %q", c, again)
		}
		if m, m2 := hunkHeader.FindStringSubmatch(lines[0]), hunkHeader.FindStringSubmatch(strings.SplitN(c, "\n", 2)[0]); m != nil {
			n := func(s string, def int) int {
				if s == "" {
					return def
				}
				v := 0
				for _, d := range s {
					v = v*10 + int(d-'0')
				}
				return v
			}
			if m2 == nil {
				t.Fatalf("rewritten header of %q does not parse: %q", h, c)
			}
			oldEnd, newEnd := n(m[1], 0)+n(m[2], 1), n(m[3], 0)+n(m[4], 1)
			if len(m[1]) < 9 && len(m[2]) < 9 && len(m[3]) < 9 && len(m[4]) < 9 &&
				n(m2[2], 1) > 0 && n(m2[4], 1) > 0 && (n(m2[1], 0)+n(m2[2], 1) != oldEnd || n(m2[3], 0)+n(m2[4], 1) != newEnd) {
				t.Fatalf("rewritten header %q does not end where %q does", m2[0], m[0])
			}
		}
	})
}
