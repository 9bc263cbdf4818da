package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/store"
)

// TestPR_G5_ClaimRunDrawsAgainOnATakenRunID: a new run whose random id
// another run of the day already has draws another id instead of being
// refused (at 10,000 runs a day two draws meet).
func TestPR_G5_ClaimRunDrawsAgainOnATakenRunID(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := []string{"r-20261202-aaaaaa", "r-20261202-aaaaaa", "r-20261202-bbbbbb"}
	defer func(f func(time.Time) string) { newRunID = f }(newRunID)
	newRunID = func(time.Time) string { id := ids[0]; ids = ids[1:]; return id }

	first, err := ClaimRun(ctx, db, "pr", "https://forge.test/o/r/pull/1", false, func(int) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	second, err := ClaimRun(ctx, db, "pr", "https://forge.test/o/r/pull/2", false, func(int) bool { return true })
	if err != nil {
		t.Fatalf("the second run was refused when its id was taken: %v", err)
	}
	if first.RunID != "r-20261202-aaaaaa" || second.RunID != "r-20261202-bbbbbb" {
		t.Fatalf("run ids %s and %s", first.RunID, second.RunID)
	}
}
