package verify

import (
	"fmt"
	"path"
	"regexp"
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
// (base...head), the round's findings, and the files the fixers' records
// name with a reason (path → reason).
type Round struct {
	Change    []FileDiff
	PR        []FileDiff
	Findings  []Finding
	Explained map[string]string
}

// Preserve lists the changes of r that PR-V3 forbids, in file order: a
// test file deleted or renamed, a test removed or newly skipped, more
// than half of the lines the pull request itself added to a file removed,
// a file added that no finding names and no record explains — each
// unless a finding of the round asks for exactly that on that file.
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
			if !asks(r.Findings, f.OldPath, askDelete) {
				out = append(out, Violation{Path: f.OldPath, Rule: RuleTestFileDeleted,
					Why: fmt.Sprintf("the test file %s was %s", f.OldPath, what)})
			}
			continue
		}
		tc := Tests(f)
		if len(tc.Removed) > 0 && !asks(r.Findings, p, askDelete) {
			out = append(out, Violation{Path: p, Rule: RuleTestRemoved,
				Why: fmt.Sprintf("%s lost %s", p, plural(len(tc.Removed), "test")+" ("+strings.Join(clipList(tc.Removed, 5), ", ")+")")})
		}
		if tc.Skipped > 0 && !asks(r.Findings, p, askSkip) {
			out = append(out, Violation{Path: p, Rule: RuleTestSkipped,
				Why: fmt.Sprintf("%s newly skips %s", p, plural(tc.Skipped, "test"))})
		}
		if f.OldPath != "" {
			if added, removed := prLinesRemoved(r.PR, f); added > 0 && 2*removed > added && !asks(r.Findings, f.OldPath, askDelete) {
				out = append(out, Violation{Path: f.OldPath, Rule: RulePRLinesRemoved,
					Why: fmt.Sprintf("%d of the %d lines this pull request adds to %s were removed", removed, added, f.OldPath)})
			}
		}
		if f.Added() && !names(r.Findings, p) && strings.TrimSpace(r.Explained[p]) == "" {
			out = append(out, Violation{Path: p, Rule: RuleUnexplainedFile,
				Why: fmt.Sprintf("the new file %s is named by no finding and no fixer's record gives a reason for it", p)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// prLinesRemoved counts the lines the pull request added to f's file
// (new side of pr) and how many of them f removes.
func prLinesRemoved(pr []FileDiff, f *FileDiff) (added, removed int) {
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
		return len(own), len(own)
	}
	for _, c := range f.Changes {
		for i := range c.Removed {
			if own[c.OldStart+i] {
				removed++
			}
		}
	}
	return len(own), removed
}

// What a finding may ask for, in its words.
var (
	askDelete = regexp.MustCompile(`(?i)\b(remove|delete|drop|revert|rename|move|get rid of|unnecessary|unused|dead code|redundant|obsolete)\b`)
	askSkip   = regexp.MustCompile(`(?i)\b(skip|disable|ignore|xfail|flaky)\b`)
)

// asks reports whether a finding of the round is on file (its path, or
// its body naming the file) and asks, in words like want's, for what was
// done to it.
func asks(fs []Finding, file string, want *regexp.Regexp) bool {
	for _, f := range fs {
		if (f.Path == file || mentions(f.Body, file)) && want.MatchString(f.Body) {
			return true
		}
	}
	return false
}

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
