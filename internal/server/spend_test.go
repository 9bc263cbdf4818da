package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// poll reserves a permit of b, runs a poll whose answers are charges,
// and settles it; it returns the permit's wait.
func poll(t *testing.T, b *Budget, charges ...forge.Charge) time.Duration {
	t.Helper()
	wait, _, charge := b.ReservePoll()
	ctx, done := charge(context.Background())
	for _, c := range charges {
		forge.Charged(ctx, c)
	}
	done()
	return wait
}

// TestPR_S2_PollBudgetInPointsChargesWhatThePollSpent: counted in forge
// points, a poll's permit is an estimate (before any poll, a whole
// read's), and what the poll spent as the forge said it takes its place:
// a probe answered 304 costs nothing (the permit comes back whole), a
// whole read what its answers said (rateLimit.cost, the probe's REST
// point). The estimate follows what polls spend, so an idle fleet's
// polls queue for next to nothing; a poll that spent more than the
// bucket held leaves it short, and the next poll waits until the
// budget's rate has paid for it. A permit given back (a wake came first)
// costs nothing and moves no estimate.
func TestPR_S2_PollBudgetInPointsChargesWhatThePollSpent(t *testing.T) {
	clock := newFakeClock()
	b, err := NewPointBudget(3600, 10, 4, clock) // a point a second, ten at once, a poll 4 until polls say
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	probe304 := forge.Charge{Resource: "core", NotModified: true}
	probe200 := forge.Charge{Resource: "core", Points: 1}
	read := func(cost int) forge.Charge { return forge.Charge{Resource: "graphql", Points: cost} }

	if wait, _, _ := b.ReservePoll(); wait != 0 || !near(b.Available(), 6) {
		t.Fatalf("the first poll's permit: wait %v, %v left; want the estimate 4 taken of 10", wait, b.Available())
	}
	b, _ = NewPointBudget(3600, 10, 4, clock)
	for i := range 5 {
		if wait := poll(t, b, probe304); wait != 0 {
			t.Fatalf("unchanged poll %d waited %v on a full budget", i, wait)
		}
	}
	if got := b.Available(); !near(got, 10) || b.Spent() != 0 {
		t.Fatalf("after five polls answered 304: %v available, %v spent; want 10 and 0", got, b.Spent())
	}
	_, cancel, _ := b.ReservePoll()
	if got := b.Available(); got < 9 {
		t.Fatalf("after five free polls a permit still takes %v points", 10-got)
	}
	cancel()
	if wait := poll(t, b, probe200, read(5)); wait != 0 {
		t.Fatalf("a changed poll waited %v", wait)
	}
	if got := b.Available(); !near(got, 4) || b.Spent() != 6 {
		t.Fatalf("after a whole read of 1+5 points: %v available, %v spent; want 4 and 6", got, b.Spent())
	}
	poll(t, b, probe200, read(9)) // 10 spent of 4: 6 short
	if got := b.Available(); got != 0 || b.Spent() != 16 {
		t.Fatalf("after an overdraw: %v available, %v spent", got, b.Spent())
	}
	wait, cancel, _ := b.ReservePoll()
	if wait <= 6*time.Second {
		t.Fatalf("a poll 6 points short waits %v: want the deficit and its estimate paid at a point a second", wait)
	}
	cancel()
	clock.Advance(time.Hour)
	if got := b.Available(); got != 10 {
		t.Fatalf("after an hour %v, want the burst 10", got)
	}
	if _, err := NewPointBudget(0, 0, 0, clock); err == nil {
		t.Error("a budget of 0 points an hour was accepted")
	}
	if d, _ := NewPointBudget(1800, 0, 0, clock); d.burst != 30 || d.estimate != DefaultPollEstimate {
		t.Errorf("defaults: burst %v, estimate %v; want a minute's 30 points, %d", d.burst, d.estimate, DefaultPollEstimate)
	}
}

// TestPR_O1_MetricsShowSpendPerInstallation: /metrics shows what each
// identity (an App installation, a token's user) spent on each rate
// limit as counters, and the limit as the forge last said it as gauges;
// the poll budget in points, and what polls were charged.
func TestPR_O1_MetricsShowSpendPerInstallation(t *testing.T) {
	clock := newFakeClock()
	budget, err := NewPointBudget(1800, 0, 0, clock)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, budget, forge.Charge{Resource: "core", Points: 1}, forge.Charge{Resource: "graphql", Points: 3})
	reset := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	const inst = "github.com/installation/50001"
	r := newRig(t, func(o *Options) {
		o.Budget = budget
		o.Stats = func() Stats {
			return Stats{Identities: []store.ForgeSpend{
				{Identity: inst, Resource: "graphql", Calls: 12, Points: 40, Estimated: 4, Limit: 12500, Remaining: 12460, ResetAt: reset, ReadAt: reset.Add(-time.Minute)},
				{Identity: inst, Resource: "core", Calls: 30, Points: 6, NotModified: 24, Limit: 12500, Remaining: 12494, ResetAt: reset, ReadAt: reset.Add(-time.Minute)},
				{Identity: "ghe.example.com/octocat", Resource: "graphql", Calls: 1, Points: 1, Estimated: 1},
			}}
		}
	})
	rec := r.do(t, "GET", "/metrics", "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, rec.Body)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		for _, m := range fams[name].GetMetric() {
			match := true
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					match = false
				}
			}
			if match && m.Gauge != nil {
				return m.GetGauge().GetValue(), true
			}
			if match && m.Counter != nil {
				return m.GetCounter().GetValue(), true
			}
		}
		return 0, false
	}
	g := map[string]string{"identity": inst, "resource": "graphql"}
	c := map[string]string{"identity": inst, "resource": "core"}
	other := map[string]string{"identity": "ghe.example.com/octocat", "resource": "graphql"}
	for _, ch := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"converge_forge_identity_points_total", g, 40},
		{"converge_forge_identity_estimated_points_total", g, 4},
		{"converge_forge_identity_calls_total", c, 30},
		{"converge_forge_identity_not_modified_total", c, 24},
		{"converge_forge_identity_rate_limit", g, 12500},
		{"converge_forge_identity_rate_limit_remaining", g, 12460},
		{"converge_forge_identity_rate_limit_reset_timestamp_seconds", c, float64(reset.Unix())},
		{"converge_forge_identity_points_total", other, 1},
		{"converge_poll_budget_available", nil, 26},
		{"converge_poll_budget_spent_total", nil, 4},
	} {
		if got, ok := value(ch.name, ch.labels); !ok || got != ch.want {
			t.Errorf("%s%v = %v (%v), want %v", ch.name, ch.labels, got, ok, ch.want)
		}
	}
	// No answer said the other identity's limit: no gauge for it.
	if _, ok := value("converge_forge_identity_rate_limit_remaining", other); ok {
		t.Error("a limit no answer said was reported")
	}
}
