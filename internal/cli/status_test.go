package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/convergeloop/converge/internal/store"
)

// TestUX_2_StatusTellsAStoppedRunFromARunningOne: an unfinished run a live
// converge holds (its lock names this process) shows as running; one no
// process holds any more (killed, or left for a human) shows as stopped,
// "alive": false in JSON; a finished one shows its status and exit code.
func TestUX_2_StatusTellsAStoppedRunFromARunningOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r-20261201-aaaaaa", "r-20261201-bbbbbb", "r-20261201-cccccc"} {
		if err := db.CreateRun(ctx, store.Run{ID: id, Kind: "loop", Target: "loop:" + id}); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveState(ctx, id, []byte(`{}`), store.StatusRunning); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := db.AcquireLock(ctx, "loop:r-20261201-aaaaaa", "r-20261201-aaaaaa", os.Getpid()); err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if err := db.FinishRun(ctx, "r-20261201-cccccc", "complete", 0, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ios, out, errOut := testIO(nil)
	if code := Run(ctx, []string{"status", "--state", dir}, ios); code != 0 {
		t.Fatalf("status exit %d: %s", code, errOut)
	}
	for _, want := range []string{`r-20261201-aaaaaa\s+running\s+-`, `r-20261201-bbbbbb\s+stopped\s+-`, `r-20261201-cccccc\s+complete\s+0`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("status lacks %s:\n%s", want, out)
		}
	}
	ios, out, errOut = testIO(nil)
	if code := Run(ctx, []string{"status", "--state", dir, "--json"}, ios); code != 0 {
		t.Fatalf("status --json exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"id":"r-20261201-aaaaaa"[^}]*"alive":true`, `"id":"r-20261201-bbbbbb"[^}]*"alive":false`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("status --json lacks %s:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`"id":"r-20261201-cccccc"[^}]*"alive"`).MatchString(out.String()) {
		t.Errorf("a finished run has an alive field:\n%s", out)
	}
}
