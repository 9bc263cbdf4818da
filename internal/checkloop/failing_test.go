package checkloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/census"
)

// TestLOOP_8_AGreenExitOverAFailingTestHasNotPassed: what a check's run
// shows failing, by its census or else its output, whatever its exit
// status; nothing for a run that shows no failure.
func TestLOOP_8_AGreenExitOverAFailingTestHasNotPassed(t *testing.T) {
	known := census.Census{Known: true, Ecosystem: census.Go, Ran: 2, Passed: 1, Failed: 1,
		Tests: map[string]census.Counts{"m.TestA": {Passed: 1}, "m.TestB": {Failed: 1}}}
	for _, tc := range []struct {
		name   string
		c      census.Census
		output string
		want   string
	}{
		{"census", known, "", "m.TestB"},
		{"census over the output", known, "--- FAIL: TestZ (0.00s)\n", "m.TestB"},
		{"census clean", census.Census{Known: true, Ran: 1, Passed: 1, Tests: map[string]census.Counts{"m.TestA": {Passed: 1}}}, "FAILED to parse: a log line\n", ""},
		{"output, no census", census.Census{Why: "not a runner it knows"}, "=== RUN TestB\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tm\t0.1s\n", "--- FAIL: TestB, FAIL m"},
		{"output clean, no census", census.Census{Why: "not a runner it knows"}, "ok\tm\t0.1s\n", ""},
	} {
		if got := failingTests(tc.c, tc.output); got != tc.want {
			t.Errorf("%s: failingTests = %q, want %q", tc.name, got, tc.want)
		}
	}
}
