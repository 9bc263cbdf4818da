package prwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPR_G6_WaitingRunsShareOneCachedClone: two runs of one repository
// share one bare clone in the cache. While both wait they hold no
// worktree; the first to end leaves the clone to the other, which holds
// no worktree then but is registered, and whose next step makes its
// worktree from that same clone. PruneClones removes a clone once no run
// it is told of uses it, with the worktree of a run it is not told of.
func TestPR_G6_WaitingRunsShareOneCachedClone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pr, bare := localPR(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "a\nA\n"})
	root := t.TempDir()
	a, b := testWorkspace(t, bare, nil, ""), testWorkspace(t, bare, nil, "")
	a.Root, a.RunID, b.Root, b.RunID = root, "r-a", root, "r-b"
	for _, ws := range []*GitWorkspace{a, b} {
		if _, err := ws.Prepare(ctx, pr); err != nil {
			t.Fatal(err)
		}
		if err := ws.atHead(ctx, pr); err != nil {
			t.Fatal(err)
		}
	}
	clone := cloneDir(root, pr.Ref)
	if a.clone.Dir != clone || b.clone.Dir != clone {
		t.Fatalf("clones %s and %s, want both %s", a.clone.Dir, b.clone.Dir, clone)
	}
	if out, err := exec.Command("git", "-C", clone, "rev-parse", "--is-bare-repository").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Fatalf("the cached clone is not bare: %s %v", out, err)
	}
	if n := worktreesIn(ctx, clone); n != 2 {
		t.Fatalf("%d worktrees in the clone while both runs work, want 2", n)
	}
	before, err := os.Stat(clone)
	if err != nil {
		t.Fatal(err)
	}

	// Both wait.
	for _, ws := range []*GitWorkspace{a, b} {
		if err := ws.ReleaseWorktree(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(root, "worktrees")); len(left) != 0 || worktreesIn(ctx, clone) != 0 {
		t.Fatalf("waiting runs hold worktrees: %v, %d in the clone", left, worktreesIn(ctx, clone))
	}

	// The first ends while the other waits: the clone stays for it.
	if err := a.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if !hasClone(clone) {
		t.Fatal("the clone was removed while another run, waiting, is registered in it")
	}
	if err := b.atHead(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if now, err := os.Stat(clone); err != nil || !os.SameFile(before, now) {
		t.Fatalf("the waiting run's next step cloned again (%v)", err)
	}

	// A fleet that no longer has run r-b prunes its clone and worktree.
	removed, err := PruneClones(ctx, root, func(run string) bool { return run != "r-b" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, clone) || hasClone(clone) {
		t.Fatalf("pruned %v; want %s gone", removed, clone)
	}
	if left, _ := os.ReadDir(filepath.Join(root, "worktrees")); len(left) != 0 {
		t.Fatalf("the pruned run's worktree is left: %v", left)
	}
	// The run, had it gone on, ends cleanly on a pruned cache.
	if err := b.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
}
