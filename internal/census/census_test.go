package census

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, dir string, argv ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, Spec{Dir: dir, Argv: argv, Budget: 4 * time.Minute})
	if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	return r
}

// goModule is a Go module with a passing, a failing, a skipped test and
// subtests, in two packages.
var goModule = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.21\n",
	"a/a_test.go": `package a

import "testing"

func TestPass(t *testing.T) { t.Log("quiet when passing") }
func TestFail(t *testing.T) { t.Error("the detail line") }
func TestSkip(t *testing.T) { t.Skip("not today") }
func TestTable(t *testing.T) {
	for _, n := range []string{"one", "two"} {
		t.Run(n, func(t *testing.T) {})
	}
}
`,
	"b/b_test.go": `package b

import "testing"

func TestB(t *testing.T) {}
`,
}

func TestPR_V4_GoTestCensusFromRealRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, goModule)
	r := run(t, dir, "go", "test", "./...")
	c := r.Census
	if !c.Known || c.Ecosystem != Go {
		t.Fatalf("census not taken: %+v\n%s", c, r.Output)
	}
	want := map[string]Counts{
		"example.com/m/a.TestPass":      {Passed: 1},
		"example.com/m/a.TestFail":      {Failed: 1},
		"example.com/m/a.TestSkip":      {Skipped: 1},
		"example.com/m/a.TestTable":     {Passed: 1},
		"example.com/m/a.TestTable/one": {Passed: 1},
		"example.com/m/a.TestTable/two": {Passed: 1},
		"example.com/m/b.TestB":         {Passed: 1},
	}
	if !reflect.DeepEqual(c.Tests, want) {
		t.Fatalf("tests = %v, want %v", c.Tests, want)
	}
	if c.Ran != 6 || c.Passed != 5 || c.Failed != 1 || c.Skipped != 1 {
		t.Fatalf("counts = %s", c)
	}
	if r.ExitCode == 0 {
		t.Fatal("a failing test run exited 0")
	}
	// The output reads as plain go test's: the failure and its detail,
	// the verdicts, no JSON, nothing of the passing tests.
	for _, s := range []string{"--- FAIL: TestFail", "the detail line", "FAIL\texample.com/m/a", "ok  \texample.com/m/b"} {
		if !strings.Contains(r.Output, s) {
			t.Errorf("output lacks %q:\n%s", s, r.Output)
		}
	}
	for _, s := range []string{`"Action"`, "quiet when passing", "=== RUN"} {
		if strings.Contains(r.Output, s) {
			t.Errorf("output has %q:\n%s", s, r.Output)
		}
	}
}

func TestPR_V4_CompareNamesVanishedAndSkippedTests(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, goModule)
	base := run(t, dir, "sh", "-c", "go test ./...").Census
	// The candidate deletes TestB and skips TestPass.
	write(t, dir, map[string]string{
		"b/b_test.go": "package b\n",
		"a/a_test.go": strings.Replace(goModule["a/a_test.go"], `t.Log("quiet when passing")`, `t.Skip("later")`, 1),
	})
	cand := run(t, dir, "sh", "-c", "go test ./...").Census
	d := Compare(base, cand)
	want := Diff{Vanished: []string{"example.com/m/b.TestB"}, NowSkipped: []string{"example.com/m/a.TestPass"}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("diff = %+v, want %+v", d, want)
	}
	if s := d.String(); !strings.Contains(s, "example.com/m/b.TestB") || !strings.Contains(s, "now skip: example.com/m/a.TestPass") {
		t.Fatalf("reason = %q", s)
	}
	if e := d.Except(func(id string) bool { return id == "example.com/m/b.TestB" }); len(e.Vanished) != 0 || len(e.NowSkipped) != 1 {
		t.Fatalf("except = %+v", e)
	}
	if !Compare(base, base).Empty() {
		t.Fatal("a census lost tests against itself")
	}
}

// An init that exits 0 under go test (issue 15, case 6): the command is
// green and no test runs, which the census sees.
func TestPR_V4_InitThatExitsIsNoTests(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, goModule)
	base := run(t, dir, "go", "test", "./b/").Census
	write(t, dir, map[string]string{"b/exit.go": "package b\n\nimport \"os\"\n\nfunc init() { os.Exit(0) }\n"})
	r := run(t, dir, "go", "test", "./b/")
	d := Compare(base, r.Census)
	if d.Empty() {
		t.Fatalf("exit code %d, census %s: nothing lost", r.ExitCode, r.Census)
	}
}

func TestPR_V4_CargoTestCensusFromRealRun(t *testing.T) {
	if _, err := exec.LookPath("cargo"); err != nil {
		missing(t, "no cargo")
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"Cargo.toml": "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"src/lib.rs": `/// Adds.
///
/// ` + "```" + `
/// assert_eq!(m::add(1, 1), 2);
/// ` + "```" + `
pub fn add(a: i32, b: i32) -> i32 { a + b }

#[cfg(test)]
mod tests {
    #[test]
    fn pass() { assert_eq!(super::add(1, 2), 3); }
    #[test]
    fn fail() { assert_eq!(super::add(1, 2), 4); }
    #[test]
    #[ignore]
    fn later() {}
}
`,
		"tests/api.rs": "#[test]\nfn api() { assert_eq!(m::add(2, 2), 4); }\n",
	})
	r := run(t, dir, "cargo", "test", "--no-fail-fast", "--offline")
	c := r.Census
	if !c.Known {
		t.Fatalf("census not taken: %+v\n%s", c, r.Output)
	}
	want := map[string]Counts{
		"src/lib.rs tests::pass":  {Passed: 1},
		"src/lib.rs tests::fail":  {Failed: 1},
		"src/lib.rs tests::later": {Skipped: 1},
		"tests/api.rs api":        {Passed: 1},
		"doc m src/lib.rs - add":  {Passed: 1},
	}
	if !reflect.DeepEqual(c.Tests, want) {
		t.Fatalf("tests = %v, want %v\n%s", c.Tests, want, r.Output)
	}
}

func TestPR_V4_UnknownIsNeverAGuess(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, goModule)
	for _, argv := range [][]string{
		{"sh", "-c", "go test ./... && echo done"},
		{"sh", "-c", "go vet ./..."},
		{"true"},
	} {
		r := run(t, dir, argv...)
		if r.Census.Known || r.Census.Why == "" || r.Census.Ran != 0 {
			t.Errorf("%v: census %+v", argv, r.Census)
		}
	}
	// go test that is not run with -json by what it wraps: no events.
	if _, c := ParseGoTestJSON("ok  \texample.com/m/b\t0.01s\n"); c.Known {
		t.Errorf("plain go test output counted: %+v", c)
	}
}

// A census read back without its tests (a summary in a proof or a
// resumed state) still holds a candidate to its counts.
func TestPR_V4_SummaryHoldsToCounts(t *testing.T) {
	base := Census{Known: true, Ecosystem: Go, Ran: 3, Passed: 3, Skipped: 1,
		Tests: map[string]Counts{"a": {Passed: 1}, "b": {Passed: 1}, "c": {Passed: 1}, "d": {Skipped: 1}}}
	fewer := Census{Known: true, Ecosystem: Go, Ran: 2, Passed: 2, Skipped: 1,
		Tests: map[string]Counts{"a": {Passed: 1}, "b": {Passed: 1}, "d": {Skipped: 1}}}
	if d := Compare(base.Summary(), fewer); d.Empty() || !strings.Contains(d.String(), "2 tests ran") {
		t.Fatalf("summary baseline: %+v", d)
	}
	if d := Compare(base.Summary(), base); !d.Empty() {
		t.Fatalf("summary against its own run: %+v", d)
	}
	if d := Compare(base, fewer); !reflect.DeepEqual(d.Vanished, []string{"c"}) {
		t.Fatalf("diff %+v", d)
	}
}

// cargo test's verdict lines are checked against its summaries: output
// where they do not add up (--quiet's dots, a test's own output breaking
// a line) is not counted.
func TestPR_V4_CargoLinesMustMatchSummaries(t *testing.T) {
	quiet := "running 2 tests\n..\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
	broken := "running 2 tests\ntest a ... ok\ntest b ... hello from b\nok\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
	whole := "running 2 tests\ntest a ... ok\ntest b ... ok\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
	for _, out := range []string{quiet, broken} {
		if c := ParseCargoTest(out); c.Known {
			t.Errorf("counted %q: %s", out, c)
		}
	}
	if c := ParseCargoTest(whole); !c.Known || c.Ran != 2 {
		t.Errorf("whole output: %s", c)
	}
}

// TestPR_V4_LOOP_8_APassThatRanNoTestProvesNothing: a candidate on which
// no test ran is rejected whatever the baseline ran — a baseline that did
// not build ran none either, and an init that exits 0 under the test
// binary would then hold to it.
func TestPR_V4_LOOP_8_APassThatRanNoTestProvesNothing(t *testing.T) {
	none := Census{Known: true, Ecosystem: "go", Tests: map[string]Counts{}}
	one := Census{Known: true, Ecosystem: "go", Ran: 1, Passed: 1, Tests: map[string]Counts{"p.TestA": {Passed: 1}}}
	for name, base := range map[string]Census{"baseline ran none": none, "baseline ran one": one} {
		d := Compare(base, none)
		if d.Empty() || !d.NoneRan || !strings.Contains(d.String(), "no test ran") {
			t.Errorf("%s: %+v (%q), want the candidate rejected: no test ran", name, d, d.String())
		}
		if e := d.Except(func(string) bool { return true }); !e.NoneRan {
			t.Errorf("%s: a finding's leave to remove tests waived that no test ran", name)
		}
	}
	if d := Compare(none, one); !d.Empty() {
		t.Errorf("a candidate that ran a test against a baseline that ran none: %+v", d)
	}
}

// A TestMain that runs the tests and exits 0 (issue 36): the command is
// green, and the census still counts the failure, which the comparison
// holds against the baseline whatever the exit status.
func TestPR_V4_LOOP_8_AFailingTestCountsWhateverTheExitStatus(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, goModule)
	write(t, dir, map[string]string{"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {}\nfunc TestC(t *testing.T) {}\n"})
	base := run(t, dir, "go", "test", "./b/").Census
	if !base.Known || base.Failed != 0 || base.Passed != 2 {
		t.Fatalf("baseline: %s", base)
	}
	write(t, dir, map[string]string{
		"b/b_test.go":    "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { t.Error(\"broken\") }\nfunc TestC(t *testing.T) {}\nfunc TestNew(t *testing.T) { t.Fatal(\"new and broken\") }\n",
		"b/main_test.go": "package b\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { m.Run(); os.Exit(0) }\n",
	})
	r := run(t, dir, "go", "test", "./b/")
	if r.ExitCode != 0 {
		t.Fatalf("the hostile TestMain did not make the command green: %d\n%s", r.ExitCode, r.Output)
	}
	d := Compare(base, r.Census)
	want := []string{"example.com/m/b.TestB", "example.com/m/b.TestNew"}
	if !reflect.DeepEqual(d.NowFailing, want) || d.Empty() {
		t.Fatalf("diff = %+v, want now failing %v", d, want)
	}
	if s := d.String(); !strings.Contains(s, "tests fail that did not fail before: example.com/m/b.TestB") {
		t.Fatalf("reason = %q", s)
	}
	// A finding may ask to remove a test, never to make it fail.
	if e := d.Except(func(string) bool { return true }); !reflect.DeepEqual(e.NowFailing, want) {
		t.Fatalf("except let failures go: %+v", e)
	}
	// Held to a summary, the count says it; with no baseline census, every
	// failure is the candidate's own.
	if d := Compare(base.Summary(), r.Census); d.MoreFailed == "" || d.Empty() {
		t.Fatalf("summary diff = %+v", d)
	}
	if d := Compare(Census{Why: "not taken"}, r.Census); !reflect.DeepEqual(d.NowFailing, want) {
		t.Fatalf("no-baseline diff = %+v", d)
	}
	// The printed output shows them too, for a run with no census.
	var keys []string
	for _, f := range Failures(r.Output) {
		keys = append(keys, f.Key)
	}
	if !slices.Contains(keys, "--- FAIL: TestB") || !slices.Contains(keys, "--- FAIL: TestNew") {
		t.Fatalf("failure lines %q in:\n%s", keys, r.Output)
	}
	// A baseline's own failure is not the candidate's.
	if d := Compare(r.Census, r.Census); !d.Empty() {
		t.Fatalf("a census fails against itself: %+v", d)
	}
}

func TestPR_V4_FailureLinesOfEveryRunner(t *testing.T) {
	out := strings.Join([]string{
		"--- FAIL: TestX (0.01s)",
		"    x_test.go:3: detail",
		"FAIL\texample.com/m/x\t0.005s",
		"not ok 3 - adds",
		"FAILED tests/test_a.py::test_b - assert 1 == 2",
		"test tests::adds ... FAILED",
		"  ✕ adds two numbers (3 ms)",
		"   × adds three numbers 2ms",
		"ok  \texample.com/m/y\t0.1s",
		"FAILED to reach nothing: this line is a log, and still a failure line by its form",
	}, "\n")
	var keys []string
	for _, f := range Failures(out) {
		keys = append(keys, f.Key)
	}
	want := []string{"--- FAIL: TestX", "FAIL example.com/m/x", "not ok - adds", "FAILED tests/test_a.py::test_b - assert 1 == 2", "test tests::adds ... FAILED",
		"✕ adds two numbers", "× adds three numbers", "FAILED to reach nothing: this line is a log, and still a failure line by its form"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys\n%q\nwant\n%q", keys, want)
	}
}
