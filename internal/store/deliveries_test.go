package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/store"
)

// TestSEC_4_DeliveryRecordedOnceAcrossRestart: a delivery id is first once;
// after the store is closed and opened again (a server restart) the same
// id is still refused.
func TestSEC_4_DeliveryRecordedOnceAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if first, err := s.RecordDelivery(ctx, "d-1", "pull_request"); err != nil || !first {
		t.Fatalf("first RecordDelivery = %v, %v; want true", first, err)
	}
	if first, err := s.RecordDelivery(ctx, "d-1", "pull_request"); err != nil || first {
		t.Fatalf("second RecordDelivery = %v, %v; want false", first, err)
	}
	s.Close()
	s = openT(t, path)
	if first, err := s.RecordDelivery(ctx, "d-1", "pull_request"); err != nil || first {
		t.Fatalf("RecordDelivery after reopen = %v, %v; want false", first, err)
	}
	if first, err := s.RecordDelivery(ctx, "d-2", "push"); err != nil || !first {
		t.Fatalf("RecordDelivery of a new id = %v, %v; want true", first, err)
	}
	if _, err := s.RecordDelivery(ctx, "", "push"); err == nil {
		t.Error("RecordDelivery accepted an empty id")
	}
}

func TestPruneDeliveries(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := openT(t, filepath.Join(t.TempDir(), "c.db"), store.WithClock(func() time.Time { return now }))
	if _, err := s.RecordDelivery(ctx, "old", "push"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(96 * time.Hour)
	if _, err := s.RecordDelivery(ctx, "new", "push"); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneDeliveries(ctx, 72*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("PruneDeliveries = %d, %v; want 1", n, err)
	}
	if first, _ := s.RecordDelivery(ctx, "new", "push"); first {
		t.Error("a recent id was pruned")
	}
}

func TestRepoWatches(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "c.db"))
	for _, w := range []store.RepoWatch{
		{Repo: "o/b", Label: "converge"},
		{Repo: "o/a", Authors: []string{"alice", "bob"}},
		{Repo: "o/b", Label: "ready", Authors: []string{"carol"}},
	} {
		if err := s.PutRepoWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRepoWatch(ctx, store.RepoWatch{Repo: "nope"}); err == nil {
		t.Error("PutRepoWatch accepted a repo without owner")
	}
	ws, err := s.RepoWatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Repo != "o/a" || !slices.Equal(ws[0].Authors, []string{"alice", "bob"}) ||
		ws[1].Repo != "o/b" || ws[1].Label != "ready" || !slices.Equal(ws[1].Authors, []string{"carol"}) {
		t.Errorf("RepoWatches = %+v", ws)
	}
}
