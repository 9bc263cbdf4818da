//go:build unix

package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc/proctest"
)

// TestAG_T1_BudgetOnAnInjectedClock: the time-box rule on a clock the
// test fires. An agent is never stopped before its budget however long it
// runs; at the budget it is told to summarize (SIGTERM): a record it
// prints then is its record, with the stop noted; one that prints nothing
// reads partial, budget-exceeded — never complete. An agent that ignores
// the cue is killed when the grace fires.
func TestAG_T1_BudgetOnAnInjectedClock(t *testing.T) {
	partial := `{"status":"partial","next_action":"finish the parser","needs_extension_minutes":4,"summary":"half done","files_changed":["p.go"]}`
	for _, tc := range []struct {
		name, body  string
		fireGrace   bool
		wantStatus  Status
		wantReason  string
		wantConcern string
	}{
		{"summarizes at the cue", `trap 'echo '"'"'` + partial + `'"'"'; exit 0' TERM; echo working; while :; do sleep 0.05; done`,
			false, StatusPartial, "", "stopped at the 5m0s budget"},
		{"says nothing at the cue", `trap 'exit 0' TERM; echo working; while :; do sleep 0.05; done`,
			false, StatusPartial, ReasonBudgetExceeded, ""},
		{"ignores the cue", `trap '' TERM; echo working; while :; do sleep 0.05; done`,
			true, StatusPartial, ReasonBudgetExceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := proctest.NewManualClock()
			type ran struct {
				r   CmdResult
				err error
			}
			out := make(chan ran, 1)
			go func() {
				r, err := RunWithBudget(context.Background(), Cmd{Argv: script(t, tc.body), Budget: 5 * time.Minute, Grace: time.Minute, Clock: clock})
				out <- ran{r, err}
			}()
			budget := clock.Next(t)
			select {
			case r := <-out:
				t.Fatalf("ended before its budget fired: %+v", r)
			case <-time.After(200 * time.Millisecond):
			}
			budget.Fire()
			grace := clock.Next(t)
			if tc.fireGrace {
				select {
				case r := <-out:
					t.Fatalf("an agent deaf to the cue ended before the grace: %+v", r)
				case <-time.After(200 * time.Millisecond):
				}
				grace.Fire()
			}
			var got ran
			select {
			case got = <-out:
			case <-time.After(10 * time.Second):
				t.Fatal("not stopped")
			}
			rec := got.r.Record
			if got.err != nil || !got.r.TimedOut || rec.Status != tc.wantStatus || rec.Reason != tc.wantReason {
				t.Fatalf("record %+v (timed out %v, err %v); want %s, reason %q", rec, got.r.TimedOut, got.err, tc.wantStatus, tc.wantReason)
			}
			if tc.wantConcern != "" && !strings.Contains(strings.Join(rec.Concerns, "|"), tc.wantConcern) {
				t.Fatalf("concerns %q, want %q", rec.Concerns, tc.wantConcern)
			}
			if tc.wantReason == "" {
				// The summary's own request is what the extension rule reads.
				if next, ok := (Task{}).Extended(rec); !ok || next.Budget != 4*time.Minute {
					t.Fatalf("the summarized partial earns %v, %v; want a 4m extension", next.Budget, ok)
				}
			}
		})
	}
}
