package verify

import (
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) []FileDiff {
	t.Helper()
	d, err := ParseDiff(s)
	if err != nil {
		t.Fatalf("ParseDiff: %v\n%s", err, s)
	}
	return d
}

// A zero-context diff of summary.go: line 5 replaced by two lines, two
// lines inserted after line 10, line 20 deleted.
const u0 = `diff --git a/summary.go b/summary.go
index 1111111..2222222 100644
--- a/summary.go
+++ b/summary.go
@@ -5 +5,2 @@ func Mean
-	mean := sum / n
+	if n == 0 { return 0, ErrEmpty }
+	mean := sum / n
@@ -10,0 +12,2 @@
+// a
+// b
@@ -20 +22,0 @@
-	gone
`

func TestParseDiff_ZeroContext(t *testing.T) {
	d := mustParse(t, u0)
	if len(d) != 1 || d[0].OldPath != "summary.go" || d[0].NewPath != "summary.go" {
		t.Fatalf("files %+v", d)
	}
	want := []Change{
		{OldStart: 5, Removed: []string{"\tmean := sum / n"}, NewStart: 5, Added: []string{"\tif n == 0 { return 0, ErrEmpty }", "\tmean := sum / n"}},
		{OldStart: 10, NewStart: 12, Added: []string{"// a", "// b"}},
		{OldStart: 20, Removed: []string{"\tgone"}, NewStart: 22},
	}
	if !reflect.DeepEqual(d[0].Changes, want) {
		t.Fatalf("changes\n%+v\nwant\n%+v", d[0].Changes, want)
	}
}

// The same changes with context lines are the same Changes.
func TestParseDiff_ContextIsNotChange(t *testing.T) {
	const withCtx = `diff --git a/summary.go b/summary.go
--- a/summary.go
+++ b/summary.go
@@ -4,3 +4,4 @@
 a
-	mean := sum / n
+	if n == 0 { return 0, ErrEmpty }
+	mean := sum / n
 b
@@ -10,2 +11,4 @@
 ten
+// a
+// b
 eleven
`
	d := mustParse(t, withCtx)
	want := []Change{
		{OldStart: 5, Removed: []string{"\tmean := sum / n"}, NewStart: 5, Added: []string{"\tif n == 0 { return 0, ErrEmpty }", "\tmean := sum / n"}},
		{OldStart: 10, NewStart: 12, Added: []string{"// a", "// b"}},
	}
	if !reflect.DeepEqual(d[0].Changes, want) {
		t.Fatalf("changes\n%+v\nwant\n%+v", d[0].Changes, want)
	}
}

func TestParseDiff_AddDeleteRenameBinary(t *testing.T) {
	const s = `diff --git a/backdoor.go b/backdoor.go
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/backdoor.go
@@ -0,0 +1,2 @@
+package x
+func init() {}
diff --git a/summary_test.go b/summary_test.go
deleted file mode 100644
index 4444444..0000000
--- a/summary_test.go
+++ /dev/null
@@ -1,2 +0,0 @@
-package x
-func TestMean(t *testing.T) {}
diff --git a/old_test.go b/new_test.go
similarity index 100%
rename from old_test.go
rename to new_test.go
diff --git a/logo.png b/logo.png
index 5555555..6666666 100644
Binary files a/logo.png and b/logo.png differ
`
	d := mustParse(t, s)
	if len(d) != 4 {
		t.Fatalf("%d files, want 4: %+v", len(d), d)
	}
	if !d[0].Added() || d[0].Path() != "backdoor.go" || len(d[0].Changes[0].Added) != 2 {
		t.Errorf("added file %+v", d[0])
	}
	if !d[1].Deleted() || d[1].Path() != "summary_test.go" || len(d[1].Changes[0].Removed) != 2 {
		t.Errorf("deleted file %+v", d[1])
	}
	if d[2].OldPath != "old_test.go" || d[2].NewPath != "new_test.go" {
		t.Errorf("rename %+v", d[2])
	}
	if !d[3].Binary || d[3].Path() != "logo.png" {
		t.Errorf("binary %+v", d[3])
	}
}

func TestParseDiff_RefusesBrokenDiffs(t *testing.T) {
	for name, s := range map[string]string{
		"short hunk":  "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n",
		"bad header":  "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -x +1 @@\n",
		"zero start":  "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,2 +1 @@\n-a\n-b\n+c\n",
		"junk inside": "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n?b\n",
	} {
		if _, err := ParseDiff(s); err == nil {
			t.Errorf("%s: parsed, want an error", name)
		}
	}
}

func TestPR_V1_MapForward(t *testing.T) {
	d := mustParse(t, u0)
	for _, c := range []struct {
		in, want Range
	}{
		{Range{"summary.go", 3, 4}, Range{"summary.go", 3, 4}},     // before every change
		{Range{"summary.go", 5, 5}, Range{"summary.go", 5, 6}},     // rewritten: onto what replaced it
		{Range{"summary.go", 6, 8}, Range{"summary.go", 7, 9}},     // after the first change: +1
		{Range{"summary.go", 11, 12}, Range{"summary.go", 14, 15}}, // after the insertion: +3
		{Range{"summary.go", 21, 22}, Range{"summary.go", 23, 24}}, // after the deletion: +2
		{Range{"other.go", 7, 9}, Range{"other.go", 7, 9}},         // a file the diff does not touch
	} {
		got, ok := MapForward(c.in, d)
		if !ok || got != c.want {
			t.Errorf("MapForward(%v) = %v, %v; want %v", c.in, got, ok, c.want)
		}
	}
	// Two diffs in a row compose.
	got, ok := MapForward(Range{"summary.go", 11, 12}, d, d)
	if !ok || got != (Range{"summary.go", 14, 15}) {
		// The second diff maps old 14,15 (not 11,12): after its line 10
		// insertion and line 5 rewrite, +3 again.
		if got != (Range{"summary.go", 17, 18}) {
			t.Errorf("twice: %v, %v", got, ok)
		}
	}
	del := mustParse(t, "diff --git a/summary.go b/summary.go\ndeleted file mode 100644\n--- a/summary.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")
	if _, ok := MapForward(Range{"summary.go", 1, 1}, del); ok {
		t.Error("a deleted file maps, want not")
	}
	ren := mustParse(t, "diff --git a/a.go b/b.go\nsimilarity index 90%\nrename from a.go\nrename to b.go\n--- a/a.go\n+++ b/b.go\n@@ -1 +1,2 @@\n-x\n+y\n+z\n")
	if got, ok := MapForward(Range{"a.go", 3, 3}, ren); !ok || got != (Range{"b.go", 4, 4}) {
		t.Errorf("rename: %v %v", got, ok)
	}
}

func TestPR_V1_Touched(t *testing.T) {
	change := mustParse(t, u0)
	for _, c := range []struct {
		name string
		f    Finding
		want bool
	}{
		{"the line itself", Finding{Path: "summary.go", Start: 5, End: 5}, true},
		{"within 3 lines above", Finding{Path: "summary.go", Start: 8, End: 9}, true},
		{"an insertion at the range's edge", Finding{Path: "summary.go", Start: 14, End: 15}, true},
		{"4 lines away", Finding{Path: "summary.go", Start: 15, End: 16}, false},
		{"a deletion inside", Finding{Path: "summary.go", Start: 18, End: 18}, true},
		{"another file", Finding{Path: "words.go", Start: 5, End: 5}, false},
		{"file-level on the file", Finding{Path: "summary.go"}, true},
		{"file-level on another", Finding{Path: "words.go"}, false},
		{"about no file, no reason given", Finding{}, false},
	} {
		p := Touched(c.f, change, nil)
		if p.Touched != c.want {
			t.Errorf("%s: touched %v (%s%s), want %v", c.name, p.Touched, p.Evidence, p.Why, c.want)
		}
		if p.Touched && p.Evidence == "" || !p.Touched && p.Why == "" {
			t.Errorf("%s: no words: %+v", c.name, p)
		}
	}
	if p := Touched(Finding{}, change, map[string]string{"summary.go": "the PR's doc asked for it"}); !p.Touched || !strings.Contains(p.Evidence, "summary.go") {
		t.Errorf("explained file: %+v", p)
	}
}

func TestPR_V3_Preserve(t *testing.T) {
	// The pull request added lines 1-6 of summary.go (its whole file).
	pr := mustParse(t, "diff --git a/summary.go b/summary.go\nnew file mode 100644\n--- /dev/null\n+++ b/summary.go\n@@ -0,0 +1,6 @@\n+a\n+b\n+c\n+d\n+e\n+f\n")
	mean := Finding{ID: "m", Path: "summary.go", Start: 2, End: 3, Body: "Mean divides by zero."}
	for _, c := range []struct {
		name     string
		diff     string
		findings []Finding
		explain  map[string]string
		want     []Rule
	}{
		{"a test file deleted", "diff --git a/summary_test.go b/summary_test.go\ndeleted file mode 100644\n--- a/summary_test.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-package x\n-func TestMean(t *testing.T) {}\n",
			[]Finding{mean}, nil, []Rule{RuleTestFileDeleted}},
		{"a test file deleted, as a finding asks", "diff --git a/summary_test.go b/summary_test.go\ndeleted file mode 100644\n--- a/summary_test.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package x\n",
			[]Finding{{Path: "summary_test.go", Body: "This file duplicates words_test.go; delete it."}}, nil, nil},
		{"a test file renamed", "diff --git a/a_test.go b/b_test.go\nrename from a_test.go\nrename to b_test.go\n",
			nil, nil, []Rule{RuleTestFileDeleted}},
		{"a Go test removed", "diff --git a/summary_test.go b/summary_test.go\n--- a/summary_test.go\n+++ b/summary_test.go\n@@ -3,3 +2,0 @@\n-func TestMean(t *testing.T) {\n-\tt.Fatal()\n-}\n",
			[]Finding{mean}, nil, []Rule{RuleTestRemoved}},
		{"a Go test rewritten in place is no removal", "diff --git a/summary_test.go b/summary_test.go\n--- a/summary_test.go\n+++ b/summary_test.go\n@@ -3 +3 @@\n-func TestMean(t *testing.T) {\n+func TestMean(t *testing.T) { // checked\n",
			nil, nil, nil},
		{"a Go test skipped", "diff --git a/summary_test.go b/summary_test.go\n--- a/summary_test.go\n+++ b/summary_test.go\n@@ -3,0 +4 @@\n+\tt.Skip(\"later\")\n",
			[]Finding{mean}, nil, []Rule{RuleTestSkipped}},
		{"a Go test skipped, as a finding asks", "diff --git a/summary_test.go b/summary_test.go\n--- a/summary_test.go\n+++ b/summary_test.go\n@@ -3,0 +4 @@\n+\tt.Skip(\"flaky\")\n",
			[]Finding{{Path: "summary_test.go", Start: 3, End: 3, Body: "This test is flaky on CI; skip it until #12 lands."}}, nil, nil},
		{"a pytest test removed", "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1,2 +0,0 @@\n-def test_mean():\n-    assert mean([1]) == 1\n",
			nil, nil, []Rule{RuleTestRemoved}},
		{"a pytest test skipped", "diff --git a/test_x.py b/test_x.py\n--- a/test_x.py\n+++ b/test_x.py\n@@ -0,0 +1 @@\n+@pytest.mark.skip(reason=\"x\")\n",
			nil, nil, []Rule{RuleTestSkipped}},
		{"a jest test removed", "diff --git a/src/a.test.ts b/src/a.test.ts\n--- a/src/a.test.ts\n+++ b/src/a.test.ts\n@@ -4 +3,0 @@\n-it('adds', () => expect(add(1, 2)).toBe(3));\n",
			nil, nil, []Rule{RuleTestRemoved}},
		{"a jest test skipped", "diff --git a/src/a.test.ts b/src/a.test.ts\n--- a/src/a.test.ts\n+++ b/src/a.test.ts\n@@ -4 +4 @@\n-it('adds', () => {\n+it.skip('adds', () => {\n",
			nil, nil, []Rule{RuleTestSkipped}},
		{"an xit", "diff --git a/a.spec.js b/a.spec.js\n--- a/a.spec.js\n+++ b/a.spec.js\n@@ -4 +4 @@\n-  it(\"adds\", () => {\n+  xit(\"adds\", () => {\n",
			nil, nil, []Rule{RuleTestSkipped}},
		{"a rust test removed", "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -10,2 +9,0 @@\n-    #[test]\n-    fn adds() {}\n",
			nil, nil, []Rule{RuleTestRemoved}},
		{"a rust test ignored", "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -9,0 +10 @@\n+    #[ignore]\n",
			nil, nil, []Rule{RuleTestSkipped}},
		{"a Go func removed from a non-test file is no test", "diff --git a/summary.go b/summary.go\n--- a/summary.go\n+++ b/summary.go\n@@ -9 +8,0 @@\n-func TestLike() {}\n",
			nil, nil, nil},
		{"most of the PR's lines removed", "diff --git a/summary.go b/summary.go\n--- a/summary.go\n+++ b/summary.go\n@@ -1,4 +0,0 @@\n-a\n-b\n-c\n-d\n",
			[]Finding{mean}, nil, []Rule{RulePRLinesRemoved}},
		{"half of the PR's lines removed is allowed", "diff --git a/summary.go b/summary.go\n--- a/summary.go\n+++ b/summary.go\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n",
			[]Finding{mean}, nil, nil},
		{"the PR's file deleted", "diff --git a/summary.go b/summary.go\ndeleted file mode 100644\n--- a/summary.go\n+++ /dev/null\n@@ -1,6 +0,0 @@\n-a\n-b\n-c\n-d\n-e\n-f\n",
			[]Finding{mean}, nil, []Rule{RulePRLinesRemoved}},
		{"the PR's lines removed, as a finding asks", "diff --git a/summary.go b/summary.go\n--- a/summary.go\n+++ b/summary.go\n@@ -1,4 +0,0 @@\n-a\n-b\n-c\n-d\n",
			[]Finding{{Path: "summary.go", Start: 1, End: 4, Body: "These helpers are unused; remove them."}}, nil, nil},
		{"a new file nothing names", "diff --git a/backdoor.go b/backdoor.go\nnew file mode 100644\n--- /dev/null\n+++ b/backdoor.go\n@@ -0,0 +1 @@\n+package x\n",
			[]Finding{mean}, nil, []Rule{RuleUnexplainedFile}},
		{"a new file a finding names", "diff --git a/mean_test.go b/mean_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/mean_test.go\n@@ -0,0 +1 @@\n+package x\n",
			[]Finding{{Path: "summary.go", Body: "Add a test in mean_test.go for the empty case."}}, nil, nil},
		{"a new file the record explains", "diff --git a/mean_test.go b/mean_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/mean_test.go\n@@ -0,0 +1 @@\n+package x\n",
			[]Finding{mean}, map[string]string{"mean_test.go": "a test for the empty case"}, nil},
	} {
		got := Preserve(Round{Change: mustParse(t, c.diff), PR: pr, Findings: c.findings, Explained: c.explain})
		var rules []Rule
		for _, v := range got {
			rules = append(rules, v.Rule)
			if v.Why == "" {
				t.Errorf("%s: a violation without words: %+v", c.name, v)
			}
		}
		if !reflect.DeepEqual(rules, c.want) {
			t.Errorf("%s: rules %v, want %v (%+v)", c.name, rules, c.want, got)
		}
	}
}

func TestIsTestFile(t *testing.T) {
	for p, want := range map[string]bool{
		"summary_test.go": true, "summary.go": false, "pkg/test_x.py": true, "pkg/x.py": false,
		"conftest.py": true, "src/a.test.ts": true, "src/a.spec.jsx": true, "src/a.ts": false,
		"tests/it.rs": true, "src/lib.rs": false, "__tests__/a.js": true, "FooTest.java": true,
		"README.md": false,
	} {
		if got := IsTestFile(p); got != want {
			t.Errorf("IsTestFile(%q) = %v, want %v", p, got, want)
		}
	}
}
