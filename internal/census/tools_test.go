package census

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// The project of the JavaScript and Python tests: in each, "sum" has a
// passing, a failing, a skipped and a todo test, and a test outside it.
const jsSum = `describe('sum', () => {
  test('adds', () => { expect(1 + 2).toBe(3); });
  test('fails', () => { expect(1 + 2).toBe(4); });
  test.skip('later', () => {});
  test.todo('someday');
});
test('top level', () => {});
`

var jsWant = map[string]Counts{
	"sum.test.js > sum > adds":    {Passed: 1},
	"sum.test.js > sum > fails":   {Failed: 1},
	"sum.test.js > sum > later":   {Skipped: 1},
	"sum.test.js > sum > someday": {Skipped: 1},
	"sum.test.js > top level":     {Passed: 1},
}

const pyTests = `import pytest

def test_pass():
    assert 1 + 1 == 2

def test_fail():
    assert 1 + 1 == 3

@pytest.mark.skip(reason="later")
def test_skip():
    pass

@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n > 0

class TestGroup:
    def test_method(self):
        pass
`

var pyWant = map[string]Counts{
	"tests.test_a::test_pass":             {Passed: 1},
	"tests.test_a::test_fail":             {Failed: 1},
	"tests.test_a::test_skip":             {Skipped: 1},
	"tests.test_a::test_param[1]":         {Passed: 1},
	"tests.test_a::test_param[2]":         {Passed: 1},
	"tests.test_a.TestGroup::test_method": {Passed: 1},
}

// Reports the real tools wrote for these projects (pytest 7.2.1, Jest
// 30.5.2, Vitest 4.1.12), kept so the parsers are checked where the
// tools are not installed; the live tests below rerun the tools where
// they are.
func TestPR_V4_CapturedReports(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if c := ParseJUnit(Pytest, read("pytest-7.2.1.xml")); !c.Known || !reflect.DeepEqual(c.Tests, pyWant) {
		t.Errorf("pytest: %s %v", c, c.Tests)
	}
	if c := ParseJSReport(Jest, read("jest-30.5.2.json"), "/tmp/cj"); !c.Known || !reflect.DeepEqual(c.Tests, jsWant) {
		t.Errorf("jest: %s %v", c, c.Tests)
	}
	if c := ParseJSReport(Vitest, read("vitest-4.1.12.json"), "/tmp/cv"); !c.Known || !reflect.DeepEqual(c.Tests, jsWant) {
		t.Errorf("vitest: %s %v", c, c.Tests)
	}
}

func TestPR_V4_PytestCensusFromRealRun(t *testing.T) {
	if _, err := exec.LookPath("pytest"); err != nil {
		missing(t, "no pytest on PATH")
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{"tests/test_a.py": pyTests, "Makefile": "test:\n\t@pytest -q\n"})
	for _, argv := range [][]string{{"pytest"}, {"sh", "-c", "pytest -q tests"}, {"make", "test"}} {
		r := run(t, dir, argv...)
		if !r.Census.Known || r.Census.Ecosystem != Pytest || !reflect.DeepEqual(r.Census.Tests, pyWant) {
			t.Errorf("%v: %s %v\n%s", argv, r.Census, r.Census.Tests, r.Output)
		}
	}
}

// nodeModules is a node_modules with jest and vitest installed, named by
// CONVERGE_TEST_NODE_MODULES; the live JavaScript tests skip without it.
func nodeModules(t *testing.T) string {
	nm := os.Getenv("CONVERGE_TEST_NODE_MODULES")
	if nm == "" {
		missing(t, "CONVERGE_TEST_NODE_MODULES names no node_modules with jest and vitest")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		missing(t, "no npm")
	}
	return nm
}

func TestPR_V4_JestAndVitestCensusFromRealRun(t *testing.T) {
	nm := nodeModules(t)
	for _, tc := range []struct {
		eco  Ecosystem
		pkg  string
		test string
		argv []string
	}{
		{Jest, `{"name":"j","private":true,"scripts":{"test":"jest"}}`, jsSum, []string{"npm", "test"}},
		{Jest, `{"name":"j","private":true}`, jsSum, []string{"npx", "jest"}},
		{Vitest, `{"name":"v","private":true,"type":"module","scripts":{"test":"vitest run"}}`, "import { describe, test, expect } from 'vitest';\n" + jsSum, []string{"npm", "test"}},
	} {
		dir := t.TempDir()
		write(t, dir, map[string]string{"package.json": tc.pkg, "sum.test.js": tc.test})
		if err := os.Symlink(nm, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		r := run(t, dir, tc.argv...)
		if c := r.Census; !c.Known || c.Ecosystem != tc.eco || !reflect.DeepEqual(c.Tests, jsWant) {
			t.Errorf("%s %v: %s %v\n%s", tc.eco, tc.argv, c, c.Tests, r.Output)
		}
	}
}

// make test around go test: the census is taken through GOFLAGS.
func TestPR_V4_MakeAroundGoTest(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, goModule)
	write(t, dir, map[string]string{"Makefile": ".PHONY: test\ntest:\n\tgo test ./...\n"})
	r := run(t, dir, "make", "test")
	if !r.Census.Known || r.Census.Ran != 6 || r.Census.Skipped != 1 {
		t.Fatalf("census %s\n%s", r.Census, r.Output)
	}
	// A recipe of two commands is not followed.
	write(t, dir, map[string]string{"Makefile": "test:\n\tgo vet ./...\n\tgo test ./...\n"})
	if r := run(t, dir, "make", "test"); r.Census.Known {
		t.Fatalf("census of a two-line recipe: %s", r.Census)
	}
}

// missing skips a test whose tool is not installed, and fails it under
// CI=true, where .ci/run installs every tool.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (.ci/run installs it)")
	}
	t.Skip(why)
}
