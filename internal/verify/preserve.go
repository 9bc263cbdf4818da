package verify

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Finding is what verify needs of a review finding: where it is and what
// it asks. Path "" is a finding about the pull request as a whole; End 0
// one about the whole file.
type Finding struct {
	ID         string
	Path       string
	Start, End int
	Body       string
}

// Rule names a preservation rule of PR-V3.
type Rule string

const (
	RuleTestFileDeleted Rule = "test-file-deleted" // deleted or renamed
	RuleTestRemoved     Rule = "test-removed"
	RuleTestSkipped     Rule = "test-skipped"
	RulePRLinesRemoved  Rule = "pr-lines-removed" // more than half of the PR's own additions
	RuleUnexplainedFile Rule = "unexplained-file"
	// RuleTestInfra: a file the tests and the test command read but the
	// code under test does not was changed (PR-V4's test infrastructure).
	RuleTestInfra Rule = "test-infrastructure"
	// RuleTestAware: code that is not a test now behaves differently
	// under a test runner (LOOP-6, PR-V4).
	RuleTestAware Rule = "test-aware-code"
)

// Violation is one change a round may not make (PR-V3), with why in words
// a reply can quote.
type Violation struct {
	Path string
	Rule Rule
	Why  string
}

// Round is what Preserve judges: the round's change (against the head it
// started from), the pull request's own change before the round
// (base...head), the round's findings, the files the fixers' records
// name with a reason (path → reason), and the repository's test
// infrastructure beyond what its names say (InfraNames): the scripts the
// test command runs or sources, the makefiles it includes, the packages
// only tests import (repo.TestInfra).
type Round struct {
	Change    []FileDiff
	PR        []FileDiff
	Findings  []Finding
	Explained map[string]string
	Infra     map[string]bool
}

// Preserve lists the changes of r that PR-V3 forbids, in file order: a
// test file deleted or renamed, a test removed or newly skipped, more
// than half of the lines the pull request itself added to a file removed,
// a file added that no finding names and no record explains, a change to
// the test infrastructure (PR-V4), code made to behave differently under
// a test runner — each unless a finding of the round asks for exactly
// that on those lines: a finding waives a rule for its own range (widened
// as PR-V1's) and never for the whole file, unless it is about the whole
// file.
func Preserve(r Round) []Violation {
	var out []Violation
	for i := range r.Change {
		f := &r.Change[i]
		p := f.Path()
		if f.OldPath != "" && IsTestFile(f.OldPath) && (f.Deleted() || f.NewPath != f.OldPath) {
			what := "deleted"
			if !f.Deleted() {
				what = "renamed to " + f.NewPath
			}
			if !waives(r.Findings, f.OldPath, askDelete, 0) {
				out = append(out, Violation{Path: f.OldPath, Rule: RuleTestFileDeleted,
					Why: fmt.Sprintf("the test file %s was %s", f.OldPath, what)})
			}
			continue
		}
		tc := Tests(f)
		var removed []string
		for _, name := range tc.Removed {
			if !waives(r.Findings, p, askDelete, tc.RemovedAt[name]) && !namesTest(r.Findings, name, askDelete) {
				removed = append(removed, name)
			}
		}
		if len(removed) > 0 {
			out = append(out, Violation{Path: p, Rule: RuleTestRemoved,
				Why: fmt.Sprintf("%s lost %s", p, plural(len(removed), "test")+" ("+strings.Join(clipList(removed, 5), ", ")+")")})
		}
		if tc.Skipped > 0 && slices.ContainsFunc(tc.SkipsAt, func(n int) bool { return !waives(r.Findings, p, askSkip, n) }) {
			out = append(out, Violation{Path: p, Rule: RuleTestSkipped,
				Why: fmt.Sprintf("%s newly skips %s", p, plural(tc.Skipped, "test"))})
		}
		if f.OldPath != "" {
			if added, removed := prLinesRemoved(r.PR, f, r.Findings); added > 0 && 2*removed > added {
				out = append(out, Violation{Path: f.OldPath, Rule: RulePRLinesRemoved,
					Why: fmt.Sprintf("%d of the %d lines this pull request adds to %s were removed", removed, added, f.OldPath)})
			}
		}
		if f.Added() && !names(r.Findings, p) && strings.TrimSpace(r.Explained[p]) == "" {
			out = append(out, Violation{Path: p, Rule: RuleUnexplainedFile,
				Why: fmt.Sprintf("the new file %s is named by no finding and no fixer's record gives a reason for it", p)})
		}
		if v, ok := infraChange(r, f); ok {
			out = append(out, v)
		}
		if v, ok := testAware(r, f); ok {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// prLinesRemoved counts the lines the pull request added to f's file
// (new side of pr) and how many of them f removes where no finding of the
// round asks to remove them on those lines.
func prLinesRemoved(pr []FileDiff, f *FileDiff, fs []Finding) (added, removed int) {
	p := File(pr, f.OldPath)
	if p == nil || p.Deleted() {
		return 0, 0
	}
	own := map[int]bool{}
	for _, c := range p.Changes {
		for i := range c.Added {
			own[c.NewStart+i] = true
		}
	}
	if f.Deleted() {
		if waives(fs, f.OldPath, askDelete, 0) {
			return len(own), 0
		}
		return len(own), len(own)
	}
	for _, c := range f.Changes {
		for i := range c.Removed {
			if n := c.OldStart + i; own[n] && !waives(fs, f.OldPath, askDelete, n) {
				removed++
			}
		}
	}
	return len(own), removed
}

// waives reports whether a finding of the round asks, in words like
// want's (nil: any words), for a change to file at its old line n (n 0:
// to the whole file, a deletion). A finding waives only its own lines:
// on file with a range, the range widened as PR-V1's, and the whole file
// only when its words name a file; a file-level finding on file (End 0)
// or one about the whole pull request naming file, any line of it. A
// finding on another file waives nothing here.
func waives(fs []Finding, file string, want *regexp.Regexp, n int) bool {
	for _, f := range fs {
		if want != nil && !want.MatchString(f.Body) {
			continue
		}
		switch {
		case f.Path == "":
			if mentions(f.Body, file) {
				return true
			}
		case f.Path != file:
		case f.End <= 0:
			return true
		case n <= 0:
			if wholeFile.MatchString(f.Body) || mentions(f.Body, file) {
				return true
			}
		default:
			r := Range{Start: f.Start, End: f.End}
			if r.Start <= 0 || r.Start > r.End {
				r.Start = r.End
			}
			if w := r.Widened(Widen); n >= w.Start && n <= w.End {
				return true
			}
		}
	}
	return false
}

// wholeFile: a finding's words about its file as a whole.
var wholeFile = regexp.MustCompile(`(?i)\b(this|the|whole|entire) (file|module|test file)\b`)

// namesTest reports whether a finding names test (a declaration key such
// as "func TestX") by its bare name and asks, in want's words, for it.
func namesTest(fs []Finding, test string, want *regexp.Regexp) bool {
	name := test
	if i := strings.LastIndexAny(name, " ("); i >= 0 && !strings.HasSuffix(name, ")") {
		name = name[i+1:]
	} else if i := strings.IndexByte(name, '('); i >= 0 {
		name = strings.TrimSuffix(name[i+1:], ")")
	}
	if strings.TrimSpace(name) == "" {
		return false
	}
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	for _, f := range fs {
		if word.MatchString(f.Body) && want.MatchString(f.Body) {
			return true
		}
	}
	return false
}

// What a finding may ask for, in its words.
var (
	askDelete = regexp.MustCompile(`(?i)\b(remove|delete|drop|revert|rename|move|get rid of|unnecessary|unused|dead code|redundant|obsolete)\b`)
	askSkip   = regexp.MustCompile(`(?i)\b(skip|disable|ignore|xfail|flaky)\b`)
)

// names reports whether a finding of the round is on file or names it.
func names(fs []Finding, file string) bool {
	for _, f := range fs {
		if f.Path == file || mentions(f.Body, file) {
			return true
		}
	}
	return false
}

// mentions reports whether body names file by its path or its base name.
func mentions(body, file string) bool {
	if file == "" {
		return false
	}
	return strings.Contains(body, file) || strings.Contains(body, path.Base(file))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func clipList(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(append([]string(nil), xs[:n]...), fmt.Sprintf("%d more", len(xs)-n))
}

// TestMayGo says which tests the findings ask to remove or skip: a test
// (by its census name, whose last element after a dot, slash, "::" or
// " > " is the test's own name) may vanish or newly skip when a finding
// names it and asks, in its words, for that (PR-V4's "unless a finding
// asked to remove it"). The same words as Preserve's waiver.
func TestMayGo(fs []Finding) func(testID string) bool {
	return func(testID string) bool {
		name := testID
		for _, sep := range []string{" > ", "::", "/", ".", " "} {
			if i := strings.LastIndex(name, sep); i >= 0 {
				name = name[i+len(sep):]
			}
		}
		if name == "" {
			return false
		}
		word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
		for _, f := range fs {
			if word.MatchString(f.Body) && (askDelete.MatchString(f.Body) || askSkip.MatchString(f.Body)) {
				return true
			}
		}
		return false
	}
}
