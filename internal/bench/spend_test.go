package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/github"
)

// What one PR costs one installation, measured against the emulator (its
// GitHub arithmetic, points.go) and read as converge reads it: from the
// answers' rateLimit and x-ratelimit-* (forge.Charge). BENCHMARKS.md's
// formula for how many PRs one installation sustains takes these figures:
//
//	go test ./internal/bench -run '^$' -bench ForgeSpend -benchtime 20x

// spendFigures reports a spend as per-op metrics: GraphQL points, REST
// (core) points, calls, 304s, points no answer said, and GitHub's
// secondary figures counted at the emulator (content-creating requests:
// every write request; secondary points).
func spendFigures(b *testing.B, s forge.Spend, gql, core int, c fakehub.Counts, ops int) {
	n := float64(ops)
	b.ReportMetric(float64(gql)/n, "gql-pts/op")
	b.ReportMetric(float64(core)/n, "rest-pts/op")
	b.ReportMetric(float64(s.Calls)/n, "calls/op")
	b.ReportMetric(float64(s.NotModified)/n, "304s/op")
	b.ReportMetric(float64(s.Estimated)/n, "est-pts/op")
	b.ReportMetric(float64(c.Writes())/n, "writes/op")
	b.ReportMetric(float64(c.SecondaryPoints)/n, "2nd-pts/op")
}

// byResource is a Meter that sums points per rate limit.
type byResource struct {
	forge.Tally
	gql, core int
}

func (m *byResource) Charge(c forge.Charge) {
	m.Tally.Charge(c)
	switch c.Resource {
	case "graphql":
		m.gql += c.Points
	default:
		m.core += c.Points
	}
}

// idleWorld is a world whose PR's CI finished and whose probe holds its
// ETags: the next poll of the unchanged PR is one 304.
func idleWorld(b *testing.B) (*world, context.Context) {
	ctx := b.Context()
	w, err := newWorld(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.close)
	if err := w.ciSettled(ctx); err != nil {
		b.Fatal(err)
	}
	w.hub.AdvanceClock(time.Minute)
	pctx := forge.WithProbe(ctx)
	for range 2 {
		if _, err := w.client.Observe(pctx, w.ref); err != nil {
			b.Fatal(err)
		}
	}
	return w, pctx
}

// BenchmarkForgeSpend_QuietPoll: a poll of a PR nothing changed on (a
// quiet repository between webhooks, or a loop waiting for a review): the
// change probe's conditional GET, answered 304.
func BenchmarkForgeSpend_QuietPoll(b *testing.B) {
	w, pctx := idleWorld(b)
	m := &byResource{}
	ctx := forge.WithMeter(pctx, m)
	before := w.hub.CountsFor(fakehub.LoginAuthor)
	b.ResetTimer()
	for range b.N {
		pr, err := w.client.Observe(ctx, w.ref)
		if err != nil || !pr.Unchanged {
			b.Fatalf("a quiet poll read whole (%v)", err)
		}
	}
	b.StopTimer()
	spendFigures(b, m.Spend(), m.gql, m.core, w.hub.CountsFor(fakehub.LoginAuthor).Sub(before), b.N)
}

// BenchmarkForgeSpend_BusyPoll: a poll of a PR that changed since the last
// (a busy repository: a review, a comment, a label, a push): the probe
// answered 200, then the one GraphQL read of the whole PR. The change is
// made by the reviewer's token, not counted.
func BenchmarkForgeSpend_BusyPoll(b *testing.B) {
	w, pctx := idleWorld(b)
	rev, err := github.New(github.Options{APIURL: w.hub.APIURL(), Token: w.hub.Tokens().Reviewer, HTTPClient: w.hub.HTTPClient()})
	if err != nil {
		b.Fatal(err)
	}
	m := &byResource{}
	ctx := forge.WithMeter(pctx, m)
	var counts fakehub.Counts
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if err := rev.AddLabels(b.Context(), w.ref, fmt.Sprintf("l%d", i)); err != nil {
			b.Fatal(err)
		}
		w.hub.AdvanceClock(3 * time.Second)
		before := w.hub.CountsFor(fakehub.LoginAuthor)
		b.StartTimer()
		pr, err := w.client.Observe(ctx, w.ref)
		if err != nil || pr.Unchanged {
			b.Fatalf("a busy poll did not read whole (%v)", err)
		}
		b.StopTimer()
		c := w.hub.CountsFor(fakehub.LoginAuthor).Sub(before)
		counts = addCounts(counts, c)
		b.StartTimer()
	}
	b.StopTimer()
	spendFigures(b, m.Spend(), m.gql, m.core, counts, b.N)
}

// addCounts is a plus d (Counts has Sub alone outside its package).
func addCounts(a, d fakehub.Counts) fakehub.Counts {
	var zero fakehub.Counts
	return a.Sub(zero.Sub(d))
}

// TestPR_O1_ConvergedPRSpendIsWhatTheEmulatorCharged: every call of a PR
// driven to a converged finish is metered at what the forge said it
// cost, and the sum is, to the point and the call, what the emulator
// charged by GitHub's arithmetic; only the mutations' points, which no
// answer can say, are estimated, at GitHub's least.
func TestPR_O1_ConvergedPRSpendIsWhatTheEmulatorCharged(t *testing.T) {
	w, err := newScenarioWorld(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	m := &byResource{}
	c, _, err := w.runConverge(forge.WithMeter(t.Context(), m))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Spend()
	if s.Points != c.PrimaryPoints() || s.Calls != c.Requests() || m.gql != c.GraphQLPoints || m.core != c.RESTPoints || s.NotModified != c.NotModified {
		t.Fatalf("metered %+v (graphql %d, core %d); the emulator charged %+v", s, m.gql, m.core, c)
	}
	if s.Estimated > c.GraphQLMutation {
		t.Fatalf("%d points estimated for %d mutation requests", s.Estimated, c.GraphQLMutation)
	}
}

// BenchmarkForgeSpend_ConvergedPR: one PR from its start to a converged
// finish (convergedScenario: 3 Copilot reviews, 2 fix rounds, 4 threads
// answered and resolved, CI green, the ready label and the verdict) by
// converge's real PR loop, woken by the emulator's events as by webhooks.
// Every call of the run is metered, Viewer included; the metered points
// must be what the emulator charged.
func BenchmarkForgeSpend_ConvergedPR(b *testing.B) {
	var total forge.Spend
	var gql, core, polls int
	var counts fakehub.Counts
	for range b.N {
		b.StopTimer()
		w, err := newScenarioWorld(b.Context(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		m := &byResource{}
		b.StartTimer()
		c, n, err := w.runConverge(forge.WithMeter(b.Context(), m))
		b.StopTimer()
		w.close()
		if err != nil {
			b.Fatal(err)
		}
		s := m.Spend()
		if s.Points != c.PrimaryPoints() || s.Calls != c.Requests() {
			b.Fatalf("metered %+v; the emulator charged %+v", s, c)
		}
		total.Calls += s.Calls
		total.Points += s.Points
		total.Estimated += s.Estimated
		total.NotModified += s.NotModified
		gql, core, polls = gql+m.gql, core+m.core, polls+n
		counts = addCounts(counts, c)
		b.StartTimer()
	}
	b.StopTimer()
	spendFigures(b, total, gql, core, counts, b.N)
	b.ReportMetric(float64(counts.Mutations)/float64(b.N), "mutations/op")
	b.ReportMetric(float64(polls)/float64(b.N), "observations/op")
}
