package checkloop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeT(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLOOP_6_WorkspaceSnapshotsUndoesAndCommits: the git side of an
// iteration on a real repository. A snapshot identifies the work tree's
// content (untracked files too, ignored ones not) without touching the
// index; Changed lists what an iteration changed, deletions included;
// Undo puts everything back, removing new files and keeping ignored ones;
// Commit folds commits an agent made (even on another branch) into one
// commit with the ticket's trailer on the run's branch, once.
func TestLOOP_6_WorkspaceSnapshotsUndoesAndCommits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	writeT(t, dir, "calc.go", "package calc\n")
	writeT(t, dir, "calc_test.go", "package calc\n")
	writeT(t, dir, ".gitignore", "build/\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "init")
	w, err := OpenWorkspace(ctx, filepath.Join(dir))
	if err != nil {
		t.Fatal(err)
	}
	if w.Branch != "main" {
		t.Fatalf("branch %q", w.Branch)
	}
	base, tree0, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writeT(t, dir, "build/out.bin", "ignored")
	if _, again, _ := w.Snapshot(ctx); again != tree0 {
		t.Fatal("an ignored file changed the snapshot")
	}

	// An iteration: edits, adds, deletes, and commits on a branch of its own.
	writeT(t, dir, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	writeT(t, dir, "new.go", "package calc\n")
	if err := os.Remove(filepath.Join(dir, "calc_test.go")); err != nil {
		t.Fatal(err)
	}
	head, tree1, err := w.Snapshot(ctx)
	if err != nil || head != base || tree1 == tree0 {
		t.Fatalf("snapshot after edits: %s %s %v", head, tree1, err)
	}
	if st := gitT(t, dir, "diff", "--cached", "--name-only"); st != "" {
		t.Fatalf("the snapshot staged %q in the real index", st)
	}
	changed, err := w.Changed(ctx, tree0, tree1)
	if want := []string{"calc.go", "calc_test.go", "new.go"}; err != nil || !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed = %v, %v; want %v", changed, err, want)
	}

	// Undo: all of it, new files too; ignored files stay.
	if err := w.Undo(ctx, base); err != nil {
		t.Fatal(err)
	}
	if _, tree, _ := w.Snapshot(ctx); tree != tree0 {
		t.Fatal("undo left the tree changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.go")); err == nil {
		t.Fatal("undo left a new file")
	}
	if _, err := os.Stat(filepath.Join(dir, "build/out.bin")); err != nil {
		t.Fatal("undo removed an ignored file")
	}

	// An agent that commits on another branch: folded into one commit on main.
	gitT(t, dir, "checkout", "-q", "-b", "agent-work")
	writeT(t, dir, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	gitT(t, dir, "commit", "-qam", "agent commit")
	writeT(t, dir, "more.go", "package calc\n")
	_, tree2, _ := w.Snapshot(ctx)
	sha, err := w.Commit(ctx, "r1.iter.01", "converge loop: iter.01\n\nadded Add", base)
	if err != nil {
		t.Fatal(err)
	}
	if b := gitT(t, dir, "symbolic-ref", "--short", "HEAD"); b != "main" {
		t.Fatalf("HEAD is on %s, want main", b)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD~1"); got != base {
		t.Fatalf("the commit's parent is %s, want %s: the agent's commit was not folded in", got, base)
	}
	if got := gitT(t, dir, "log", "-1", "--format=%an%n%(trailers:key=Converge-Loop,valueonly)"); got != "converge\nr1.iter.01" {
		t.Fatalf("author and trailer %q", got)
	}
	if _, tree, _ := w.Snapshot(ctx); tree != tree2 {
		t.Fatal("the commit changed the work tree")
	}
	if st := gitT(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("not clean after the commit: %q", st)
	}
	again, err := w.Commit(ctx, "r1.iter.01", "converge loop: iter.01", base)
	if err != nil || again != sha {
		t.Fatalf("a repeated commit: %s, %v; want %s once", again, err, sha)
	}
}
