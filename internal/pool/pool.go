// Package pool runs tasks that edit a repository in parallel, each in its
// own git worktree, and combines their changes on one target worktree
// (SPEC AG-P1): at most Max at once, never two whose files intersect, a
// task whose change no longer applies re-run serially on the combined
// tree, and a failed task not stopping the others.
//
// Tasks run in waves with a barrier between them. A task joins the wave
// after the last earlier task (in the caller's order) whose files
// intersect its own; a task with no files named intersects every task, so
// it runs alone and the tasks after it see its change. All tasks of a
// wave start from the same commit — the target's HEAD for the first
// wave, the combined tree of the waves before for later ones — so every
// patch is taken against a known base. At the barrier the wave's patches
// are applied to the target in task order, each with a plain, atomic
// `git apply --index`: a patch applies whole or not at all, so a conflict
// never leaves conflict markers or half a change in the combined tree. A
// patch that does not apply (the task edited outside its files, or a file
// it shares with a task of the same wave through a rename) is not merged
// textually: the task is run again by the same function on the combined
// tree, one at a time, where it sees what the others did.
package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/repo"
)

// DefaultMax is how many tasks run at once when Options.Max is unset.
const DefaultMax = 5

// cleanupTimeout bounds removing a worktree after the run's context ended.
const cleanupTimeout = time.Minute

// Task is one unit of work of a pool.
type Task struct {
	// ID names the task in errors and logs.
	ID string
	// Files are the repository-relative paths (files or directories) the
	// task may change. Tasks whose files intersect never run at once. No
	// files means unknown: the task runs alone (fail closed).
	Files []string
}

// Tree is the working tree a task runs in.
type Tree struct {
	// Git works in Dir with the target's environment.
	Git *repo.Git
	// Dir is the tree's directory: the task's own worktree, or, on a
	// retry, the target's with the other tasks' changes (Retry).
	Dir string
	// Retry: the task's first change did not apply to the combined tree;
	// this run is on the combined tree itself.
	Retry bool

	head, tree string // where the task started: commit and tree object
}

// Reset puts the tree back where the task started: HEAD, index and
// tracked files as they were, untracked files removed (ignored ones are
// kept). A task that runs its work again (a retry, a re-dispatch) calls
// it so a new run never sees what an abandoned one left — on a retry
// without discarding the other tasks' changes.
func (t *Tree) Reset(ctx context.Context) error {
	for _, args := range [][]string{
		{"reset", "--quiet", "--soft", t.head},
		{"read-tree", "--reset", "-u", t.tree},
		{"clean", "-fdq"},
	} {
		if _, err := t.Git.Run(ctx, args...); err != nil {
			return fmt.Errorf("reset tree: %w", err)
		}
	}
	return nil
}

// Func does a task's work in tree. An error means the task failed: its
// changes are discarded and the error is its Result's. It must return
// when ctx ends.
type Func[T any] func(ctx context.Context, t Task, tree *Tree) (T, error)

// Options configure a pool run.
type Options struct {
	// Max is how many tasks run at once; zero means DefaultMax.
	Max int
	// Dir holds the tasks' worktrees; "" means a new temporary directory,
	// removed afterwards. A process killed mid-run leaves its worktrees
	// there, so a caller that can be killed names a Dir of its own, which
	// it finds again and hands to Sweep.
	Dir string
	// Lock, when set, is held while a worktree is added or removed, for
	// callers that share the repository with other users of its worktree
	// list.
	Lock func() (unlock func())
	// Logf reports retries as they happen.
	Logf func(format string, args ...any)
}

// Result is what became of one task.
type Result[T any] struct {
	Task Task
	// Value is what the task's last run returned.
	Value T
	// Err is the task's failure: its function's error (on a retry
	// included), or why its change could not be taken. Its changes are
	// then not in the combined tree.
	Err error
	// Applied: the task's change is in the combined tree (a task that
	// changed nothing is applied too).
	Applied bool
	// Retried: the task's change did not apply, and it was run again on
	// the combined tree.
	Retried bool
	// Files are the paths the task changed in the combined tree, sorted.
	Files []string
}

// Run runs tasks with fn and combines their changes on target, a clean
// worktree whose HEAD is the base every task starts from. The results
// are in task order whatever the order tasks finished in; the combined
// changes are in target's index and working tree, uncommitted.
//
// The error is the pool's own: target not clean, a git command that
// failed, ctx ended (then running tasks are stopped through their
// context). Every task worktree is removed before Run returns, on error
// too.
func Run[T any](ctx context.Context, target *repo.Git, tasks []Task, fn Func[T], opts Options) ([]Result[T], error) {
	results := make([]Result[T], len(tasks))
	for i, t := range tasks {
		results[i].Task = t
	}
	if len(tasks) == 0 {
		return results, nil
	}
	if dirty, err := target.IsDirty(ctx); err != nil {
		return results, fmt.Errorf("pool: %w", err)
	} else if dirty {
		return results, errors.New("pool: the target worktree has uncommitted changes")
	}
	base, err := target.HeadSHA(ctx)
	if err != nil {
		return results, fmt.Errorf("pool: %w", err)
	}
	p := &run[T]{target: target, fn: fn, opts: opts, results: results, head: base}
	if p.opts.Max <= 0 {
		p.opts.Max = DefaultMax
	}
	if p.opts.Dir == "" {
		d, err := os.MkdirTemp("", "converge-pool-")
		if err != nil {
			return results, fmt.Errorf("pool: %w", err)
		}
		defer os.RemoveAll(d)
		p.opts.Dir = d
	} else if err := os.MkdirAll(p.opts.Dir, 0o755); err != nil {
		return results, fmt.Errorf("pool: %w", err)
	}

	for n, wave := range Waves(tasks) {
		if n > 0 {
			// The next wave starts from what the waves before combined.
			if base, err = p.snapshotCommit(ctx, base, n); err != nil {
				return results, err
			}
		}
		if err := p.wave(ctx, wave, base); err != nil {
			return results, err
		}
	}
	return results, nil
}

// Waves groups tasks (by index) into the waves Run runs them in: a task
// goes one wave after the last earlier task whose files intersect its
// own, and a task without files after every earlier task, alone. Tasks
// of a wave never intersect; within a wave they keep the caller's order.
func Waves(tasks []Task) [][]int {
	level := make([]int, len(tasks))
	var waves [][]int
	for i, t := range tasks {
		for j := range i {
			if intersect(tasks[j], t) {
				level[i] = max(level[i], level[j]+1)
			}
		}
		if level[i] == len(waves) {
			waves = append(waves, nil)
		}
		waves[level[i]] = append(waves[level[i]], i)
	}
	return waves
}

// intersect reports whether two tasks may touch a common path: one names
// a path the other names or lies under, or either names none.
func intersect(a, b Task) bool {
	if len(a.Files) == 0 || len(b.Files) == 0 {
		return true
	}
	for _, x := range a.Files {
		x = path.Clean(strings.TrimPrefix(x, "./"))
		for _, y := range b.Files {
			y = path.Clean(strings.TrimPrefix(y, "./"))
			if x == y || x == "." || y == "." || strings.HasPrefix(y, x+"/") || strings.HasPrefix(x, y+"/") {
				return true
			}
		}
	}
	return false
}

type run[T any] struct {
	target  *repo.Git
	fn      Func[T]
	opts    Options
	results []Result[T]
	head    string // the target's HEAD, which no task may move

	mu sync.Mutex // serializes worktree add and remove
}

func (p *run[T]) logf(format string, args ...any) {
	if p.opts.Logf != nil {
		p.opts.Logf(format, args...)
	}
}

// wave runs the tasks of one wave from base, at most Max at once, then
// combines their patches in task order and re-runs, one at a time, those
// whose patch did not apply.
func (p *run[T]) wave(ctx context.Context, idx []int, base string) error {
	patches := make([]string, len(idx))
	errs := make([]error, len(idx))
	sem := make(chan struct{}, p.opts.Max)
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[k] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			patches[k], errs[k] = p.isolated(ctx, i, base)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	var retry []int
	for k, i := range idx {
		r := &p.results[i]
		if r.Err != nil {
			continue
		}
		ok, err := p.apply(ctx, patches[k])
		if err != nil {
			return err
		}
		if ok {
			r.Applied = true
			continue
		}
		retry = append(retry, i)
	}
	for _, i := range retry {
		p.logf("the change of task %s does not apply to the combined tree; running it again there", p.results[i].Task.ID)
		if err := p.retry(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// isolated runs task i in a new worktree at base and returns its patch
// against base. The task's own failure goes to its Result; the error is
// the pool's.
func (p *run[T]) isolated(ctx context.Context, i int, base string) (patch string, err error) {
	r := &p.results[i]
	parent, err := os.MkdirTemp(p.opts.Dir, "task-")
	if err != nil {
		return "", fmt.Errorf("pool: task %s: %w", r.Task.ID, err)
	}
	defer os.RemoveAll(parent)
	dir := filepath.Join(parent, "wt")
	wt, err := p.addWorktree(ctx, dir, base)
	if err != nil {
		return "", fmt.Errorf("pool: task %s: %w", r.Task.ID, err)
	}
	defer func() {
		if rmErr := p.removeWorktree(ctx, dir); rmErr != nil && err == nil {
			err = fmt.Errorf("pool: task %s: %w", r.Task.ID, rmErr)
		}
	}()
	tree, err := wt.Run(ctx, "rev-parse", "--verify", "--end-of-options", base+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("pool: task %s: %w", r.Task.ID, err)
	}
	tree = strings.TrimSpace(tree)
	r.Value, r.Err = p.fn(ctx, r.Task, &Tree{Git: wt, Dir: dir, head: base, tree: tree})
	if r.Err != nil || ctx.Err() != nil {
		return "", nil
	}
	if _, err := wt.Run(ctx, "add", "-A", "--", "."); err != nil {
		return "", fmt.Errorf("pool: task %s: %w", r.Task.ID, err)
	}
	// Against base, not HEAD: a task that committed is still one change.
	patch, err = wt.Run(ctx, "diff", "--cached", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff", base, "--")
	if err != nil {
		return "", fmt.Errorf("pool: task %s: %w", r.Task.ID, err)
	}
	if r.Files, err = changedFiles(ctx, wt, base); err != nil {
		return "", fmt.Errorf("pool: task %s: %w", r.Task.ID, err)
	}
	return patch, nil
}

func (p *run[T]) addWorktree(ctx context.Context, dir, base string) (*repo.Git, error) {
	defer p.lock()()
	return p.target.AddWorktree(ctx, dir, base, "")
}

// removeWorktree removes a task's worktree even after ctx ended: a
// cancelled run leaves no worktrees.
func (p *run[T]) removeWorktree(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	defer p.lock()()
	return p.target.RemoveWorktree(ctx, dir)
}

func (p *run[T]) lock() (unlock func()) {
	p.mu.Lock()
	if p.opts.Lock == nil {
		return p.mu.Unlock
	}
	outer := p.opts.Lock()
	return func() { outer(); p.mu.Unlock() }
}

// apply applies patch to the target's index and tree, whole or not at
// all; ok is false when it does not apply.
func (p *run[T]) apply(ctx context.Context, patch string) (ok bool, err error) {
	if strings.TrimSpace(patch) == "" {
		return true, nil
	}
	f, err := os.CreateTemp(p.opts.Dir, "patch-")
	if err != nil {
		return false, fmt.Errorf("pool: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(patch)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("pool: %w", err)
	}
	if _, err := p.target.Run(ctx, "apply", "--index", "--whitespace=nowarn", f.Name()); err != nil {
		var gerr *repo.Error
		if errors.As(err, &gerr) && gerr.ExitCode > 0 && ctx.Err() == nil {
			return false, nil
		}
		return false, fmt.Errorf("pool: %w", err)
	}
	return true, nil
}

// retry runs task i again on the combined tree. A failure puts the tree
// back as it was, so the other tasks' changes stand.
func (p *run[T]) retry(ctx context.Context, i int) error {
	r := &p.results[i]
	r.Retried = true
	tree, err := p.snapshot(ctx)
	if err != nil {
		return err
	}
	t := &Tree{Git: p.target, Dir: p.target.Dir, Retry: true, head: p.head, tree: tree}
	r.Value, r.Err = p.fn(ctx, r.Task, t)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if r.Err != nil {
		r.Err = fmt.Errorf("run again on the combined tree: %w", r.Err)
		return t.Reset(ctx)
	}
	// The task's change stays staged like the others'; a commit it made is
	// undone into the index so the target's HEAD stays the base.
	if _, err := p.target.Run(ctx, "reset", "--quiet", "--soft", p.head); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if _, err := p.target.Run(ctx, "add", "-A", "--", "."); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if r.Files, err = changedFiles(ctx, p.target, tree); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	r.Applied = true
	return nil
}

// snapshot stages everything in the target and returns its tree object.
func (p *run[T]) snapshot(ctx context.Context) (string, error) {
	if _, err := p.target.Run(ctx, "add", "-A", "--", "."); err != nil {
		return "", fmt.Errorf("pool: %w", err)
	}
	out, err := p.target.Run(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("pool: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// snapshotCommit records the combined tree as a commit on parent, for
// the next wave's worktrees; no ref points at it.
func (p *run[T]) snapshotCommit(ctx context.Context, parent string, wave int) (string, error) {
	tree, err := p.snapshot(ctx)
	if err != nil {
		return "", err
	}
	g := p.target.WithEnv(
		"GIT_AUTHOR_NAME="+repo.DefaultAuthorName, "GIT_AUTHOR_EMAIL="+repo.DefaultAuthorEmail,
		"GIT_COMMITTER_NAME="+repo.DefaultAuthorName, "GIT_COMMITTER_EMAIL="+repo.DefaultAuthorEmail)
	out, err := g.Run(ctx, "commit-tree", tree, "-p", parent, "-m", fmt.Sprintf("pool: waves 1-%d combined", wave))
	if err != nil {
		return "", fmt.Errorf("pool: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// changedFiles lists what the index changes against rev (a commit or a
// tree), sorted.
func changedFiles(ctx context.Context, g *repo.Git, rev string) ([]string, error) {
	out, err := g.Run(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames", rev, "--")
	if err != nil {
		return nil, err
	}
	var files []string
	for f := range strings.SplitSeq(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files, nil
}

// Sweep removes what pool runs that never cleaned up (their process was
// killed) left in dirs: each worktree of target registered under one of
// dirs, missing or locked ones included, then the pool's own entries in
// each dir and the dir once it is empty, then git's records of worktrees
// whose directory is gone. It fails closed: a worktree that is not under
// one of dirs is never removed, and a dir must be absolute and must not
// hold the target's main worktree, so each dir has to be the caller's
// own. It returns the worktrees it removed.
func Sweep(ctx context.Context, target *repo.Git, dirs ...string) ([]string, error) {
	list, err := target.Run(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("pool: sweep: %w", err)
	}
	var paths []string
	for f := range strings.SplitSeq(list, "\x00") {
		if p, ok := strings.CutPrefix(f, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("pool: sweep: git lists no main worktree")
	}
	own := make([]string, len(dirs))
	for i, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("pool: sweep: %s is not an absolute path", d)
		}
		own[i] = filepath.Clean(d)
		if own[i] == filepath.Clean(paths[0]) || within(paths[0], own[i]) {
			return nil, fmt.Errorf("pool: sweep: %s holds the repository %s", d, paths[0])
		}
	}
	var removed []string
	// The first entry is the main worktree, which git never removes.
	for _, p := range paths[1:] {
		if !slices.ContainsFunc(own, func(d string) bool { return within(p, d) }) {
			continue
		}
		if err := target.RemoveWorktree(ctx, p); err != nil {
			return removed, fmt.Errorf("pool: sweep: %w", err)
		}
		removed = append(removed, p)
	}
	for _, d := range own {
		if err := removeOwn(d); err != nil {
			return removed, fmt.Errorf("pool: sweep: %w", err)
		}
	}
	if hasRecords(paths[0]) {
		if _, err := target.Run(ctx, "worktree", "prune"); err != nil {
			return removed, fmt.Errorf("pool: sweep: %w", err)
		}
	}
	return removed, nil
}

// hasRecords reports whether the repository whose main worktree git
// lists as main may hold a record of a linked worktree that a prune
// would drop (repo.MayPruneWorktrees). git lists as main its common directory, less
// a trailing /.git: so that directory is main or main/.git, and both are
// looked at; when neither is a git directory, where the records are is
// not known, and the answer is yes. Skipping a prune with nothing to
// prune saves a git process, which is much of what a sweep costs.
func hasRecords(main string) bool {
	known := false
	for _, dir := range []string{main, filepath.Join(main, ".git")} {
		if repo.MayPruneWorktrees(dir) {
			return true
		}
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
			known = true
		}
	}
	return !known
}

// removeOwn removes what a pool run makes in its Dir (the task-*
// directories, the patch-* files) and then dir, when nothing else is in
// it.
func removeOwn(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	others := false
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "task-") && !strings.HasPrefix(n, "patch-") {
			// Not the pool's: it stays, and so does dir.
			others = true
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	if others {
		return nil
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// within reports whether path lies strictly inside dir, compared both as
// written and with symbolic links resolved (git may record either).
func within(path, dir string) bool {
	paths, dirs := []string{filepath.Clean(path)}, []string{filepath.Clean(dir)}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		paths = append(paths, r)
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dirs = append(dirs, r)
	}
	for _, p := range paths {
		for _, d := range dirs {
			rel, err := filepath.Rel(d, p)
			if err == nil && rel != "." && filepath.IsLocal(rel) {
				return true
			}
		}
	}
	return false
}
