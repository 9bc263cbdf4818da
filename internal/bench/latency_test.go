package bench

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPR_S2_WebhookToDecisionLatency runs the small scale of the
// webhook-to-decision figure: every CI change the emulator delivered as a
// signed webhook was accepted by the server and covered by a decision of
// its PR's loop on an observation begun after it arrived, and the
// percentiles of each run are ordered.
func TestPR_S2_WebhookToDecisionLatency(t *testing.T) {
	l, err := latency(context.Background(), openStore, t.TempDir(), Small)
	if err != nil {
		t.Fatal(err)
	}
	sh := shapeOf(Small)
	if len(l.Runs) != sh.runs {
		t.Fatalf("%d runs, want %d", len(l.Runs), sh.runs)
	}
	for i, r := range l.Runs {
		t.Logf("run %d: %+v", i+1, r)
		if r.Sent == 0 || r.Events != r.Sent {
			t.Errorf("run %d: the server accepted %d of %d deliveries", i+1, r.Events, r.Sent)
		}
		if r.Decisions == 0 || r.Uncovered != 0 {
			t.Errorf("run %d: %d decisions, %d of %d deliveries covered by none", i+1, r.Decisions, r.Uncovered, r.Events)
		}
		if !(0 < r.P50 && r.P50 <= r.P95 && r.P95 <= r.P99 && r.P99 <= r.Max) {
			t.Errorf("run %d: percentiles out of order: p50 %.1f, p95 %.1f, p99 %.1f, max %.1f ms", i+1, r.P50, r.P95, r.P99, r.Max)
		}
	}
	if s := l.Spread.P99; s.Min > s.Max || s.Min <= 0 {
		t.Errorf("p99 spread %+v", s)
	}
}

// TestPR_S2_LatencyCoversWithObservationsBegunAfterArrival: a delivery
// is covered by the first decision on an observation its loop began after
// the delivery arrived, not by one already under way that returned later,
// and a delivery no such decision follows is counted uncovered.
func TestPR_S2_LatencyCoversWithObservationsBegunAfterArrival(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	f := &fleet{steps: map[string][]step{
		"a": {{observed: at(5), decided: at(20)}, {observed: at(25), decided: at(40)}},
		"b": {{observed: at(0), decided: at(3)}},
	}}
	f.arrivals = []arrival{{at: at(10), target: "a"}, {at: at(25), target: "a"}, {at: at(1), target: "b"}}
	lat, uncovered, decisions := f.figures(at(0))
	if want := []time.Duration{30 * time.Millisecond, 15 * time.Millisecond}; !slices.Equal(lat, want) {
		t.Errorf("latencies %v, want %v: the step observing from 5 ms began before the delivery at 10 ms", lat, want)
	}
	if uncovered != 1 || decisions != 3 {
		t.Errorf("uncovered %d, decisions %d; want 1 and 3", uncovered, decisions)
	}
}
