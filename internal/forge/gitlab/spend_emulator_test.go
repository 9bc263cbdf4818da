package gitlab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestPR_O1_GitLabSpendIsWhatGitLabSaid: on GitLab every request is one
// on the token's limit; an observation's spend counts each, and the
// limit, what is used and left of it and its reset come from GitLab's
// RateLimit-* headers; a meter on the context is told the writes too.
// The identity is the token's user, never the token.
func TestPR_O1_GitLabSpendIsWhatGitLabSaid(t *testing.T) {
	lab := labtest.Start(t, 20*time.Millisecond)
	h := labHarness(t, lab, "acme/widgets/spend")
	c := h.Forge
	ref := h.Fixture.(*labFixture).ref
	ctx := context.Background()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	sp := pr.Spend
	if sp.Calls != pr.Requests || sp.Points != pr.Requests || sp.Estimated != 0 || sp.NotModified != 0 {
		t.Fatalf("spend %+v of an observation of %d requests: want a point a request", sp, pr.Requests)
	}
	if sp.Resource != "api" || sp.Budget.Limit != 2000 || sp.Budget.Used < 1 || sp.Budget.Remaining != sp.Budget.Limit-sp.Budget.Used || sp.Budget.ResetAt.IsZero() {
		t.Fatalf("budget %s %+v: want GitLab's RateLimit-* headers read", sp.Resource, sp.Budget)
	}

	tally := &forge.Tally{}
	if err := c.AddLabels(forge.WithMeter(ctx, tally), ref, "ready"); err != nil {
		t.Fatal(err)
	}
	if got := tally.Spend(); got.Calls < 1 || got.Points != got.Calls {
		t.Fatalf("a label's spend %+v", got)
	}

	id, err := c.(forge.Identifier).RateIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(id, "/"+fakelab.UserAuthor) || strings.Contains(id, lab.Tokens().Author) {
		t.Fatalf("identity %q: want HOST/%s, never the token", id, fakelab.UserAuthor)
	}
}

// BenchmarkForgeSpendGitLabQuietPoll: what a poll of a merge request
// nothing changed on costs on GitLab, read from GitLab's answers as
// converge reads them (a request a point: GitLab's limits count
// requests). BENCHMARKS.md's GitLab figures:
//
//	go test ./internal/forge/gitlab -run '^$' -bench ForgeSpendGitLab -benchtime 20x
func BenchmarkForgeSpendGitLabQuietPoll(b *testing.B) {
	lab := labtest.Start(b, 20*time.Millisecond)
	h := labHarness(b, lab, "acme/widgets/quiet")
	c := h.Forge
	ref := h.Fixture.(*labFixture).ref
	ctx := context.Background()
	if _, err := c.Observe(forge.WithProbe(ctx), ref); err != nil {
		b.Fatal(err)
	}
	tally := &forge.Tally{}
	mctx := forge.WithMeter(forge.WithProbe(ctx), tally)
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Observe(mctx, ref); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	s, n := tally.Spend(), float64(b.N)
	b.ReportMetric(float64(s.Points)/n, "pts/op")
	b.ReportMetric(float64(s.Calls)/n, "calls/op")
	b.ReportMetric(float64(s.NotModified)/n, "304s/op")
}
