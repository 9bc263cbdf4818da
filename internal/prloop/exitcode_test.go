package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/exitcode"
)

// TestIF1_ExitCodeIsTheTable: every terminal reason of the loop exits
// with the code the one IF-1 table gives it.
func TestIF1_ExitCodeIsTheTable(t *testing.T) {
	for _, r := range []Reason{
		ReasonTwoStable, ReasonPRClosed, ReasonHumanPush, ReasonBaseMoved, ReasonNoIndependentReview,
		ReasonConvergenceFailure, ReasonCapExhausted, ReasonIdleTimeout, ReasonStoppedByHuman,
		ReasonErrored, ReasonHandedOff,
	} {
		if got, want := ExitCode(r), exitcode.ForReason(string(r)); got != want {
			t.Errorf("ExitCode(%q) = %d, the IF-1 table says %d", r, got, want)
		}
	}
}
