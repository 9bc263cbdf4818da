package census

import (
	"path/filepath"
	"strings"
	"testing"
)

// The parsers read what an untrusted repository's tests print: whatever
// they are given, they must not panic, and a census they call known must
// add up.

func checkCensus(t *testing.T, c Census) {
	t.Helper()
	if !c.Known {
		if c.Ran != 0 || c.Passed != 0 || c.Failed != 0 || c.Skipped != 0 || c.Why == "" {
			t.Fatalf("unknown census with counts or no reason: %+v", c)
		}
		return
	}
	var p, f, s int
	for id, n := range c.Tests {
		if len(id) > maxIdentity {
			t.Fatalf("identity of %d bytes", len(id))
		}
		p, f, s = p+n.Passed, f+n.Failed, s+n.Skipped
	}
	if p != c.Passed || f != c.Failed || s != c.Skipped || c.Ran != p+f {
		t.Fatalf("counts do not add up: %+v", c)
	}
	// Compare with itself loses nothing (a census where no test ran says
	// only that), and against nothing is unknown.
	self := Compare(c, c)
	if len(self.Vanished) > 0 || len(self.NowSkipped) > 0 || self.Unknown != "" {
		t.Fatal("a census lost tests against itself")
	}
	if c.Known && self.NoneRan != (c.Ran == 0) {
		t.Fatalf("no test ran is %v for %d ran", self.NoneRan, c.Ran)
	}
	if c.Ran > 0 && Compare(c, Census{Known: true, Tests: map[string]Counts{}}).Empty() {
		t.Fatal("an empty candidate lost nothing")
	}
}

func FuzzParseGoTestJSON(f *testing.F) {
	f.Add(`{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestB"}
# p
./x.go:1: syntax error
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`)
	f.Add("{\"Action\":\"pass\",\"Test\":\"T\"}\n{")
	f.Add("{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"T\",\"Output\":null}\n")
	f.Fuzz(func(t *testing.T, out string) {
		human, c := ParseGoTestJSON(out)
		if len(human) > maxHuman+len(out) {
			t.Fatalf("human output of %d bytes from %d", len(human), len(out))
		}
		checkCensus(t, c)
	})
}

func FuzzParseJUnit(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="3"><testcase classname="tests.test_a" name="test_ok" time="0.001"/><testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2">x</failure><system-out>y</system-out></testcase><testcase classname="tests.test_a" name="test_later"><skipped type="pytest.skip" message="later"/></testcase></testsuite></testsuites>`))
	f.Add([]byte(`<testsuite><testcase name="a"><testcase name="b"/></testcase></testsuite>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite><testcase name="&a;"/></testsuite>`))
	f.Fuzz(func(t *testing.T, report []byte) {
		checkCensus(t, ParseJUnit(Pytest, report))
	})
}

func FuzzParseJSReport(f *testing.F) {
	f.Add([]byte(`{"numTotalTests":2,"testResults":[{"name":"/w/sum.test.js","assertionResults":[{"ancestorTitles":["sum"],"title":"adds","status":"passed"},{"ancestorTitles":[],"title":"later","status":"pending"}]}]}`), "/w")
	f.Add([]byte(`{"testResults":null}`), "")
	f.Add([]byte(`{"testResults":[{"assertionResults":[{"status":"failed"}]}]}`), "/")
	f.Fuzz(func(t *testing.T, report []byte, dir string) {
		checkCensus(t, ParseJSReport(Jest, report, dir))
	})
}

func FuzzParseCargoTest(f *testing.F) {
	f.Add(`     Running unittests src/lib.rs (target/debug/deps/m-0123)

running 2 tests
test tests::a ... ok
test tests::b ... ignored, slow
test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests m
test src/lib.rs - add (line 3) ... ok
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
`)
	f.Add("test result: ok. 99999999999999999999 passed; 0 failed; 0 ignored;\n")
	f.Fuzz(func(t *testing.T, out string) {
		checkCensus(t, ParseCargoTest(out))
	})
}

// FuzzDetect: any argv, and any test script or makefile in the
// repository, gives a plan that is Unknown with a reason, or runs a
// command that keeps the given one's program.
func FuzzDetect(f *testing.F) {
	f.Add("sh\x00-c\x00go test ./...", `{"scripts":{"test":"jest"}}`, "test:\n\tgo test ./...\n")
	f.Add("npm\x00test", `{"scripts":{"test":"vitest run"}}`, "")
	f.Add("make\x00test", `{}`, "test:\n\tpytest -q\n")
	f.Add("sh\x00-c\x00CGO_ENABLED=0 cargo test", `[`, "test: ; cargo test\n")
	f.Fuzz(func(t *testing.T, argv, pkg, makefile string) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"package.json": pkg, "Makefile": makefile})
		args := strings.Split(argv, "\x00")
		p := Detect(dir, args, filepath.Join(dir, "report"))
		if p.Ecosystem == Unknown {
			if p.Why == "" || strings.Join(p.Argv, "\x00") != argv {
				t.Fatalf("unknown plan %+v for %q", p, argv)
			}
			return
		}
		if len(p.Argv) == 0 || p.Argv[0] != args[0] {
			t.Fatalf("plan %+v runs another program than %q", p, args[0])
		}
	})
}
