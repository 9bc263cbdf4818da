package plan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

// repoWithCommit is a repository whose first commit holds README.
func repoWithCommit(t *testing.T) (*GitWorkspace, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := (&repo.Git{Dir: dir}).Run(ctx, "init", "-q", "-b", "main"); err != nil {
		t.Skipf("git: %v", err)
	}
	put(t, dir, "README", "v1\n")
	ws, err := OpenWorkspace(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ws.Commit(ctx, "init", "init", nil)
	if err != nil {
		t.Fatal(err)
	}
	return ws, base
}

func put(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// TestAG_P1_UnwindKeepsOtherTasksWork: a blocked task's commits come off
// the branch whether or not another task committed on top: back to its
// base when it is HEAD, else its files restored in a new commit, the
// other task's work standing; its work stays at the ref either way.
func TestAG_P1_UnwindKeepsOtherTasksWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, base := repoWithCommit(t)
	dir := ws.Dir()

	put(t, dir, "README", "v2 by a\n")
	put(t, dir, "a.txt", "a\n")
	aHead, err := ws.Commit(ctx, TaskRef("r1", "a"), "task a", nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, dir, "b.txt", "b\n")
	bHead, err := ws.Commit(ctx, TaskRef("r1", "b"), "task b", nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := "refs/converge/plan/r1/a"
	for range 2 { // the second time changes nothing: an unwind may repeat
		how, err := ws.Unwind(ctx, base, aHead, []string{"README", "a.txt"}, ref, TaskRef("r1", "a"), "take a off")
		if err != nil || !strings.Contains(how, "restored") {
			t.Fatalf("unwind: %q, %v", how, err)
		}
	}
	if s, _ := read(t, dir, "README"); s != "v1\n" {
		t.Errorf("README = %q, want it back at the base", s)
	}
	if _, ok := read(t, dir, "a.txt"); ok {
		t.Error("a.txt, new in the blocked task, is still there")
	}
	if s, _ := read(t, dir, "b.txt"); s != "b\n" {
		t.Errorf("b.txt = %q: the other task's work is gone", s)
	}
	parent, _ := ws.Git.RevParse(ctx, "HEAD~1")
	if parent != bHead {
		t.Errorf("the restore is not one commit on top of b (HEAD~1 = %s, b = %s)", parent, bHead)
	}
	if kept, _ := ws.Git.RevParse(ctx, ref); kept != aHead {
		t.Errorf("%s = %s, want a's head %s", ref, kept, aHead)
	}
	if dirty, _ := ws.Git.IsDirty(ctx); dirty {
		t.Error("the tree is dirty after the unwind")
	}

	// A blocked task at HEAD: the branch goes back to its base.
	head, _ := ws.Head(ctx)
	put(t, dir, "c.txt", "c\n")
	cHead, err := ws.Commit(ctx, TaskRef("r1", "c"), "task c", nil)
	if err != nil {
		t.Fatal(err)
	}
	if how, err := ws.Unwind(ctx, head, cHead, []string{"c.txt"}, "refs/converge/plan/r1/c", TaskRef("r1", "c"), "take c off"); err != nil || !strings.Contains(how, "back at") {
		t.Fatalf("unwind: %q, %v", how, err)
	}
	if now, _ := ws.Head(ctx); now != head {
		t.Errorf("HEAD = %s, want %s", now, head)
	}

	// A blocked task at HEAD with another task's commit in between (its
	// fix came after): the other's work is not reset away.
	put(t, dir, "d.txt", "d\n")
	dFirst, err := ws.Commit(ctx, TaskRef("r1", "d"), "task d", nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, dir, "e.txt", "e\n")
	if _, err := ws.Commit(ctx, TaskRef("r1", "e"), "task e", nil); err != nil {
		t.Fatal(err)
	}
	put(t, dir, "d.txt", "d fixed\n")
	dFix, err := ws.Commit(ctx, TaskRef("r1", "d"), "task d fix", nil)
	if err != nil {
		t.Fatal(err)
	}
	if how, err := ws.Unwind(ctx, head, dFix, []string{"d.txt"}, "refs/converge/plan/r1/d", TaskRef("r1", "d"), "take d off"); err != nil || !strings.Contains(how, "restored") {
		t.Fatalf("unwind: %q, %v (d's first commit %s)", how, err, dFirst)
	}
	if _, ok := read(t, dir, "d.txt"); ok {
		t.Error("d.txt is still there")
	}
	if s, _ := read(t, dir, "e.txt"); s != "e\n" {
		t.Errorf("e.txt = %q: the task committed in between was reset away", s)
	}
}

// TestAG_P1_CommitLeavesOtherTasksFilesOut: a task's commit excludes the
// files of the tasks combined after it, and its diff can be limited to
// its own paths.
func TestAG_P1_CommitLeavesOtherTasksFilesOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, base := repoWithCommit(t)
	dir := ws.Dir()
	put(t, dir, "a.txt", "a\n")
	put(t, dir, "b.txt", "b\n")
	aHead, err := ws.Commit(ctx, TaskRef("r1", "a"), "task a", []string{"b.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ws.Changed(ctx, base, aHead); !slices.Equal(got, []string{"a.txt"}) {
		t.Errorf("a's commit changed %v, want a.txt only", got)
	}
	bHead, err := ws.Commit(ctx, TaskRef("r1", "b"), "task b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ws.Changed(ctx, aHead, bHead); !slices.Equal(got, []string{"b.txt"}) {
		t.Errorf("b's commit changed %v, want b.txt", got)
	}
	d, err := ws.Diff(ctx, base, bHead, []string{"b.txt"})
	if err != nil || !strings.Contains(d, "+b") || strings.Contains(d, "a.txt") {
		t.Errorf("b's diff limited to its path = %q, %v", d, err)
	}
	if out, _ := ws.Git.Run(ctx, "log", "-1", "--format=%(trailers:key="+TrailerKey+",valueonly)"); strings.TrimSpace(out) != TaskRef("r1", "b") {
		t.Errorf("trailer = %q", out)
	}
}

// TestPLAN_1_TaskCommit: a task's commit is known by its trailer only
// (another task's commit, or a commit without a parent to go back to, is
// not), at HEAD or, searched from a commit, below commits made on top.
func TestPLAN_1_TaskCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, base := repoWithCommit(t)
	if _, ok, err := ws.TaskCommit(ctx, "init", ""); err != nil || ok {
		t.Errorf("root commit: ok %v, err %v; want no parent to go back to", ok, err)
	}
	put(t, ws.Dir(), "a.txt", "a\n")
	aHead, err := ws.Commit(ctx, TaskRef("r1", "a"), "task a\n\nwrote a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok, err := ws.TaskCommit(ctx, TaskRef("r1", "a"), ""); err != nil || !ok || tc != (TaskCommit{SHA: aHead, Parent: base}) {
		t.Errorf("a at HEAD: %+v %v %v; want %s on %s", tc, ok, err, aHead, base)
	}
	for _, ref := range []string{TaskRef("r1", "b"), TaskRef("r1", "a2"), TaskRef("r2", "a")} {
		if _, ok, err := ws.TaskCommit(ctx, ref, base); err != nil || ok {
			t.Errorf("%s: ok %v, err %v", ref, ok, err)
		}
	}
	put(t, ws.Dir(), "h.txt", "h\n")
	if _, err := ws.Git.Run(ctx, "add", "h.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Git.Run(ctx, "-c", "user.name=h", "-c", "user.email=h@example.com", "commit", "-qm", "a human's commit"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ws.TaskCommit(ctx, TaskRef("r1", "a"), ""); err != nil || ok {
		t.Errorf("HEAD alone, a below it: ok %v, err %v", ok, err)
	}
	if tc, ok, err := ws.TaskCommit(ctx, TaskRef("r1", "a"), base); err != nil || !ok || tc != (TaskCommit{SHA: aHead, Parent: base, Above: 1}) {
		t.Errorf("a below a human's commit: %+v %v %v; want %s on %s, 1 above", tc, ok, err, aHead, base)
	}
	if _, ok, err := ws.TaskCommit(ctx, TaskRef("r1", "a"), aHead); err != nil || ok {
		t.Errorf("searched from a itself: ok %v, err %v", ok, err)
	}
}
