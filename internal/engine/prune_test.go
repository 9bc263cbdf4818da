package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/convergeloop/converge/internal/engine"
)

// TestPR_G6_ManagerPrunesAsEachLoopEnds: the Manager prunes the clone
// cache as each loop ends, before the loop is done: the run that just
// finished is not live, a loop still running is, a run left unfinished
// (drained, to resume) is, and a run the store never had is not.
func TestPR_G6_ManagerPrunesAsEachLoopEnds(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	var (
		mu    sync.Mutex
		asked []map[string]bool
		ids   = map[string]string{} // target → run, once known
	)
	prune := func(_ context.Context, live func(string) bool) {
		mu.Lock()
		defer mu.Unlock()
		got := map[string]bool{"never-a-run": live("never-a-run")}
		for target, id := range ids {
			got[target] = live(id)
		}
		asked = append(asked, got)
	}
	m := engine.NewManager(engine.Config{Store: f.db, Prune: prune})
	a, err := m.Add(ctx, f.spec("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Add(ctx, f.spec("b"))
	if err != nil {
		t.Fatal(err)
	}
	f.parked(m, "a", "b")
	mu.Lock()
	ids["a"], ids["b"] = a.Info().RunID, b.Info().RunID
	mu.Unlock()

	f.w.set(func() { f.w.open["a"] = true })
	m.Wake("a")
	if o := ended(t, a); o.Status != "open" {
		t.Fatalf("a ended %+v", o)
	}
	mu.Lock()
	if len(asked) != 1 {
		t.Fatalf("%d prunes when the first loop ended, want 1", len(asked))
	}
	if got := asked[0]; got["a"] || !got["b"] || got["never-a-run"] {
		t.Errorf("live at a's end: %v; want a's finished run not live, b's running one live, an unknown run not", got)
	}
	mu.Unlock()

	if err := m.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("%d prunes after both loops ended, want 2", len(asked))
	}
	if got := asked[1]; got["a"] || !got["b"] {
		t.Errorf("live at b's drain: %v; want b's unfinished run, which resumes, live", got)
	}
}
