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

// TestPR_G6_MayHaveWorktreesUnderFindsEveryRecordInTheDirectory: a record
// of a worktree inside the directory is found whether the worktree is
// live, gone, or gone and locked (what a killed run leaves, which only a
// sweep removes); records elsewhere are not; a record it cannot read is a
// yes; named through a symbolic link to its parent, the directory is
// still found.
func TestPR_G6_MayHaveWorktreesUnderFindsEveryRecordInTheDirectory(t *testing.T) {
	f := newFixture(t)
	common := filepath.Join(f.work.Dir, ".git")
	root := t.TempDir()
	mine, other := filepath.Join(root, "run.fixers"), filepath.Join(root, "other")
	check := func(state string, want bool) {
		t.Helper()
		if got := repo.MayHaveWorktreesUnder(common, mine); got != want {
			t.Fatalf("%s: MayHaveWorktreesUnder = %v, want %v", state, got, want)
		}
	}
	check("no worktree yet", false)
	git(t, f.work, "worktree", "add", "--quiet", "--detach", filepath.Join(other, "wt"), "HEAD")
	git(t, f.work, "worktree", "add", "--quiet", "--detach", mine+"-not-mine", "HEAD")
	check("worktrees elsewhere only", false)
	task := filepath.Join(mine, "task-1", "wt")
	git(t, f.work, "worktree", "add", "--quiet", "--detach", task, "HEAD")
	check("a live worktree inside", true)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if got := repo.MayHaveWorktreesUnder(common, filepath.Join(link, "run.fixers")); !got {
		t.Fatal("through a symbolic link to its parent: MayHaveWorktreesUnder = false")
	}
	git(t, f.work, "worktree", "lock", task)
	if err := os.RemoveAll(mine); err != nil {
		t.Fatal(err)
	}
	check("a locked worktree inside, its directory gone", true)
	git(t, f.work, "worktree", "unlock", task)
	check("the same, unlocked", true)
	git(t, f.work, "worktree", "prune")
	check("after the prune", false)

	records, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil || len(records) == 0 {
		t.Fatalf("worktree records: %v %v", records, err)
	}
	if err := os.WriteFile(filepath.Join(common, "worktrees", records[0].Name(), "gitdir"), []byte("relative/.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("a record it cannot place", true)
}
