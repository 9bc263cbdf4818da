package exitcode

import "testing"

// TestIF1_ExitCodes pins the table of SPEC IF-1.
func TestIF1_ExitCodes(t *testing.T) {
	for reason, want := range map[string]int{
		"two-stable": OK, "complete": OK,
		"errored": Error, "failed": Error, "no-such-reason": Error, "": Error,
		"handed-off": Human, "idle-timeout": Human, "human-push": Human, "all-conflicting": Human,
		"base-moved": Human, "pr-closed": Human, "blocked-no-independent-review": Human,
		"stopped-by-human": Human, "blocked": Human,
		"cap-exhausted": Bound, "limited": Bound,
		"convergence-failure": Convergence, "stalled": Convergence,
	} {
		if got := ForReason(reason); got != want {
			t.Errorf("ForReason(%q) = %d, want %d", reason, got, want)
		}
	}
	for code := OK; code <= Unreachable; code++ {
		if Meaning(code) == "" {
			t.Errorf("code %d has no meaning", code)
		}
		if table[code].code != code {
			t.Errorf("table row %d holds code %d", code, table[code].code)
		}
	}
	if Meaning(8) != "" {
		t.Error("code 8 is not in IF-1")
	}
}
