package prwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/crashpoint"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
)

// The clones under the state directory are a cache that every loop shares,
// in this process and in other converge processes on the same state
// directory. What changes a clone's shared refs and worktree list (clone,
// fetch, worktree add and remove, and a push, which updates the clone's
// remote-tracking ref) runs under the clone's lock: a mutex within the
// process and an advisory file lock across processes. git's own ref locks
// refuse concurrent updates rather than wait.

var cloneLocks sync.Map // clone dir → *sync.Mutex

// lockClone takes the clone's lock and returns its release.
func lockClone(dir string) (unlock func()) {
	dir = filepath.Clean(dir)
	m, _ := cloneLocks.LoadOrStore(dir, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	release := lockFile(dir + ".converge-lock")
	dropHalfAddedWorktrees(dir)
	return func() {
		release()
		mu.Unlock()
	}
}

// dropHalfAddedWorktrees removes from clone the records of worktrees
// that a git killed mid-`worktree add` left. git writes a new record's
// HEAD as the null object id first and points it at the commit only
// afterwards; killed in between (a converge SIGKILLed takes its git with
// it), it leaves a record whose HEAD names no object, which `git worktree
// prune` keeps (git locks a record while adding it) and which fails every
// later fetch into the clone: the fetch's connectivity check walks every
// worktree's HEAD ("did not send all necessary objects"). Called only
// under the clone's lock: every converge that adds a worktree to a clone
// holds that lock, so no such record is one being added now. The
// directory the record names is its run's, removed with the run's
// worktree or swept with its fixers'.
func dropHalfAddedWorktrees(clone string) {
	records := filepath.Join(gitDirOf(clone), "worktrees")
	entries, err := os.ReadDir(records)
	if err != nil {
		return
	}
	for _, e := range entries {
		head, err := os.ReadFile(filepath.Join(records, e.Name(), "HEAD"))
		if err != nil {
			continue
		}
		if id := strings.TrimSpace(string(head)); id != "" && strings.Trim(id, "0") == "" {
			_ = os.RemoveAll(filepath.Join(records, e.Name()))
		}
	}
}

// staleRefLock is git's refusal to update a ref whose lock file exists.
var staleRefLock = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// removeStaleRefLock removes the ref lock file git named in err when it
// lies inside the clone's git directory, and says whether it did. Called
// only under the clone's lock: every converge that writes the clone's
// shared refs holds that lock, so a lock file found under it was left by
// a git process that died mid-update (a converge SIGKILLed mid-push takes
// its git with it), and git would refuse every later update of that ref.
func removeStaleRefLock(cloneDir string, err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	var gitErr *repo.Error
	if errors.As(err, &gitErr) {
		msg = gitErr.Stderr
	}
	m := staleRefLock.FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	gitDir, lock := filepath.Clean(gitDirOf(cloneDir)), filepath.Clean(m[1])
	if !strings.HasPrefix(lock, gitDir+string(filepath.Separator)) {
		return false
	}
	return os.Remove(lock) == nil
}

// gitLocked runs git in g, once more after removing a lock file a dead
// git left in the clone's git directory. Called under the clone's lock,
// or in the run's own worktree, whose files only the run writes.
func gitLocked(ctx context.Context, cloneDir string, g *repo.Git, args ...string) (string, error) {
	out, err := g.Run(ctx, args...)
	if removeStaleRefLock(cloneDir, err) {
		out, err = g.Run(ctx, args...)
	}
	return out, err
}

// push pushes the worktree's HEAD to the PR's head branch, never forced,
// under the clone's lock (it updates the clone's remote-tracking ref).
func (w *Checkout) push(ctx context.Context, pr *forge.PullRequest) error {
	if g := w.pushGuard.Load(); g != nil {
		if err := (*g)(ctx, pr); err != nil {
			return err
		}
	}
	defer lockClone(w.clone.Dir)()
	crashpoint.Hit("git push: before") // REL-2's crash matrix
	err := w.worktree.Push(ctx, "origin", "HEAD", pr.HeadRef)
	if removeStaleRefLock(w.clone.Dir, err) {
		err = w.worktree.Push(ctx, "origin", "HEAD", pr.HeadRef)
	}
	crashpoint.Hit("git push: after")
	if errors.Is(err, repo.ErrNonFastForward) {
		return &branchMovedError{err: err}
	}
	return err
}

// branchMovedError is a push the forge refused because the PR's branch
// moved under the round (a human's push, another converge that took the
// PR over): nothing was pushed, and the loop observes again at once and
// judges what moved it (PR-T4, PR-T14) instead of ending errored.
type branchMovedError struct{ err error }

func (e *branchMovedError) Error() string {
	return e.err.Error() + "; the branch moved under the round: observing it again"
}
func (e *branchMovedError) Unwrap() error { return e.err }

// ObserveNow tells the engine a new observation answers this fault.
func (e *branchMovedError) ObserveNow() bool { return true }

// GuardPush sets the check each later push makes first (PR-T14: the run
// still holds the PR).
func (w *Checkout) GuardPush(guard func(ctx context.Context, pr *forge.PullRequest) error) {
	w.pushGuard.Store(&guard)
}

var _ prloop.PushGuarded = (*GitWorkspace)(nil)
