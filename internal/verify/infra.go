package verify

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// IsTestInfraName reports whether p is test infrastructure by its name
// alone (PR-V4): the build and test configuration a test command and its
// runner read — makefiles, task runners' files, pytest, tox, nox, Jest,
// Vitest, Mocha, Karma, Playwright and Cypress configuration and setup
// files, conftest.py — and what only tests read: test data, fixtures,
// snapshots, mocks, and test-helper directories. The scripts a test
// command runs or sources and the packages only tests import are found in
// the repository (repo.TestInfra), not by name.
func IsTestInfraName(p string) bool {
	base := path.Base(p)
	lower := strings.ToLower(base)
	switch lower {
	case "makefile", "gnumakefile", "justfile", ".justfile", "taskfile.yml", "taskfile.yaml",
		"pytest.ini", "tox.ini", "noxfile.py", "conftest.py", ".rspec", ".mocharc", ".nycrc":
		return true
	}
	if strings.HasSuffix(lower, ".mk") {
		return true
	}
	stem := lower
	if i := strings.IndexByte(lower, '.'); i > 0 {
		stem = lower[:i]
	}
	switch stem {
	case "jest", "vitest", "karma", "playwright", "cypress", "setuptests", "phpunit":
		// jest.config.js, vitest.config.ts, vitest.workspace.ts,
		// jest.setup.js, karma.conf.js, setupTests.ts, phpunit.xml
		return strings.Contains(lower, ".config.") || strings.Contains(lower, ".setup.") || strings.Contains(lower, ".workspace.") ||
			strings.Contains(lower, ".conf.") || stem == "setuptests" || stem == "phpunit"
	case ".mocharc", ".nycrc":
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		switch strings.ToLower(dir) {
		case "testdata", "fixtures", "__fixtures__", "__snapshots__", "__mocks__", "testutil", "testutils", "testhelper", "testhelpers", "testsupport", "test_helpers", "test-helpers":
			return true
		}
	}
	return false
}

// infraLine: a line of a file that is not test infrastructure by name
// but holds some: a Go test's TestMain (it decides what a test binary
// reports and exits with), a package.json script that tests run by, or a
// test runner's configuration in it.
var infraLine = map[string]*regexp.Regexp{
	"go":           regexp.MustCompile(`\bfunc\s+TestMain\s*\(|\bm\.Run\s*\(|\bos\.Exit\s*\(`),
	"package.json": regexp.MustCompile(`"(pre|post)?test[\w:.-]*"\s*:|"(jest|vitest|mocha|ava|c8|nyc)"\s*:`),
	"pyproject":    regexp.MustCompile(`^\s*\[tool\.(pytest|coverage)`),
}

// infraChange is f's change to the test infrastructure, when no finding
// of the round asks for it on those lines.
func infraChange(r Round, f *FileDiff) (Violation, bool) {
	p := f.Path()
	whole := r.Infra[p] || r.Infra[f.OldPath] || IsTestInfraName(p) || (f.OldPath != "" && IsTestInfraName(f.OldPath))
	var line *regexp.Regexp
	switch {
	case whole:
	case path.Base(p) == "package.json":
		line = infraLine["package.json"]
	case strings.HasSuffix(p, "_test.go"):
		line = infraLine["go"]
	default:
		return Violation{}, false
	}
	if whole && (f.Deleted() || (f.OldPath != "" && f.NewPath != f.OldPath)) {
		if waives(r.Findings, f.OldPath, nil, 0) {
			return Violation{}, false
		}
		return Violation{Path: f.OldPath, Rule: RuleTestInfra,
			Why: fmt.Sprintf("%s, which the tests or the test command read, was deleted or renamed", f.OldPath)}, true
	}
	var at []int // the old lines changed that no finding asks for
	for _, c := range f.Changes {
		n := 0
		for i, l := range c.Removed {
			if whole || line.MatchString(l) {
				n = c.OldStart + i
				if !waives(r.Findings, p, nil, n) {
					at = append(at, n)
				}
			}
		}
		for _, l := range c.Added {
			if whole || line.MatchString(l) {
				if n = max(1, c.OldStart); !waives(r.Findings, p, nil, n) {
					at = append(at, n)
				}
			}
		}
	}
	if len(at) == 0 {
		return Violation{}, false
	}
	what := "test infrastructure"
	if !whole {
		what = "the part of it that decides how the tests run"
	}
	return Violation{Path: p, Rule: RuleTestInfra,
		Why: fmt.Sprintf("%s changed %s (near line %d), which the tests or the test command read and no finding asks to change there", p, what, at[0])}, true
}

// testAwareLine: code that asks whether it runs under a test runner, or
// reaches into one: Go's testing.Testing() or a test binary's name, the
// environment Jest, Vitest and pytest set, Python code that imports or
// patches pytest.
var testAwareLine = map[string]*regexp.Regexp{
	"go":     regexp.MustCompile(`\btesting\.Testing\s*\(|os\.Args\[0\].*\.test\b|\.test"\)|"-test\.`),
	"python": regexp.MustCompile(`\bimport\s+pytest\b|\bfrom\s+pytest\b|\bfrom\s+_pytest\b|sys\.modules\[\s*['"]_?pytest|PYTEST_CURRENT_TEST|['"]pytest['"]\s+in\s+sys\.modules|\bunittest\.TestCase\.(run|assert)`),
	"js":     regexp.MustCompile(`\bJEST_WORKER_ID\b|\bprocess\.env\.VITEST\b|\bimport\.meta\.vitest\b|NODE_ENV\s*[!=]==?\s*['"]test['"]|\b(expect|jest|vi)\.(extend|spyOn|mock)\b`),
}

// testAware is f's change that makes code that is not a test behave
// differently under a test runner (LOOP-6, PR-V4), when no finding of the
// round asks for it on those lines.
func testAware(r Round, f *FileDiff) (Violation, bool) {
	p := f.Path()
	if f.NewPath == "" || IsTestFile(p) || IsTestInfraName(p) || r.Infra[p] {
		return Violation{}, false
	}
	re := testAwareLine[lang(p)]
	if re == nil {
		return Violation{}, false
	}
	for _, c := range f.Changes {
		for _, l := range c.Added {
			if re.MatchString(l) && !waives(r.Findings, p, nil, max(1, c.OldStart)) {
				return Violation{Path: p, Rule: RuleTestAware,
					Why: fmt.Sprintf("%s now behaves differently under a test runner (%s): code that is not a test may not know it is tested",
						p, strings.TrimSpace(clip(l, 80)))}, true
			}
		}
	}
	return Violation{}, false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestAwareChanges are the files of change whose code, not a test, now
// behaves differently under a test runner (LOOP-6): no finding waives it.
func TestAwareChanges(change []FileDiff) []Violation {
	var out []Violation
	for i := range change {
		if v, ok := testAware(Round{}, &change[i]); ok {
			out = append(out, v)
		}
	}
	return out
}
