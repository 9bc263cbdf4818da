package census

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	// cargoRunning names the test binary that follows: "Running
	// unittests src/lib.rs (target/debug/deps/x-0123abcd)", "Running
	// tests/api.rs (…)", "Doc-tests x".
	cargoRunning = regexp.MustCompile(`^\s*(?:Running\s+(?:unittests\s+)?(\S+)|Doc-tests\s+(\S+))`)
	// cargoVerdict is libtest's line per test in its pretty format.
	cargoVerdict = regexp.MustCompile(`^test (.+) \.\.\. (ok|FAILED|ignored(?:, .*)?)$`)
	// cargoResult is libtest's summary per binary.
	cargoResult = regexp.MustCompile(`^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;`)
	// docLine is the line number in a doc-test's name, which moves with
	// every edit above it.
	docLine = regexp.MustCompile(` \(line \d+\)$`)
)

// ParseCargoTest reads the plain output of `cargo test`: a test per
// "test NAME ... ok|FAILED|ignored" line, named by its binary's source
// ("src/lib.rs", "tests/api.rs", "doc x") and its path. The lines are
// checked against each binary's "test result:" summary; output whose
// verdict lines do not add up to the summaries (interleaved with what the
// tests printed, or --quiet's dots) is not a census.
func ParseCargoTest(out string) Census {
	t := newTally(Cargo)
	binary := ""
	var sumP, sumF, sumI, lineP, lineF, lineI int
	results := 0
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		if m := cargoRunning.FindStringSubmatch(l); m != nil {
			binary = m[1]
			if m[2] != "" {
				binary = "doc " + m[2]
			}
			continue
		}
		if m := cargoVerdict.FindStringSubmatch(l); m != nil {
			name := docLine.ReplaceAllString(m[1], "")
			id := name
			if binary != "" {
				id = binary + " " + name
			}
			switch {
			case m[2] == "ok":
				t.add(id, 'p')
				lineP++
			case m[2] == "FAILED":
				t.add(id, 'f')
				lineF++
			default:
				t.add(id, 's')
				lineI++
			}
			continue
		}
		if m := cargoResult.FindStringSubmatch(l); m != nil {
			results++
			p, _ := strconv.Atoi(m[1])
			f, _ := strconv.Atoi(m[2])
			i, _ := strconv.Atoi(m[3])
			sumP, sumF, sumI = sumP+p, sumF+f, sumI+i
		}
	}
	if results == 0 {
		return unknown(Cargo, "cargo test printed no \"test result:\" line")
	}
	if lineP != sumP || lineF != sumF || lineI != sumI {
		return unknown(Cargo, fmt.Sprintf("cargo test's verdict lines (%d passed, %d failed, %d ignored) do not match its summaries (%d, %d, %d)",
			lineP, lineF, lineI, sumP, sumF, sumI))
	}
	return t.census()
}
