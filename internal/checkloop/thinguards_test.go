package checkloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/census"
)

// TestLOOP_8_EveryConfirmingRerunIsHeldToTheCensus: a pass counts only
// once `confirm` runs in a row passed on one tree, and every one of those
// runs is held to the baseline's test census, not only the first. A check
// whose rerun passes while a test no longer runs in it (a test that skips
// once its first run left a file behind, a runner that answers a rerun
// from its cache without running the tests) has not kept its tests on
// that run: the pass is UNVERIFIED — undone, never committed, never
// complete.
func TestLOOP_8_EveryConfirmingRerunIsHeldToTheCensus(t *testing.T) {
	start := map[string]string{"calc.TestAdd": "f", "calc.TestMul": "f"}
	fixed := map[string]string{"calc.TestAdd": "p", "calc.TestMul": "p"}
	for _, tc := range []struct {
		name  string
		rerun map[string]string // the census of every rerun of a pass
		lost  string
	}{
		{"a test skips on the rerun", map[string]string{"calc.TestAdd": "p", "calc.TestMul": "s"}, "calc.TestMul"},
		{"no test runs on the rerun", map[string]string{}, "no test ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, mechanical())
			fixOnePerIteration(s, 1)
			check := s.check
			var key string // the run the census below is of: act asks the check, then its census
			s.check = func(k, tree string) (bool, string, *Verdict) {
				key = k
				return check(k, tree)
			}
			s.tests = func(tree string) census.Census {
				switch {
				case tree == "t0":
					return goCensus(start)
				case strings.Contains(key, "#"): // a confirming rerun (rerunKey)
					return goCensus(tc.rerun)
				}
				return goCensus(fixed)
			}
			term := s.run()
			if term.Status == StatusComplete {
				t.Fatalf("complete on a pass whose rerun lost tests: %+v", term)
			}
			it := s.st.Iterations[0]
			if it.Outcome != OutcomeUnverified || it.Commit != "" || it.Progress || !strings.Contains(it.TestsLost, tc.lost) {
				t.Fatalf("iteration %+v; want UNVERIFIED, not committed, losing %q", it, tc.lost)
			}
			if got := s.kinds(); strings.Contains(got, "commit") || !strings.HasPrefix(got, "check iterate check check undo check") {
				t.Fatalf("actions %q: want the pass and its rerun, then undone and checked again, no commit", got)
			}
		})
	}
}
