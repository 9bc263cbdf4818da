package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/repo"
)

var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}

// newRepo makes a repository with files committed on main and returns it
// as the target worktree, with its base commit.
func newRepo(t *testing.T, files map[string]string) (*repo.Git, string) {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		write(t, dir, name, content)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	return &repo.Git{Dir: dir, Env: gitEnv}, git(t, dir, "rev-parse", "HEAD")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func appendLine(dir, name, line string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// assertNoWorktrees checks that only the target's own worktree is left.
func assertNoWorktrees(t *testing.T, target *repo.Git, dir string) {
	t.Helper()
	if n := strings.Count(git(t, target.Dir, "worktree", "list", "--porcelain"), "worktree "); n != 1 {
		t.Errorf("%d worktrees left: %s", n, git(t, target.Dir, "worktree", "list"))
	}
	if dir != "" {
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("left in the pool's directory: %v", left)
		}
	}
}

// overlap counts the tasks running at once; a task entering waits,
// bounded, until want run together, so that parallelism the pool allows
// is actually observed.
type overlap struct {
	mu      sync.Mutex
	cond    *sync.Cond
	running map[string]Task
	joins   int // tasks entered so far
	total   int // tasks that will enter
	peak    int
	expired bool
}

func newOverlap(t *testing.T, wait time.Duration, total int) *overlap {
	o := &overlap{running: map[string]Task{}, total: total}
	o.cond = sync.NewCond(&o.mu)
	timer := time.AfterFunc(wait, func() {
		o.mu.Lock()
		o.expired = true
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	t.Cleanup(func() { timer.Stop() })
	return o
}

// enter records task as running, with whoever else runs, and, when fewer
// than want run, waits until enough others have joined it (or no more
// tasks will come, or the time is up).
func (o *overlap) enter(task Task, want int) (others []Task) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.running {
		others = append(others, r)
	}
	o.running[task.ID] = task
	o.joins++
	o.peak = max(o.peak, len(o.running))
	o.cond.Broadcast()
	target := min(o.total, o.joins+want-len(o.running))
	for o.joins < target && !o.expired {
		o.cond.Wait()
	}
	return others
}

func (o *overlap) leave(task Task) {
	o.mu.Lock()
	delete(o.running, task.ID)
	o.mu.Unlock()
}

// TestAG_P1_AtMostMaxAtOnceAndPatchesCombined: six tasks on six files run
// two at a time with Max 2 — two are seen running together, never three
// — each in its own worktree, never the target; their changes (an edit,
// a new binary file, a deletion, a task's own commit) are combined in the
// target's index, uncommitted, HEAD unmoved, with results in task order
// and no worktree left.
func TestAG_P1_AtMostMaxAtOnceAndPatchesCombined(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	var tasks []Task
	for i := range 6 {
		name := fmt.Sprintf("f%d.txt", i)
		files[name] = "base\n"
		tasks = append(tasks, Task{ID: fmt.Sprintf("t%d", i), Files: []string{name}})
	}
	files["gone.txt"] = "bye\n"
	tasks[3].Files = append(tasks[3].Files, "bin/blob.dat")
	tasks[4].Files = append(tasks[4].Files, "gone.txt")
	target, base := newRepo(t, files)
	o := newOverlap(t, 5*time.Second, len(tasks))
	dir := t.TempDir()
	var mu sync.Mutex
	dirs := map[string]bool{}

	results, err := Run(context.Background(), target, tasks, func(ctx context.Context, task Task, tree *Tree) (string, error) {
		o.enter(task, 2)
		defer o.leave(task)
		mu.Lock()
		dirs[tree.Dir] = true
		mu.Unlock()
		if tree.Dir == target.Dir || tree.Retry {
			return "", errors.New("ran in the target")
		}
		if err := appendLine(tree.Dir, task.Files[0], "fixed by "+task.ID); err != nil {
			return "", err
		}
		switch task.ID {
		case "t3":
			write(t, tree.Dir, "bin/blob.dat", "\x00\x01\x02binary\xff\x00")
		case "t4":
			if err := os.Remove(filepath.Join(tree.Dir, "gone.txt")); err != nil {
				return "", err
			}
		case "t5":
			if _, err := tree.Git.Run(ctx, "commit", "-q", "-am", "a fixer that commits"); err != nil {
				return "", err
			}
		}
		return "value of " + task.ID, nil
	}, Options{Max: 2, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if o.peak != 2 {
		t.Errorf("at most %d tasks ran at once, want exactly Max 2", o.peak)
	}
	if len(dirs) != 6 {
		t.Errorf("tasks ran in %d directories, want 6 worktrees", len(dirs))
	}
	for i, r := range results {
		if r.Task.ID != tasks[i].ID || r.Value != "value of "+tasks[i].ID || r.Err != nil || !r.Applied || r.Retried {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if got := results[3].Files; !slices.Equal(got, []string{"bin/blob.dat", "f3.txt"}) {
		t.Errorf("t3 changed %q", got)
	}
	for i := range 6 {
		if got := read(t, target.Dir, fmt.Sprintf("f%d.txt", i)); got != fmt.Sprintf("base\nfixed by t%d\n", i) {
			t.Errorf("f%d.txt = %q", i, got)
		}
	}
	if got := read(t, target.Dir, "bin/blob.dat"); got != "\x00\x01\x02binary\xff\x00" {
		t.Errorf("binary file = %q", got)
	}
	if _, err := os.Stat(filepath.Join(target.Dir, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt still there: %v", err)
	}
	if head := git(t, target.Dir, "rev-parse", "HEAD"); head != base {
		t.Errorf("target HEAD moved to %s", head)
	}
	if st := git(t, target.Dir, "status", "--porcelain"); strings.Contains(st, "??") || strings.Count(st, "\n")+1 != 8 {
		t.Errorf("target status, want eight staged changes:\n%s", st)
	}
	assertNoWorktrees(t, target, dir)
}

// TestAG_P1_IntersectingTasksNeverRunAtOnce: tasks sharing a file, or a
// directory and a file in it, never run together, and the later one
// starts from the earlier one's change (so both apply, no retry); a task
// with no files runs alone.
func TestAG_P1_IntersectingTasksNeverRunAtOnce(t *testing.T) {
	t.Parallel()
	target, _ := newRepo(t, map[string]string{"a.txt": "base\n", "dir/x.txt": "base\n", "f.txt": "base\n", "g.txt": "base\n"})
	tasks := []Task{
		{ID: "A", Files: []string{"a.txt"}},
		{ID: "B", Files: []string{"./a.txt"}},
		{ID: "C", Files: []string{"dir"}},
		{ID: "D", Files: []string{"dir/x.txt"}},
		{ID: "E"},
		{ID: "F", Files: []string{"f.txt"}},
		{ID: "G", Files: []string{"g.txt"}},
	}
	shares := func(a, b Task) bool {
		switch a.ID + b.ID {
		case "AB", "BA", "CD", "DC":
			return true
		}
		return a.ID == "E" || b.ID == "E"
	}
	// Each wave but E's has two tasks that meet; E runs alone.
	o := newOverlap(t, 5*time.Second, len(tasks))
	var mu sync.Mutex
	var bad []string
	results, err := Run(context.Background(), target, tasks, func(ctx context.Context, task Task, tree *Tree) (int, error) {
		want := 2
		if task.ID == "E" {
			want = 1
		}
		for _, other := range o.enter(task, want) {
			if shares(task, other) {
				mu.Lock()
				bad = append(bad, task.ID+" with "+other.ID)
				mu.Unlock()
			}
		}
		defer o.leave(task)
		name := map[string]string{"A": "a.txt", "B": "a.txt", "C": "dir/x.txt", "D": "dir/x.txt", "E": "a.txt", "F": "f.txt", "G": "g.txt"}[task.ID]
		return 0, appendLine(tree.Dir, name, task.ID)
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("intersecting tasks ran at once: %q", bad)
	}
	if o.peak != 2 {
		t.Errorf("peak %d: the tasks of a wave, which do not intersect, should have run together", o.peak)
	}
	for _, r := range results {
		if r.Err != nil || !r.Applied || r.Retried {
			t.Errorf("%s: %+v", r.Task.ID, r)
		}
	}
	if got := read(t, target.Dir, "a.txt"); got != "base\nA\nB\nE\n" {
		t.Errorf("a.txt = %q, want each task on the one before", got)
	}
	if got := read(t, target.Dir, "dir/x.txt"); got != "base\nC\nD\n" {
		t.Errorf("dir/x.txt = %q", got)
	}
	if got := Waves(tasks); !slices.EqualFunc(got, [][]int{{0, 2}, {1, 3}, {4}, {5, 6}}, slices.Equal) {
		t.Errorf("waves %v", got)
	}
	assertNoWorktrees(t, target, "")
}

// TestAG_P1_PatchThatDoesNotApplyIsRetriedSerially: a task that edited a
// line another task of its wave also edited (outside its own files) is
// run again on the combined tree, seeing the other's change, and lands;
// a retry that fails too is reported and leaves the combined tree as it
// was, as does a task that failed outright — the others' changes stand.
func TestAG_P1_PatchThatDoesNotApplyIsRetriedSerially(t *testing.T) {
	t.Parallel()
	for _, retryFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry fails %v", retryFails), func(t *testing.T) {
			t.Parallel()
			target, _ := newRepo(t, map[string]string{"a.txt": "one\n", "b.txt": "b\n", "c.txt": "c\n"})
			tasks := []Task{{ID: "A", Files: []string{"a.txt"}}, {ID: "B", Files: []string{"b.txt"}}, {ID: "C", Files: []string{"c.txt"}}}
			var mu sync.Mutex
			runs := map[string][]bool{}
			results, err := Run(context.Background(), target, tasks, func(ctx context.Context, task Task, tree *Tree) (string, error) {
				mu.Lock()
				runs[task.ID] = append(runs[task.ID], tree.Retry)
				mu.Unlock()
				switch {
				case task.ID == "A":
					write(t, tree.Dir, "a.txt", "one by A\n")
				case task.ID == "C":
					write(t, tree.Dir, "c.txt", "half a change\n")
					return "", errors.New("C is blocked")
				case !tree.Retry:
					write(t, tree.Dir, "a.txt", "one by B\n")
				case retryFails:
					write(t, tree.Dir, "a.txt", "garbage\n")
					write(t, tree.Dir, "new.txt", "garbage\n")
					return "", errors.New("still blocked")
				default:
					if got := read(t, tree.Dir, "a.txt"); got != "one by A\n" {
						return "", fmt.Errorf("retry does not see A's change: %q", got)
					}
					write(t, tree.Dir, "a.txt", "one by A\nand B\n")
				}
				return "ok", nil
			}, Options{Max: 3})
			if err != nil {
				t.Fatal(err)
			}
			if got := runs["B"]; !slices.Equal(got, []bool{false, true}) {
				t.Errorf("B ran %v, want once in its worktree, once on the combined tree", got)
			}
			a, b, c := results[0], results[1], results[2]
			if !a.Applied || a.Retried || a.Err != nil {
				t.Errorf("A: %+v", a)
			}
			if c.Applied || c.Err == nil || c.Retried || len(runs["C"]) != 1 {
				t.Errorf("C failed outright, want it reported, not applied, not retried: %+v", c)
			}
			if read(t, target.Dir, "c.txt") != "c\n" {
				t.Errorf("c.txt = %q, want the failed task's change discarded", read(t, target.Dir, "c.txt"))
			}
			if retryFails {
				if b.Applied || !b.Retried || b.Err == nil || !strings.Contains(b.Err.Error(), "still blocked") {
					t.Errorf("B: %+v, want its failed retry reported", b)
				}
				if got := read(t, target.Dir, "a.txt"); got != "one by A\n" {
					t.Errorf("a.txt = %q, want A's change only", got)
				}
				if _, err := os.Stat(filepath.Join(target.Dir, "new.txt")); !os.IsNotExist(err) {
					t.Errorf("the failed retry left new.txt")
				}
			} else {
				if !b.Applied || !b.Retried || b.Err != nil || !slices.Equal(b.Files, []string{"a.txt"}) {
					t.Errorf("B: %+v, want applied on its retry", b)
				}
				if got := read(t, target.Dir, "a.txt"); got != "one by A\nand B\n" {
					t.Errorf("a.txt = %q", got)
				}
			}
			assertNoWorktrees(t, target, "")
		})
	}
}

// TestAG_P1_CancelStopsEverythingAndLeavesNoWorktrees: a cancelled run
// stops its running tasks through their context, starts no more, returns
// the context's error and leaves no worktree behind.
func TestAG_P1_CancelStopsEverythingAndLeavesNoWorktrees(t *testing.T) {
	t.Parallel()
	target, _ := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	tasks := []Task{{ID: "A", Files: []string{"a.txt"}}, {ID: "B", Files: []string{"b.txt"}}, {ID: "C", Files: []string{"c.txt"}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	started := 0
	dir := t.TempDir()
	_, err := Run(ctx, target, tasks, func(ctx context.Context, task Task, tree *Tree) (int, error) {
		mu.Lock()
		started++
		if started == 2 {
			cancel()
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Second):
			return 0, errors.New("not stopped")
		}
	}, Options{Max: 2, Dir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the cancellation", err)
	}
	if started > 2 {
		t.Errorf("%d tasks started, want no more after the cancel", started)
	}
	assertNoWorktrees(t, target, dir)
	if st := git(t, target.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("target changed: %s", st)
	}
}

// TestAG_P1_DirtyTargetIsRefused: the base must be a known commit.
func TestAG_P1_DirtyTargetIsRefused(t *testing.T) {
	t.Parallel()
	target, _ := newRepo(t, map[string]string{"a.txt": "a\n"})
	write(t, target.Dir, "a.txt", "edited\n")
	_, err := Run(context.Background(), target, []Task{{ID: "A", Files: []string{"a.txt"}}}, func(context.Context, Task, *Tree) (int, error) {
		t.Error("a task ran on a dirty target")
		return 0, nil
	}, Options{})
	if err == nil || !strings.Contains(err.Error(), "uncommitted") {
		t.Errorf("err = %v", err)
	}
}

// TestAG_P1_SweepRemovesOnlyTheCallersWorktrees: what a killed pool run
// leaves in its Dir — a worktree, one whose directory is gone, one still
// locked as `git worktree add` leaves it when killed, a patch file — is
// removed from disk and from git's list; the user's own worktree, a
// worktree in a directory the caller did not name, and a file that is no
// pool's stay. A relative directory, or one holding the repository, is
// refused before anything is removed.
func TestAG_P1_SweepRemovesOnlyTheCallersWorktrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target, _ := newRepo(t, map[string]string{"a.txt": "a\n"})
	root := t.TempDir()
	dir, other := filepath.Join(root, "run-1"), filepath.Join(root, "run-1-other")
	add := func(p string) string {
		git(t, target.Dir, "worktree", "add", "-q", "--detach", p, "HEAD")
		return p
	}
	live := add(filepath.Join(dir, "task-1", "wt"))
	write(t, live, "a.txt", "half a change\n")
	gone := add(filepath.Join(dir, "task-2", "wt"))
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	locked := add(filepath.Join(dir, "task-3", "wt"))
	git(t, target.Dir, "worktree", "lock", "--reason", "initializing", locked)
	write(t, dir, "patch-1", "diff\n")
	write(t, dir, "notes.txt", "the user's\n")
	mine := add(filepath.Join(t.TempDir(), "mine"))
	sibling := add(filepath.Join(other, "task-9", "wt"))

	for _, bad := range []string{"relative/dir", filepath.Dir(target.Dir), target.Dir} {
		if _, err := Sweep(ctx, target, dir, bad); err == nil {
			t.Errorf("Sweep with %s: no error", bad)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a refused sweep removed %s: %v", live, err)
	}

	removed, err := Sweep(ctx, target, dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{live, gone, locked}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	list := git(t, target.Dir, "worktree", "list", "--porcelain")
	for _, p := range []string{live, gone, locked} {
		if strings.Contains(list, p) {
			t.Errorf("%s is still registered:\n%s", p, list)
		}
	}
	for _, p := range []string{mine, sibling} {
		if !strings.Contains(list, p) {
			t.Errorf("%s is no longer registered:\n%s", p, list)
		}
		if _, err := os.Stat(filepath.Join(p, "a.txt")); err != nil {
			t.Errorf("%s was touched: %v", p, err)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != "notes.txt" {
		t.Errorf("left in %s: %v, want notes.txt only", dir, left)
	}
	if st := git(t, target.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("target changed: %s", st)
	}

	// Sweeping again finds nothing; without the stranger's file the
	// directory goes too.
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if removed, err := Sweep(ctx, target, dir); err != nil || len(removed) != 0 {
		t.Errorf("second sweep: %v, %v", removed, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists: %v", dir, err)
	}
}
