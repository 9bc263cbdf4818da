package verify

import "testing"

// FuzzParseDiff: a diff is untrusted (a fixer writes the tree it comes
// from); parsing never panics, and what it returns is consistent enough
// to map and judge without panicking either.
func FuzzParseDiff(f *testing.F) {
	f.Add(u0)
	f.Add("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n")
	f.Add("diff --git \"a/\\303\\251 x\" \"b/\\303\\251 x\"\n--- \"a/\\303\\251 x\"\n+++ \"b/\\303\\251 x\"\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n")
	f.Add("diff --git a/a.go b/b.go\nrename from a.go\nrename to b.go\n")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDiff(s)
		if err != nil {
			return
		}
		for _, fd := range d {
			for _, c := range fd.Changes {
				if c.OldStart < 0 || c.NewStart < 0 {
					t.Fatalf("negative position %+v", c)
				}
			}
			_ = Tests(&fd)
			_, _ = Touches(&fd, 1, 10)
			_, _ = MapForward(Range{Path: fd.OldPath, Start: 1, End: 5}, d)
		}
		_ = Preserve(Round{Change: d, PR: d})
		_ = Touched(Finding{Path: "x", Start: 1, End: 2}, d, nil)
	})
}
