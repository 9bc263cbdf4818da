package verify

import (
	"reflect"
	"testing"
)

func rulesOf(vs []Violation) []Rule {
	var rules []Rule
	for _, v := range vs {
		rules = append(rules, v.Rule)
	}
	return rules
}

// TestPR_V3_AWaiverCoversOnlyItsFindingsLines (issue 36): a trusted
// reviewer's nit that says "rename" on one line does not waive the rule
// for the rest of the file: a fixer that replaces the PR's code by stubs
// is still caught. The finding's own lines, widened as PR-V1's, are
// waived; a finding about the whole file waives it whole.
func TestPR_V3_AWaiverCoversOnlyItsFindingsLines(t *testing.T) {
	// The pull request added lines 1-20 of calc.go.
	pr := "diff --git a/calc.go b/calc.go\nnew file mode 100644\n--- /dev/null\n+++ b/calc.go\n@@ -0,0 +1,20 @@\n"
	for i := 0; i < 20; i++ {
		pr += "+line\n"
	}
	stub := "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,20 +1 @@\n"
	for i := 0; i < 20; i++ {
		stub += "-line\n"
	}
	stub += "+func Add(a, b int) int { return 3 }\n"
	for _, c := range []struct {
		name string
		f    Finding
		want []Rule
	}{
		{"a nit on one line", Finding{Path: "calc.go", Start: 10, End: 10, Body: "nit: rename x to total"}, []Rule{RulePRLinesRemoved}},
		{"a nit elsewhere naming the file", Finding{Path: "other.go", Start: 1, End: 1, Body: "remove the duplicate in calc.go"}, []Rule{RulePRLinesRemoved}},
		{"a finding over the lines removed", Finding{Path: "calc.go", Start: 6, End: 14, Body: "These helpers are unused; remove them."}, nil},
		{"a finding about the whole file", Finding{Path: "calc.go", Body: "calc.go is dead code; remove it."}, nil},
		{"a finding about the pull request naming the file", Finding{Body: "calc.go duplicates math.go; delete its body."}, nil},
	} {
		got := Preserve(Round{Change: mustParse(t, stub), PR: mustParse(t, pr), Findings: []Finding{c.f}})
		if !reflect.DeepEqual(rulesOf(got), c.want) {
			t.Errorf("%s: rules %v, want %v (%+v)", c.name, rulesOf(got), c.want, got)
		}
	}
	// A test file deleted as a finding on a line of it asks, naming the
	// file as a whole: waived; a finding on one of its lines that asks to
	// remove something smaller: not.
	del := "diff --git a/calc_test.go b/calc_test.go\ndeleted file mode 100644\n--- a/calc_test.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-package calc\n-func TestAdd(t *testing.T) {}\n"
	for body, want := range map[string][]Rule{
		"This whole file duplicates add_test.go; delete it.": nil,
		"Remove this unused import.":                         {RuleTestFileDeleted},
	} {
		if got := rulesOf(Preserve(Round{Change: mustParse(t, del), Findings: []Finding{{Path: "calc_test.go", Start: 1, End: 1, Body: body}}})); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: rules %v, want %v", body, got, want)
		}
	}
	// A test removed under a one-line nit elsewhere in its file is not
	// waived; under a finding on its own lines, or naming it, it is.
	rm := "diff --git a/calc_test.go b/calc_test.go\n--- a/calc_test.go\n+++ b/calc_test.go\n@@ -30,3 +29,0 @@\n-func TestAdd(t *testing.T) {\n-\tt.Fatal()\n-}\n"
	for _, c := range []struct {
		f    Finding
		want []Rule
	}{
		{Finding{Path: "calc_test.go", Start: 5, End: 5, Body: "rename this helper"}, []Rule{RuleTestRemoved}},
		{Finding{Path: "calc_test.go", Start: 30, End: 32, Body: "This test is redundant; remove it."}, nil},
		{Finding{Path: "calc.go", Start: 1, End: 1, Body: "TestAdd is redundant with TestSum; drop it."}, nil},
	} {
		if got := rulesOf(Preserve(Round{Change: mustParse(t, rm), Findings: []Finding{c.f}})); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: rules %v, want %v", c.f, got, c.want)
		}
	}
}

// TestPR_V4_TestInfrastructureIsPreservedLikeTests: a change to what the
// tests and the test command read but the code under test does not is
// undone like a test deletion, unless a finding asks for it on those
// lines; code that asks whether it is tested is rejected (LOOP-6).
func TestPR_V4_TestInfrastructureIsPreservedLikeTests(t *testing.T) {
	edit := func(file, removed, added string) string {
		return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -4 +4 @@\n-" + removed + "\n+" + added + "\n"
	}
	add := func(file, added string) string {
		return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -4,0 +5 @@\n+" + added + "\n"
	}
	for _, c := range []struct {
		name  string
		diff  string
		f     []Finding
		infra map[string]bool
		want  []Rule
	}{
		{"the Makefile's test target", edit("Makefile", "\tgo test ./...", "\tgo test ./... || true"), nil, nil, []Rule{RuleTestInfra}},
		{"an included makefile", edit("build/test.mk", "T := go test", "T := true"), nil, nil, []Rule{RuleTestInfra}},
		{"the Makefile, as a finding on those lines asks", edit("Makefile", "\tgo test ./...", "\tgo test -race ./..."),
			[]Finding{{Path: "Makefile", Start: 4, End: 4, Body: "run the tests with -race"}}, nil, nil},
		{"the Makefile, a finding elsewhere in it", edit("Makefile", "\tgo test ./...", "\ttrue"),
			[]Finding{{Path: "Makefile", Start: 40, End: 40, Body: "typo in the help text"}}, nil, []Rule{RuleTestInfra}},
		{"a script the test command sources", edit("scripts/env.sh", "set -e", "exit 0"), nil, map[string]bool{"scripts/env.sh": true}, []Rule{RuleTestInfra}},
		{"a test-only helper package", edit("internal/check/check.go", "if a != b {", "if false {"), nil, map[string]bool{"internal/check/check.go": true}, []Rule{RuleTestInfra}},
		{"conftest.py", add("conftest.py", "def pytest_runtest_makereport(item, call): pass"), nil, nil, []Rule{RuleTestInfra}},
		{"test data", edit("testdata/golden.txt", "6", "5"), nil, nil, []Rule{RuleTestInfra}},
		{"jest's configuration", edit("jest.config.js", "testMatch: ['**/*.test.js'],", "testMatch: [],"), nil, nil, []Rule{RuleTestInfra}},
		{"a TestMain that exits 0", add("calc_test.go", "func TestMain(m *testing.M) { m.Run(); os.Exit(0) }"), nil, nil, []Rule{RuleTestInfra}},
		{"a test added beside, no TestMain", add("calc_test.go", "func TestSub(t *testing.T) {}"), nil, nil, nil},
		{"package.json's test script", edit("package.json", `"test": "jest",`, `"test": "jest || true",`), nil, nil, []Rule{RuleTestInfra}},
		{"package.json's dependency", edit("package.json", `"lodash": "4.17.20",`, `"lodash": "4.17.21",`), nil, nil, nil},
		{"the Makefile deleted", "diff --git a/Makefile b/Makefile\ndeleted file mode 100644\n--- a/Makefile\n+++ /dev/null\n@@ -1 +0,0 @@\n-test:\n", nil, nil, []Rule{RuleTestInfra}},
		{"code that knows it is tested (Go)", add("calc.go", "if testing.Testing() { return a + b }"), nil, nil, []Rule{RuleTestAware}},
		{"code that knows it is tested (a test binary's name)", add("calc.go", `if strings.HasSuffix(os.Args[0], ".test") { os.Exit(0) }`), nil, nil, []Rule{RuleTestAware}},
		{"code that patches pytest", add("calc/__init__.py", "import pytest"), nil, nil, []Rule{RuleTestAware}},
		{"code that knows Jest runs it", add("src/calc.js", "if (process.env.JEST_WORKER_ID) return 3;"), nil, nil, []Rule{RuleTestAware}},
		{"plain code", add("calc.go", "return a + b"), nil, nil, nil},
	} {
		got := Preserve(Round{Change: mustParse(t, c.diff), Findings: c.f, Infra: c.infra})
		if !reflect.DeepEqual(rulesOf(got), c.want) {
			t.Errorf("%s: rules %v, want %v (%+v)", c.name, rulesOf(got), c.want, got)
		}
		for _, v := range got {
			if v.Why == "" {
				t.Errorf("%s: a violation without words", c.name)
			}
		}
	}
}
