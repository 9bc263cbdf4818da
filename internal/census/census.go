// Package census counts the tests a build/test command ran, passed,
// failed and skipped, where the ecosystem reports them (PR-V4, LOOP-8):
// `go test -json`, pytest's JUnit XML, Jest's and Vitest's JSON, and
// `cargo test`'s plain verdict lines.
//
// The census is only ever what the ecosystem reported. A command whose
// ecosystem cannot be proven from its argv, or whose report is missing,
// truncated or unreadable, has a Census with Known false and a Why — never
// a guessed count. Compare says which tests that ran at a baseline no
// longer run, or now skip, on a candidate.
//
// The parsers read what an untrusted repository's tests print: they never
// panic, and bound what they keep.
package census

import (
	"fmt"
	"sort"
	"strings"
)

// Ecosystem is the test runner a census is read from.
type Ecosystem string

// The ecosystems a census can be taken for.
const (
	Unknown Ecosystem = ""
	Go      Ecosystem = "go"
	Pytest  Ecosystem = "pytest"
	Jest    Ecosystem = "jest"
	Vitest  Ecosystem = "vitest"
	Cargo   Ecosystem = "cargo"
)

// Counts is what happened to one test identity in one run. A test run
// more than once (go test -count=2, two doc-tests on one item) counts
// each time.
type Counts struct {
	Passed  int `json:"passed,omitempty"`
	Failed  int `json:"failed,omitempty"`
	Skipped int `json:"skipped,omitempty"`
}

// Ran is how many times the test ran to a verdict (passed or failed).
func (c Counts) Ran() int { return c.Passed + c.Failed }

// Census is the tests of one run of a test command.
type Census struct {
	// Known: the ecosystem reported its tests and they were read whole.
	// When false, every count is zero and Why says why.
	Known     bool      `json:"known"`
	Ecosystem Ecosystem `json:"ecosystem,omitempty"`
	Why       string    `json:"why,omitempty"`
	// Ran is Passed+Failed: the tests that ran to a verdict.
	Ran     int `json:"ran"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Tests is each test by identity: the package, file or binary it
	// belongs to and its name, so that two runs of one tree agree. It is
	// not in the JSON form: a caller that stores a census to compare with
	// later keeps Tests beside it (checkloop.Check.Tests).
	Tests map[string]Counts `json:"-"`
}

// Summary is c without its Tests: the counts, for a proof or a log.
// Compared as a baseline it holds a candidate to its counts only.
func (c Census) Summary() Census {
	c.Tests = nil
	return c
}

// unknown is the census that cannot be taken, and why.
func unknown(eco Ecosystem, why string) Census {
	return Census{Ecosystem: eco, Why: why}
}

// maxTests bounds the identities a census keeps: hostile output cannot
// make it grow without end. A run with more is not counted.
const maxTests = 200_000

// maxIdentity bounds one identity's length.
const maxIdentity = 1000

// tally builds a census as tests are reported.
type tally struct {
	eco   Ecosystem
	tests map[string]Counts
	over  bool
}

func newTally(eco Ecosystem) *tally { return &tally{eco: eco, tests: map[string]Counts{}} }

func (t *tally) add(id string, outcome byte) {
	if len(id) > maxIdentity {
		id = id[:maxIdentity]
	}
	c, seen := t.tests[id]
	if !seen && len(t.tests) >= maxTests {
		t.over = true
		return
	}
	switch outcome {
	case 'p':
		c.Passed++
	case 'f':
		c.Failed++
	case 's':
		c.Skipped++
	}
	t.tests[id] = c
}

func (t *tally) census() Census {
	if t.over {
		return unknown(t.eco, fmt.Sprintf("more than %d tests reported", maxTests))
	}
	c := Census{Known: true, Ecosystem: t.eco, Tests: t.tests}
	for _, n := range t.tests {
		c.Passed += n.Passed
		c.Failed += n.Failed
		c.Skipped += n.Skipped
	}
	c.Ran = c.Passed + c.Failed
	return c
}

// String is one line for a log or a reply: "go: 12 ran (11 passed, 1
// failed), 2 skipped", or "no test census: WHY".
func (c Census) String() string {
	if !c.Known {
		why := c.Why
		if why == "" {
			why = "not taken"
		}
		return "no test census: " + why
	}
	s := fmt.Sprintf("%s: %d ran (%d passed, %d failed), %d skipped", c.Ecosystem, c.Ran, c.Passed, c.Failed, c.Skipped)
	return s
}

// Diff is what a candidate's census lost against its baseline's.
type Diff struct {
	// Vanished are tests that ran at the baseline and are not reported
	// on the candidate at all (or ran fewer times).
	Vanished []string `json:"vanished,omitempty"`
	// NowSkipped are tests that ran at the baseline and are skipped on
	// the candidate.
	NowSkipped []string `json:"now_skipped,omitempty"`
	// Unknown says why the comparison cannot be made although the
	// baseline's census was taken: the candidate's was not. Fail closed:
	// a candidate whose tests cannot be counted has not kept them.
	Unknown string `json:"unknown,omitempty"`
	// NoneRan: no test ran on the candidate at all. A pass that runs no
	// test proves nothing, whatever the baseline ran (a baseline that did
	// not build ran none either, and an init that exits 0 under the test
	// binary would then hold to it).
	NoneRan bool `json:"none_ran,omitempty"`
	// NowFailing are tests that fail on the candidate and did not at the
	// baseline (a test the baseline passed, or a new one): a failing test
	// counts whatever the command's exit status says (PR-V4, LOOP-8).
	NowFailing []string `json:"now_failing,omitempty"`
	// MoreFailed says the candidate's census counts more failures than
	// the baseline's where no test is named (a summary baseline, a test
	// failing more times than it did).
	MoreFailed string `json:"more_failed,omitempty"`
}

// Empty: nothing lost and nothing newly failing, or nothing to compare.
func (d Diff) Empty() bool {
	return len(d.Vanished) == 0 && len(d.NowSkipped) == 0 && d.Unknown == "" && !d.NoneRan && len(d.NowFailing) == 0 && d.MoreFailed == ""
}

// Failing are the tests that failed in c, sorted.
func (c Census) Failing() []string {
	var ids []string
	for id, n := range c.Tests {
		if n.Failed > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Compare says which tests that ran at base no longer run on cand, or now
// skip, which fail on cand that did not fail at base, and whether no test
// ran on cand at all. With no baseline census the candidate is held to
// its own failures alone (fail closed: none of them can be the
// baseline's); with a baseline census and none of the candidate,
// Diff.Unknown says why.
func Compare(base, cand Census) Diff {
	var d Diff
	if !base.Known {
		if cand.Known && cand.Failed > 0 {
			d.NowFailing = cand.Failing()
			if len(d.NowFailing) == 0 {
				d.MoreFailed = fmt.Sprintf("%d tests failed", cand.Failed)
			}
		}
		return d
	}
	if !cand.Known {
		why := cand.Why
		if why == "" {
			why = "not taken"
		}
		d.Unknown = "the test census could not be taken: " + why
		return d
	}
	d.NoneRan = cand.Ran == 0
	if base.Tests == nil {
		// A summary names no tests: hold the candidate to its counts.
		if cand.Ran < base.Ran || cand.Skipped > base.Skipped {
			d.Unknown = fmt.Sprintf("%d tests ran and %d skipped, against %d and %d at the baseline", cand.Ran, cand.Skipped, base.Ran, base.Skipped)
		}
		if cand.Failed > base.Failed {
			d.MoreFailed = fmt.Sprintf("%d tests failed, against %d at the baseline", cand.Failed, base.Failed)
		}
		return d
	}
	for id, c := range cand.Tests {
		if c.Failed > 0 && base.Tests[id].Failed == 0 {
			d.NowFailing = append(d.NowFailing, id)
		}
	}
	if len(d.NowFailing) == 0 && cand.Failed > base.Failed {
		d.MoreFailed = fmt.Sprintf("%d tests failed, against %d at the baseline", cand.Failed, base.Failed)
	}
	sort.Strings(d.NowFailing)
	for id, b := range base.Tests {
		if b.Ran() == 0 {
			continue
		}
		c := cand.Tests[id]
		if c.Ran() >= b.Ran() {
			continue
		}
		if c.Skipped > 0 {
			d.NowSkipped = append(d.NowSkipped, id)
		} else {
			d.Vanished = append(d.Vanished, id)
		}
	}
	sort.Strings(d.Vanished)
	sort.Strings(d.NowSkipped)
	return d
}

// Except is d without the tests allowed reports may go (a finding asked to
// remove them).
func (d Diff) Except(allowed func(id string) bool) Diff {
	if allowed == nil {
		return d
	}
	// A finding may ask to remove a test, never to make one fail.
	out := Diff{Unknown: d.Unknown, NoneRan: d.NoneRan, NowFailing: d.NowFailing, MoreFailed: d.MoreFailed}
	for _, id := range d.Vanished {
		if !allowed(id) {
			out.Vanished = append(out.Vanished, id)
		}
	}
	for _, id := range d.NowSkipped {
		if !allowed(id) {
			out.NowSkipped = append(out.NowSkipped, id)
		}
	}
	return out
}

// maxNamed is how many tests a reason names before "and N more".
const maxNamed = 5

// String is the reason a candidate is rejected with, naming the tests,
// or "" when nothing was lost.
func (d Diff) String() string {
	var parts []string
	if d.Unknown != "" {
		parts = append(parts, d.Unknown)
	}
	if d.NoneRan {
		parts = append(parts, "no test ran, and a pass that runs no test proves nothing")
	}
	if len(d.NowFailing) > 0 {
		parts = append(parts, "tests fail that did not fail before: "+names(d.NowFailing))
	}
	if d.MoreFailed != "" {
		parts = append(parts, d.MoreFailed)
	}
	if len(d.Vanished) > 0 {
		parts = append(parts, "tests that ran before no longer run: "+names(d.Vanished))
	}
	if len(d.NowSkipped) > 0 {
		parts = append(parts, "tests that ran before now skip: "+names(d.NowSkipped))
	}
	return strings.Join(parts, "; ")
}

func names(ids []string) string {
	if len(ids) <= maxNamed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxNamed], ", "), len(ids)-maxNamed)
}
