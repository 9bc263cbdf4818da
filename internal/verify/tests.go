package verify

import (
	"path"
	"regexp"
	"strings"
)

// IsTestFile reports whether path is a test file by the conventions of
// the ecosystems converge knows: Go, Python (pytest, unittest),
// JavaScript/TypeScript (Jest, Vitest, Mocha), Rust, Java/Kotlin, Ruby,
// and any file under a test directory.
func IsTestFile(p string) bool {
	base := path.Base(p)
	lower := strings.ToLower(base)
	ext := path.Ext(lower)
	stem := strings.TrimSuffix(lower, ext)
	switch {
	case strings.HasSuffix(lower, "_test.go"):
		return true
	case ext == ".py" && (strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "conftest"):
		return true
	case jsExt[ext] && (strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec")):
		return true
	case (ext == ".java" || ext == ".kt") && (strings.HasSuffix(stem, "test") || strings.HasSuffix(stem, "tests")):
		return true
	case ext == ".rb" && (strings.HasSuffix(stem, "_spec") || strings.HasSuffix(stem, "_test")):
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		switch strings.ToLower(dir) {
		case "test", "tests", "__tests__", "spec", "testdata":
			return true
		}
	}
	return false
}

var jsExt = map[string]bool{".js": true, ".jsx": true, ".ts": true, ".tsx": true, ".mjs": true, ".cjs": true, ".mts": true, ".cts": true}

// lang is the test dialect of a file by its extension.
func lang(p string) string {
	ext := strings.ToLower(path.Ext(p))
	switch {
	case ext == ".go":
		return "go"
	case ext == ".py":
		return "python"
	case jsExt[ext]:
		return "js"
	case ext == ".rs":
		return "rust"
	}
	return ""
}

var (
	goTestDecl = regexp.MustCompile(`^\s*func\s+((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(`)
	goSkip     = regexp.MustCompile(`\b\w+\.Skip(?:Now|f)?\s*\(`)
	pyTestDecl = regexp.MustCompile(`^\s*(?:async\s+)?def\s+(test\w*)\s*\(|^\s*class\s+(Test\w*)`)
	pySkip     = regexp.MustCompile(`@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail)\s*\(|@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b|\.skipTest\s*\(`)
	jsTestDecl = regexp.MustCompile(`\b[xf]?(it|test|describe)(?:\.(?:skip|only|todo|concurrent|each\b[^(]*))*\s*\(\s*(?:'([^']*)'|"([^"]*)"|` + "`([^`]*)`" + `)`)
	jsSkip     = regexp.MustCompile(`\b(?:it|test|describe)\.(?:skip|todo|only)\b|\bx(?:it|test|describe)\s*\(|\bf(?:it|describe)\s*\(`)
	rsTestDecl = regexp.MustCompile(`#\[\s*(?:[\w:]+::)?test\b[^\]]*\]`)
	rsSkip     = regexp.MustCompile(`#\[\s*ignore\b`)
)

// testDecls are the tests line declares, by a key that names them (the
// same test declared again elsewhere in the file is the same key).
func testDecls(lng, line string) []string {
	switch lng {
	case "go":
		if m := goTestDecl.FindStringSubmatch(line); m != nil {
			return []string{"func " + m[1]}
		}
	case "python":
		if m := pyTestDecl.FindStringSubmatch(line); m != nil {
			return []string{"def " + m[1] + m[2]}
		}
	case "js":
		var out []string
		for _, m := range jsTestDecl.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1]+"("+m[2]+m[3]+m[4]+")")
		}
		return out
	case "rust":
		if rsTestDecl.MatchString(line) {
			return []string{"#[test]"}
		}
	}
	return nil
}

// skips counts the skip markers on line.
func skips(lng, line string) int {
	var re *regexp.Regexp
	switch lng {
	case "go":
		re = goSkip
	case "python":
		re = pySkip
	case "js":
		re = jsSkip
	case "rust":
		re = rsSkip
	default:
		return 0
	}
	return len(re.FindAllStringIndex(line, -1))
}

// TestChange is what a file's diff did to its tests.
type TestChange struct {
	Removed []string // tests declared in removed lines and not again in added ones
	Skipped int      // skip markers added beyond those removed
	// RemovedAt is where each removed test was declared (its old line);
	// SkipsAt where skip markers were added (the old line the added ones
	// stand at): what a finding's range must cover to waive them.
	RemovedAt map[string]int
	SkipsAt   []int
}

// Tests reads what f did to the tests it declares: Go func TestX, Python
// def test_/class Test, JS/TS it/test/describe, Rust #[test]; skips by
// t.Skip, pytest skip marks, .skip/xit/.only, #[ignore]. Go and Python
// tests count only in test files; JS/TS tests in any file, Rust unit
// tests live beside the code.
func Tests(f *FileDiff) TestChange {
	var tc TestChange
	if f == nil {
		return tc
	}
	lng := lang(f.Path())
	if lng == "" || ((lng == "go" || lng == "python") && !IsTestFile(f.OldPath) && !IsTestFile(f.NewPath)) {
		return tc
	}
	count := map[string]int{}
	at := map[string]int{}
	skip := 0
	var order []string
	for _, c := range f.Changes {
		for i, l := range c.Removed {
			for _, k := range testDecls(lng, l) {
				if count[k] == 0 {
					order = append(order, k)
				}
				if _, ok := at[k]; !ok {
					at[k] = c.OldStart + i
				}
				count[k]++
			}
			skip -= skips(lng, l)
		}
		for _, l := range c.Added {
			for _, k := range testDecls(lng, l) {
				count[k]--
			}
			if n := skips(lng, l); n > 0 {
				skip += n
				tc.SkipsAt = append(tc.SkipsAt, max(1, c.OldStart))
			}
		}
	}
	for _, k := range order {
		if count[k] > 0 {
			tc.Removed = append(tc.Removed, k)
			if tc.RemovedAt == nil {
				tc.RemovedAt = map[string]int{}
			}
			tc.RemovedAt[k] = at[k]
		}
	}
	tc.Skipped = max(0, skip)
	return tc
}
