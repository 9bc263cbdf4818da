package census

import (
	"regexp"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// Failure is one failing test or package in a test run's printed output:
// Key is the line normalised for comparison across runs, Lines what a
// hand-off quotes (the line, and the detail line under it when indented).
type Failure struct {
	Key   string
	Lines []string
}

// failureLine matches the verdict lines of common test runners: go test
// (--- FAIL: TestX, FAIL pkg), TAP (not ok), pytest (FAILED path::test),
// cargo (test name ... FAILED), Jest (✕ name) and Vitest (× name).
var failureLine = regexp.MustCompile(`^\s*(--- FAIL: \S+|FAIL\s+\S+.*|not ok\b.*|FAILED\s+\S+.*|test \S+ \.\.\. FAILED|[✕×]\s+\S+.*)`)

// timing is a run time that changes from run to run: "(0.01s)" after a
// go test name, "\t0.005s" after a package, " in 1.2s", "(12 ms)".
var timing = regexp.MustCompile(`\s*\(\d+(\.\d+)?\s?m?s\)\s*$|\s+\d+(\.\d+)?m?s\s*$`)

// tapNumber is a TAP test number, which shifts when tests are added.
var tapNumber = regexp.MustCompile(`^not ok \d+\b`)

// Failures are the failing tests a run's output shows, by the runners'
// own verdict lines, in order and each once: what a test run says failed
// whatever its exit status (PR-V4, LOOP-8), and what a hand-off quotes.
func Failures(out string) []Failure {
	lines := strings.Split(out, "\n")
	var fs []Failure
	seen := map[string]bool{}
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if !failureLine.MatchString(l) {
			continue
		}
		key := strings.Join(strings.Fields(timing.ReplaceAllString(strings.TrimSpace(l), "")), " ")
		key = tapNumber.ReplaceAllString(key, "not ok")
		if seen[key] {
			continue
		}
		seen[key] = true
		f := Failure{Key: key, Lines: []string{text.Clip(strings.Join(strings.Fields(l), " "), 200)}}
		if i+1 < len(lines) {
			next := strings.TrimRight(lines[i+1], "\r")
			indent := len(l) - len(strings.TrimLeft(l, " \t"))
			if d := strings.TrimSpace(next); d != "" && len(next)-len(strings.TrimLeft(next, " \t")) > indent && !failureLine.MatchString(next) {
				f.Lines = append(f.Lines, text.Clip(d, 200))
			}
		}
		fs = append(fs, f)
	}
	return fs
}
