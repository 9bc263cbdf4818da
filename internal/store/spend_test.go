package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// TestUX_2_ForgeSpendKeptPerRunAndIdentity: each answered call is added
// as it is made to its run's spend and its identity's, by rate limit:
// calls, points (estimated apart), 304s; the limit is the newest
// answer's, an older answer arriving late does not move it back. The
// identity's spend spans runs; a run's is its own.
func TestUX_2_ForgeSpendKeptPerRunAndIdentity(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "s.db"))
	newRun(t, s, "r-1", "pr1")
	newRun(t, s, "r-2", "pr2")
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	reset := t0.Add(time.Hour)
	gql := func(points, remaining int, at time.Time, est bool) forge.Charge {
		return forge.Charge{Resource: "graphql", Points: points, Estimated: est, At: at,
			Budget: forge.RateBudget{Limit: 5000, Used: 5000 - remaining, Remaining: remaining, ResetAt: reset}}
	}
	const me = "github.com/converge-bot"
	for _, c := range []struct {
		run string
		c   forge.Charge
	}{
		{"r-1", gql(3, 4997, t0, false)},
		{"r-1", gql(1, 4995, t0.Add(2*time.Second), true)},
		{"r-1", gql(3, 4996, t0.Add(time.Second), false)}, // late: an older answer
		{"r-1", forge.Charge{Resource: "core", NotModified: true, At: t0, Budget: forge.RateBudget{Limit: 5000, Remaining: 4990, ResetAt: reset}}},
		{"r-2", gql(2, 4993, t0.Add(3*time.Second), false)},
	} {
		if err := s.AddForgeSpend(ctx, c.run, me, c.c); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.RunForgeSpend(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	r1 := runs["r-1"]
	if len(runs) != 1 || len(r1) != 2 {
		t.Fatalf("r-1's spend: %+v", runs)
	}
	core, g := r1[0], r1[1]
	if core.Resource != "core" || core.Calls != 1 || core.Points != 0 || core.NotModified != 1 || core.Remaining != 4990 {
		t.Errorf("r-1 core: %+v", core)
	}
	if g.Resource != "graphql" || g.Calls != 3 || g.Points != 7 || g.Estimated != 1 || g.Remaining != 4995 ||
		!g.ReadAt.Equal(t0.Add(2*time.Second)) || !g.ResetAt.Equal(reset) || g.Identity != me {
		t.Errorf("r-1 graphql: %+v; want 3 calls, 7 points (1 estimated), 4995 left as the newest answer said", g)
	}
	ids, err := s.IdentityForgeSpend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[1].Resource != "graphql" || ids[1].Calls != 4 || ids[1].Points != 9 || ids[1].Remaining != 4993 || ids[1].RunID != "" {
		t.Errorf("the identity's spend: %+v; want both runs' graphql calls, the newest limit", ids)
	}
}

// TestSEC_3_ForgeSpendNeverHoldsASecret: an identity or resource that
// holds a secret by mistake is redacted before the store.
func TestSEC_3_ForgeSpendNeverHoldsASecret(t *testing.T) {
	const secret = "ghp_s3cretT0kenValue1234567890abcdefABCD"
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s := openT(t, path, store.WithSecrets(secret))
	newRun(t, s, "r-1", "pr1")
	if err := s.AddForgeSpend(ctx, "r-1", "github.com/"+secret, forge.Charge{Resource: "graphql", Points: 1}); err != nil {
		t.Fatal(err)
	}
	ids, err := s.IdentityForgeSpend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ids {
		if strings.Contains(f.Identity, secret) {
			t.Fatalf("stored identity %q holds the secret", f.Identity)
		}
	}
}
