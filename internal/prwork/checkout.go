package prwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/repo"
)

// Checkout is a run's place in the repository's clone cache (Root): the
// clone every run of the repository shares, the run's registration with
// it, and the run's worktree while a step works in it (a waiting run
// holds none); fetches into the clone and pushes from the worktree. The
// rest of GitWorkspace works in what it checks out.
type Checkout struct {
	Root     string   // <state>/work: clones and worktrees live here
	RunID    string   // names the run's worktree
	CloneURL string   // the repository's git URL
	GitEnv   []string // CA and token (repo.AuthEnvFor), for repo.Git only (SEC-8)
	// GitCred, when set, gives fetches and pushes a token current as
	// each starts (a GitHub App's, SEC-5); GitEnv then carries none.
	GitCred *repo.Credential
	// KeepWorktree keeps the run's worktree while the loop waits, for a
	// person to look at (`converge pr --keep`, which skips Cleanup too).
	KeepWorktree bool

	clone *repo.Git
	// worktree is the run's worktree while a step works in it; nil while
	// the loop waits (ReleaseWorktree). wtMu guards making and releasing
	// it: the local review makes it beside the poll.
	worktree *repo.Git
	wtMu     sync.Mutex
	// made counts the worktrees the run made: one more for each step
	// after a wait that needed the files (WorktreesMade).
	made int
	// fetchedFor is the observation the clone was last fetched for
	// (fetchLocked); nil after the clone was made anew.
	fetchedFor atomic.Pointer[fetchedObservation]
	// pushGuard is what each push checks first (GuardPush).
	pushGuard atomic.Pointer[func(ctx context.Context, pr *forge.PullRequest) error]
}

// Prepare fetches the PR into the repository's clone in the cache
// (made on first use, shared by every run of the repository), registers
// the run with it, and measures the PR's size at start (PR-T6). It makes
// no worktree: a step that needs the files makes one (useWorktree).
func (w *Checkout) Prepare(ctx context.Context, pr *forge.PullRequest) (int, error) {
	if err := w.openClone(ctx, pr); err != nil {
		return 0, err
	}
	add, del, err := w.clone.DiffLines(ctx, "origin/"+pr.BaseRef, pr.HeadSHA)
	if err != nil {
		return 0, err
	}
	return add + del, nil
}

// openClone makes the repository's clone ready in the cache, registers
// the run with it and fetches the PR's base and head into it.
func (w *Checkout) openClone(ctx context.Context, pr *forge.PullRequest) error {
	dir := cloneDir(w.Root, pr.Ref)
	defer lockClone(dir)()
	if err := w.openCloneLocked(ctx, dir); err != nil {
		return err
	}
	return w.fetchLocked(ctx, pr)
}

// openCloneLocked is openClone's clone and registration, under the
// clone's lock.
func (w *Checkout) openCloneLocked(ctx context.Context, dir string) error {
	cloned, err := ensureClone(ctx, dir, w.CloneURL, w.GitEnv, w.GitCred)
	if err != nil {
		return err
	}
	if cloned {
		// A clone made anew has fetched for no observation.
		w.fetchedFor.Store(nil)
	}
	if err := register(dir, w.RunID); err != nil {
		return err
	}
	w.clone = &repo.Git{Dir: dir, Env: w.GitEnv, Cred: w.GitCred}
	return nil
}

// useWorktree gives the run its worktree, made at the PR's head when the
// run holds none (it was released while the loop waited, or never made),
// and reports whether it made one: then the PR is fetched already. A
// directory already there is a killed process's (the run holds its PR's
// lock): it is removed first, so every worktree starts from a clean head.
func (w *Checkout) useWorktree(ctx context.Context, pr *forge.PullRequest) (made bool, err error) {
	w.wtMu.Lock()
	defer w.wtMu.Unlock()
	if w.worktree != nil {
		return false, nil
	}
	dir := cloneDir(w.Root, pr.Ref)
	defer lockClone(dir)()
	if err := w.openCloneLocked(ctx, dir); err != nil {
		return false, err
	}
	if err := w.fetchLocked(ctx, pr); err != nil {
		return false, err
	}
	wt, err := filepath.Abs(filepath.Join(w.Root, "worktrees", w.RunID))
	if err != nil {
		return false, err
	}
	if err := removeWorktree(ctx, w.clone, wt); err != nil {
		return false, fmt.Errorf("remove a killed run's worktree: %w", err)
	}
	if _, err := gitLocked(ctx, dir, w.clone, "worktree", "add", "--quiet", "--detach", wt, pr.HeadSHA); err != nil {
		return false, fmt.Errorf("add worktree: %w", err)
	}
	// Pinned to its git directory as git just made it: a fixer that
	// rewrites the worktree's .git file cannot point converge's git at a
	// repository of its own (SEC-8).
	if w.worktree, err = (&repo.Git{Dir: wt, Env: w.GitEnv, Cred: w.GitCred}).PinWorktree(ctx); err != nil {
		return false, fmt.Errorf("add worktree: %w", err)
	}
	w.made++
	return true, nil
}

// WorktreesMade is how many worktrees the run has made so far: what
// giving the worktree back while waiting costs (BENCHMARKS.md).
func (w *Checkout) WorktreesMade() int {
	w.wtMu.Lock()
	defer w.wtMu.Unlock()
	return w.made
}

// ReleaseWorktree removes the run's worktree, and what is left of its
// fixers', while the loop waits (prloop.Releaser): a waiting run holds no
// checkout. What the run keeps between steps (the heads' test baselines,
// the review memory to write, the verification of a Fix) is in memory,
// and every step puts a new worktree on the PR's head as the forge shows
// it then; the clone and the run's registration in it stay.
func (w *Checkout) ReleaseWorktree(ctx context.Context) error {
	w.wtMu.Lock()
	defer w.wtMu.Unlock()
	if w.worktree == nil || w.clone == nil || w.KeepWorktree {
		return nil
	}
	defer lockClone(w.clone.Dir)()
	wt := w.worktree.Dir
	// Whatever happens, the next step makes its worktree anew, removing
	// what this left.
	w.worktree = nil
	return w.removeRunTrees(ctx, wt)
}

// removeRunTrees removes the run's worktree wt and its fixers' directory
// from the clone. Under the clone's lock.
func (w *Checkout) removeRunTrees(ctx context.Context, wt string) error {
	fixers, err := filepath.Abs(filepath.Join(w.Root, "worktrees", w.RunID+".fixers"))
	if err != nil {
		return err
	}
	if !hasClone(w.clone.Dir) {
		// The cache was pruned under the run (PruneClones): git knows
		// none of these any more.
		return errors.Join(os.RemoveAll(wt), os.RemoveAll(fixers))
	}
	var errs []error
	if wt != "" {
		if err := removeWorktree(ctx, w.clone, wt); err != nil {
			errs = append(errs, fmt.Errorf("remove the run's worktree: %w", err))
		}
	}
	if _, err := os.Stat(fixers); err == nil {
		if _, err := pool.Sweep(ctx, w.clone, fixers); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(fixers); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (w *Checkout) fetch(ctx context.Context, pr *forge.PullRequest) error {
	defer lockClone(w.clone.Dir)()
	return w.fetchLocked(ctx, pr)
}

// fetchLocked fetches the PR's base and head into the clone, once per
// observation: the steps of one observation (Prepare and the first fix,
// a local review and the fix after it) share a fetch. A second fetch for
// the same observation could only bring what the forge did after it was
// made, which the next observation shows and fetches; every worktree is
// put at the observation's head either way. A new observation (a new
// value, as every Observe makes) always fetches.
func (w *Checkout) fetchLocked(ctx context.Context, pr *forge.PullRequest) error {
	this := fetchedObservation{pr, pr.BaseRef, pr.BaseSHA, pr.HeadRef, pr.HeadSHA}
	if last := w.fetchedFor.Load(); last != nil && *last == this {
		return nil
	}
	if _, err := gitLocked(ctx, w.clone.Dir, w.clone, "fetch", "--quiet", "origin",
		"+refs/heads/"+pr.BaseRef+":refs/remotes/origin/"+pr.BaseRef,
		"+refs/heads/"+pr.HeadRef+":refs/remotes/origin/"+pr.HeadRef); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	w.fetchedFor.Store(&this)
	return nil
}

// fetchedObservation is an observation a fetch was for: the value, and
// what it said of the refs fetched (a caller that changed them in place
// asks for another fetch).
type fetchedObservation struct {
	pr                                 *forge.PullRequest
	baseRef, baseSHA, headRef, headSHA string
}

// Cleanup removes what the run made (PR-G6): its worktree, what is left
// of its fixers' worktrees, its registration with the clone, and the
// clone once no live run is registered in it and no worktree is in it.
// Runs of one repository share its clone, in this process and in others
// on the same state directory, waiting runs included, which hold no
// worktree; a run that starts later clones again.
func (w *Checkout) Cleanup(ctx context.Context) error {
	w.wtMu.Lock()
	defer w.wtMu.Unlock()
	if w.clone == nil {
		return nil
	}
	defer lockClone(w.clone.Dir)()
	wt, err := filepath.Abs(filepath.Join(w.Root, "worktrees", w.RunID))
	if err != nil {
		return err
	}
	if err := w.removeRunTrees(ctx, wt); err != nil {
		// The clone and the registration stay: what is left may still
		// point into the clone, and the next claim of the run sweeps it.
		return err
	}
	w.worktree = nil
	if err := os.Remove(filepath.Join(runsDir(w.clone.Dir), w.RunID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unregister the run from its clone: %w", err)
	}
	removed, err := dropClone(ctx, w.Root, w.clone.Dir, nil)
	if err != nil {
		return err
	}
	if removed {
		w.clone = nil
		return nil
	}
	// The clone stays for other runs: this one's fetches and commits
	// in it started no maintenance (ensureClone), so it runs once here.
	if hasClone(w.clone.Dir) {
		keepTidy(ctx, w.clone.Dir)
	}
	return nil
}
