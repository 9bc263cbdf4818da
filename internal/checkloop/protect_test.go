package checkloop

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLOOP_6_ProtectGlobs: the glob rules of --protect.
func TestLOOP_6_ProtectGlobs(t *testing.T) {
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"*_test.go", "calc_test.go", true},
		{"*_test.go", "pkg/deep/calc_test.go", true},
		{"*_test.go", "calc.go", false},
		{"/check.sh", "check.sh", true},
		{"/check.sh", "sub/check.sh", false},
		{"check.sh", "sub/check.sh", true},
		{"scripts/*.sh", "scripts/ci.sh", true},
		{"scripts/*.sh", "x/scripts/ci.sh", false},
		{"**/testdata/**", "testdata/golden.txt", true},
		{"**/testdata/**", "a/b/testdata/c/d.txt", true},
		{"**/testdata/**", "a/testdatax/d.txt", false},
		{"tests/", "tests/test_a.py", true},
		{"tests/", "src/tests/test_a.py", false},
		{"*.test.{js,ts}", "src/a.test.ts", true},
		{"*.test.{js,ts}", "src/a.test.go", false},
		{"test_*.py", "pkg/test_calc.py", true},
		{"[", "[", false}, // a bad pattern matches nothing
	} {
		if got := MatchGlob(tc.glob, tc.path); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tc.glob, tc.path, got, tc.want)
		}
	}
	got := ProtectedPaths([]string{"a.go", "a_test.go", "check.sh", "x/y_test.go"}, []string{"*_test.go", "/check.sh"})
	if want := []string{"a_test.go", "check.sh", "x/y_test.go"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ProtectedPaths = %v, want %v", got, want)
	}
}

// TestLOOP_6_DefaultProtection: the ecosystem's test files, and the files
// the check command names, are protected without --protect; a check whose
// script does not exist before the loop (it would author it) is refused.
func TestLOOP_6_DefaultProtection(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := DefaultProtect(dir); len(got) != 0 {
		t.Fatalf("no manifest: %v", got)
	}
	write("go.mod")
	write("package.json")
	got := DefaultProtect(dir)
	if !MatchGlob(got[0], "x/a_test.go") || len(got) != 5 {
		t.Fatalf("go.mod and package.json: %v", got)
	}
	write("scripts/check.sh")
	write("Makefile")
	write("fixtures/in.txt")
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"go test ./...", nil},
		{"sh scripts/check.sh", []string{"/scripts/check.sh"}},
		{"./scripts/check.sh --fast && go vet ./...", []string{"/scripts/check.sh"}},
		{"make test", []string{"/Makefile"}},
		{"CI=1 make -C . test", []string{"/Makefile"}},
		{"npm test", []string{"/package.json"}},
		{"diff -r fixtures/ out/", []string{"/fixtures/**"}},
		{"cat '" + filepath.Join(dir, "fixtures", "in.txt") + "' /etc/passwd", []string{"/fixtures/in.txt"}},
		{"sh scripts/missing.sh", nil},
	} {
		if got := CheckNamedFiles(dir, tc.cmd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("CheckNamedFiles(%q) = %v, want %v", tc.cmd, got, tc.want)
		}
	}
	for _, tc := range []struct {
		cmd string
		ok  bool
	}{
		{"go test ./...", true},
		{"sh scripts/check.sh", true},
		{"./scripts/check.sh", true},
		{"sh -c 'exit 0'", true},
		{"python3 -m pytest", true},
		{"sh scripts/new-check.sh", false},
		{"./scripts/new-check.sh", false},
		{"FOO=1 bash -x ./later.sh", false},
	} {
		err := SelfAuthored(dir, tc.cmd)
		if (err == nil) != tc.ok {
			t.Errorf("SelfAuthored(%q) = %v, want ok=%v", tc.cmd, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "LOOP-6") {
			t.Errorf("SelfAuthored(%q) = %v: say why", tc.cmd, err)
		}
	}
}

// TestLOOP_2_VerdictsAreSchemaValidatedFailClosed: only a valid verdict
// line is read; anything else is an error, which the loop takes as not
// done.
func TestLOOP_2_VerdictsAreSchemaValidatedFailClosed(t *testing.T) {
	for _, tc := range []struct {
		out, verdict string
	}{
		{`thinking...` + "\n" + `{"verdict":"done","reasons":["all tests pass"]}` + "\n\n", "done"},
		{`{"verdict":"not-done","reasons":["Sub is wrong"],"missing":["fix Sub"],"cost_usd":0.12}`, "not-done"},
		{`ALL TESTS PASS`, ""},
		{``, ""},
		{`{"verdict":"done"}`, ""},                           // no reasons
		{`{"verdict":"done","reasons":[]}`, ""},              // empty reasons
		{`{"verdict":"yes","reasons":["ok"]}`, ""},           // not a verdict
		{`{"verdict":"done","reasons":["ok"]} trailing`, ""}, // not one object
		{`{"verdict":"done","reasons":["ok"]}` + "\nok", ""}, // not the last line
		{`{"verdict":"done","reasons":["ok"],"cost_usd":-1}`, ""},
	} {
		v, _, err := ParseVerdict(tc.out)
		if (err == nil) != (tc.verdict != "") || (err == nil && v.Verdict != tc.verdict) {
			t.Errorf("ParseVerdict(%q) = %+v, %v; want %q", tc.out, v, err, tc.verdict)
		}
	}
	if c, ok := costOf(`{"verdict":"not-done","reasons":["x"],"cost_usd":0.12}`); c != 0.12 || !ok {
		t.Fatalf("costOf = %v %v", c, ok)
	}
	if _, ok := costOf(`{"verdict":"not-done","reasons":["x"]}`); ok {
		t.Fatal("a line without cost_usd reported a price")
	}
}

// TestLOOP_5_NormalizedOutputIgnoresTimings: the same failures printed
// with other timings are the same output; another failure is not.
func TestLOOP_5_NormalizedOutputIgnoresTimings(t *testing.T) {
	a := "--- FAIL: TestAdd (0.00s)\nFAIL\texample.com/calc\t0.004s\n"
	b := "--- FAIL: TestAdd (0.01s)\nFAIL\texample.com/calc\t1.204s\n"
	c := "--- FAIL: TestSub (0.00s)\nFAIL\texample.com/calc\t0.004s\n"
	if NormalizeOutput(a) != NormalizeOutput(b) {
		t.Fatalf("timings count as a change:\n%s\n%s", NormalizeOutput(a), NormalizeOutput(b))
	}
	if NormalizeOutput(a) == NormalizeOutput(c) {
		t.Fatal("another failing test does not count as a change")
	}
	if NormalizeOutput("ok  \tx\t(cached)") != NormalizeOutput("ok  \tx\t0.1s") {
		t.Fatal("(cached) counts as a change")
	}
}
