package bench

import (
	"context"
	"testing"
)

// TestPR_O1_ConvergedPRCostsFewerRequestsThanTheBaseline drives the
// scripted scenario to a converged finish with converge's real PR loop
// and client, and with the baseline: both PRs end converged at the
// emulator (the ready label and a successful converge status on the
// head), and converge spent fewer requests, writes and primary points.
func TestPR_O1_ConvergedPRCostsFewerRequestsThanTheBaseline(t *testing.T) {
	r, err := convergedPR(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	for side, f := range map[string]string{"converge": r.ConvergeFinish, "baseline": r.BaselineFinish} {
		if !converged(f) {
			t.Errorf("%s did not end converged at the emulator: %s", side, f)
		}
	}
	if r.BaselinePolls < r.ConvergePolls {
		t.Errorf("the baseline polled %d times, converge %d: the baseline must poll at least as often", r.BaselinePolls, r.ConvergePolls)
	}
	c, b := r.Converge, r.Baseline
	if c.Total >= b.Total || c.Writes >= b.Writes || c.PrimaryPoints >= b.PrimaryPoints {
		t.Errorf("converge spent %+v per converged PR, the baseline %+v: want fewer requests, writes and primary points", c, b)
	}
}
