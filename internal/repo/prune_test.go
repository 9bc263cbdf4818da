package repo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

// TestPR_G6_MayPruneWorktreesAnswersAsGit: MayPruneWorktrees says no
// only where git's own `worktree prune --dry-run` would prune nothing, in
// every state a run's clone passes through (no record; live worktrees; a
// worktree whose directory a killed run left gone; a locked one gone; a
// broken record), so skipping the prune never keeps a stale record that
// would make the next `worktree add` at that path fail.
func TestPR_G6_MayPruneWorktreesAnswersAsGit(t *testing.T) {
	f := newFixture(t)
	common := filepath.Join(f.work.Dir, ".git")
	wts := t.TempDir()
	check := func(state string, want bool) {
		t.Helper()
		// git says what it would prune on stderr.
		cmd := exec.Command("git", "worktree", "prune", "--dry-run", "--verbose")
		cmd.Dir, cmd.Env = f.work.Dir, append(os.Environ(), f.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git worktree prune --dry-run: %v: %s", err, out)
		}
		wouldPrune := len(out) > 0
		if wouldPrune != want {
			t.Fatalf("%s: git would prune: %v, the test expected %v", state, wouldPrune, want)
		}
		if got := repo.MayPruneWorktrees(common); got != want {
			t.Fatalf("%s: MayPruneWorktrees = %v, git would prune: %v", state, got, wouldPrune)
		}
	}

	check("no worktree yet", false)
	a, b := filepath.Join(wts, "a"), filepath.Join(wts, "b")
	git(t, f.work, "worktree", "add", "--quiet", "--detach", a, "HEAD")
	git(t, f.work, "worktree", "add", "--quiet", "--detach", b, "HEAD")
	check("two live worktrees", false)

	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	check("a worktree whose directory is gone", true)
	git(t, f.work, "worktree", "prune")
	check("after the prune", false)

	git(t, f.work, "worktree", "lock", b)
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	check("a locked worktree whose directory is gone", false)
	git(t, f.work, "worktree", "unlock", b)
	check("the same, unlocked", true)
	git(t, f.work, "worktree", "prune")
	check("after the second prune", false)

	c := filepath.Join(wts, "c")
	git(t, f.work, "worktree", "add", "--quiet", "--detach", c, "HEAD")
	records, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil || len(records) != 1 {
		t.Fatalf("worktree records: %v %v", records, err)
	}
	if err := os.Remove(filepath.Join(common, "worktrees", records[0].Name(), "gitdir")); err != nil {
		t.Fatal(err)
	}
	check("a record without its gitdir file", true)
}
