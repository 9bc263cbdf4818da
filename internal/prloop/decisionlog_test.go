package prloop

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/store"
)

// TestPR_M5_DecisionLogShowsTheRecaps: each recap gate held, its verdict
// and the rounds it reverted are in the log.
func TestPR_M5_DecisionLogShowsTheRecaps(t *testing.T) {
	s := started("h1")
	s.Recaps = []RecapRecord{
		{Count: 10, Verdict: recap.Verdict{Decision: recap.RevertAndShip, RevertRounds: []int{3, 7}, Reason: "rounds 3 and 7 drifted", Valid: true}, Reverted: "abcdef1234567890"},
		{Count: 20, Verdict: recap.Verdict{Decision: recap.HandOff, Reason: "no usable recap verdict: no answer", Why: "no answer"}},
	}
	raw, _ := json.Marshal(s)
	var b bytes.Buffer
	if err := WriteDecisionLog(&b, RunRecord{Run: store.Run{ID: "r-1", Kind: "pr", State: raw}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Recaps", "after 10 rounds: **REVERT-AND-SHIP**: rounds 3 and 7 drifted", "reverted rounds 3, 7 in `abcdef123456`", "after 20 rounds: **HAND-OFF** (no usable verdict: no answer)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, b.String())
		}
	}
}
