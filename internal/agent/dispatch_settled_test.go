package agent

import (
	"context"
	"strings"
	"testing"
)

// TestAG_T2_SettledEndsTheDispatch: a record the caller settles (a plan's
// task its implementer found too large, which it splits) ends the
// dispatch BLOCKED at once, with no more context asked for and no
// stronger model; another record not done goes on as before.
func TestAG_T2_SettledEndsTheDispatch(t *testing.T) {
	settled := func(rec StatusRecord) bool { return strings.HasPrefix(rec.Reason, "too large:") }
	asked := 0
	more := func(StatusRecord) string { asked++; return "more" }
	for _, tc := range []struct {
		name    string
		answers []StatusRecord
		runs    int
		asked   int
		reason  string
	}{
		{"settled: blocked ends at once", []StatusRecord{impl(ImplBlocked, "too large: two tasks"), impl(ImplDone, "")}, 1, 0, "too large: two tasks"},
		{"settled: needs context ends at once", []StatusRecord{impl(ImplNeedsContext, "too large: two tasks"), impl(ImplDone, "")}, 1, 0, "too large: two tasks"},
		{"not settled: needs context gets more context", []StatusRecord{impl(ImplNeedsContext, "which file?"), impl(ImplDone, "")}, 2, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = 0
			s := &scripted{answers: tc.answers}
			r := Runner{Agent: s, Settled: settled}
			d, err := r.Dispatch(context.Background(), fixTask, []string{"base", "strong"}, more)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.tasks) != tc.runs || asked != tc.asked || d.Reason != tc.reason {
				t.Errorf("runs %d asked %d reason %q (status %s); want %d %d %q", len(s.tasks), asked, d.Reason, d.Status, tc.runs, tc.asked, tc.reason)
			}
			if tc.reason != "" && (d.Status != ImplBlocked || len(d.Attempts) != 1) {
				t.Errorf("a settled dispatch = %+v", d)
			}
		})
	}
}
