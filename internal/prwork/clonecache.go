package prwork

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/repo"
)

// The clone cache (PR-G6, `converge serve`): one bare clone per
// repository under <root>/clones/<host>/<owner>/<repo>, shared by every
// run of that repository in this process and in others on the same state
// directory. A run holds a worktree of it only while a step works on the
// files (<root>/worktrees/<run>); a waiting run holds none. So that a
// waiting run's clone is not removed under it, each run that uses a clone
// registers in it (converge-runs/<run> in its git directory), naming the process and host it runs
// in, until its Cleanup. A clone is removed once no live run is
// registered in it and no worktree is in it. Everything here runs under
// the clone's lock (clonelock.go).

// cloneDir is the repository's clone in the cache under root, always
// three levels down: a GitLab project's subgroups are one directory
// (group~sub), never nested ones. The clone's lock guards that directory
// and nothing above it, so a clone nested under another cache directory
// could be pruned with its parent while it was being made (the pruner
// takes the parent's lock, the cloner the child's).
func cloneDir(root string, ref forge.PRRef) string {
	return filepath.Join(root, "clones", sanitize(ref.Host), ownerDir(ref.Owner), ref.Repo)
}

// ownerDir is the owner as one directory name. "~" is in no GitHub owner
// nor GitLab group path, so no two owners share one.
func ownerDir(owner string) string { return strings.ReplaceAll(owner, "/", "~") }

// gitDirOf is where the clone's refs and worktree records live: the
// clone itself when bare, its .git in a clone an older converge made with
// a checkout.
func gitDirOf(clone string) string {
	if fi, err := os.Stat(filepath.Join(clone, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(clone, ".git")
	}
	return clone
}

// hasClone reports whether dir holds a clone, bare or with a checkout.
func hasClone(dir string) bool {
	_, err := os.Stat(filepath.Join(gitDirOf(dir), "HEAD"))
	return err == nil
}

// ensureClone makes dir a bare clone of url unless it already holds a
// clone, and reports whether it made one. Under the clone's lock. A bare
// clone has no checkout: the cache costs the repository's objects once,
// whatever the number of runs.
func ensureClone(ctx context.Context, dir, url string, env []string, cred *repo.Credential) (cloned bool, err error) {
	if hasClone(dir) {
		return false, nil
	}
	// What a clone killed half-way left is no clone.
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("clear a half-made clone: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, fmt.Errorf("make clone dir: %w", err)
	}
	g := &repo.Git{Dir: filepath.Dir(dir), Env: env, Cred: cred}
	// maintenance.auto=false in the clone's own config: git otherwise
	// starts `git maintenance run --auto` after every fetch and commit
	// in it and its worktrees, a process each time that nearly always
	// finds nothing to do, and process starts are much of what a run
	// costs on a small machine. The clone is converge's scratch, so no
	// one else's git is affected; its hygiene is kept by one such run
	// when a run lets go of a clone that stays (keepTidy).
	if _, err := g.Run(ctx, "clone", "--bare", "--quiet", "--no-tags", "--config", "maintenance.auto=false", "--", url, dir); err != nil {
		_ = os.RemoveAll(dir)
		return false, err
	}
	return true, nil
}

// runsDir holds the registrations of the runs that use clone: inside its
// git directory, where git ignores it, so that no repository's name can
// collide with it, and it goes with the clone.
func runsDir(clone string) string { return filepath.Join(gitDirOf(clone), "converge-runs") }

// registration is what a run's registration file says: the process that
// uses the clone for it, and the host.
func registration() string {
	host, _ := os.Hostname()
	return strconv.Itoa(os.Getpid()) + " " + host + "\n"
}

// register records that run uses clone, from this process. Under the
// clone's lock.
func register(clone, run string) error {
	if err := os.MkdirAll(runsDir(clone), 0o755); err != nil {
		return fmt.Errorf("register the run with its clone: %w", err)
	}
	if err := os.WriteFile(filepath.Join(runsDir(clone), run), []byte(registration()), 0o644); err != nil {
		return fmt.Errorf("register the run with its clone: %w", err)
	}
	return nil
}

// registeredLive reads whether a registration's process may still use
// the clone: on this host, while it is alive; on another host (a shared
// state directory) always, as its processes cannot be seen from here.
func registeredLive(b []byte) bool {
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	host, _ := os.Hostname()
	if len(f) > 1 && f[1] != host {
		return true
	}
	return pid == os.Getpid() || proc.Live(pid)
}

// sweepClone removes from the clone what no live run uses: the
// registrations of runs whose process died, or that live (when set) says
// ended, with those runs' worktrees; keep is a run of this process whose
// registration and worktree stay. It returns the runs still registered.
// Under the clone's lock.
func sweepClone(ctx context.Context, root, clone string, live func(run string) bool) ([]string, error) {
	entries, err := os.ReadDir(runsDir(clone))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var left []string
	var dirs []string
	for _, e := range entries {
		p := filepath.Join(runsDir(clone), e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if registeredLive(b) && (live == nil || live(e.Name())) {
			left = append(left, e.Name())
			continue
		}
		for _, d := range []string{e.Name(), e.Name() + ".fixers"} {
			if abs, err := filepath.Abs(filepath.Join(root, "worktrees", d)); err == nil {
				dirs = append(dirs, abs)
			}
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(dirs) > 0 && hasClone(clone) {
		g := &repo.Git{Dir: clone}
		for _, d := range dirs {
			// The run's own worktree is one directory, not a pool's: it
			// goes by its path; a fixers' directory by pool.Sweep.
			if strings.HasSuffix(d, ".fixers") {
				if _, err := pool.Sweep(ctx, g, d); err != nil {
					return nil, err
				}
				continue
			}
			if err := removeWorktree(ctx, g, d); err != nil {
				return nil, err
			}
		}
	}
	return left, nil
}

// removeWorktree removes the worktree at dir from clone g, and dir
// whatever git says of it: a directory git no longer knows (its clone
// was made again since) is removed as well.
func removeWorktree(ctx context.Context, g *repo.Git, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return pruneWorktrees(ctx, g)
	}
	if _, err := g.Run(ctx, "worktree", "remove", "--force", "--force", dir); err != nil {
		if rerr := os.RemoveAll(dir); rerr != nil {
			return errors.Join(err, rerr)
		}
		return pruneWorktrees(ctx, g)
	}
	// A remove that succeeded has dropped git's record of dir itself.
	return nil
}

// pruneWorktrees drops clone g's records of worktrees whose directory is
// gone. A clone with no such record (the common case: each run's
// worktree is removed with git, and the others in a shared clone are
// live) has nothing to prune, and the git process that would say so is
// skipped: process starts are most of what a run costs on a small
// machine.
func pruneWorktrees(ctx context.Context, g *repo.Git) error {
	if !repo.MayPruneWorktrees(gitDirOf(g.Dir)) {
		return nil
	}
	_, err := g.Run(ctx, "worktree", "prune")
	return err
}

// keepTidy lets git repack or collect clone's garbage when its own
// thresholds (gc.auto and the like) say so, as it would have after each
// fetch and commit but for maintenance.auto=false (ensureClone). A
// failure is ignored, as git ignores that of its automatic run.
func keepTidy(ctx context.Context, clone string) {
	_, _ = (&repo.Git{Dir: clone}).Run(ctx, "maintenance", "run", "--auto", "--quiet")
}

// worktreesIn counts the worktrees git lists in clone besides the clone
// itself; -1 when git cannot tell.
func worktreesIn(ctx context.Context, clone string) int {
	list, err := (&repo.Git{Dir: clone}).Run(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return -1
	}
	n := 0
	for f := range strings.SplitSeq(list, "\x00") {
		if strings.HasPrefix(f, "worktree ") {
			n++
		}
	}
	return n - 1
}

// dropClone removes clone when no live run is registered in it and no
// worktree is in it, and reports whether it did. Under the clone's lock.
func dropClone(ctx context.Context, root, clone string, live func(run string) bool) (bool, error) {
	left, err := sweepClone(ctx, root, clone, live)
	if err != nil || len(left) > 0 {
		return false, err
	}
	if hasClone(clone) {
		if err := pruneWorktrees(ctx, &repo.Git{Dir: clone}); err != nil {
			return false, fmt.Errorf("prune worktrees: %w", err)
		}
		if worktreesIn(ctx, clone) != 0 {
			return false, nil // a worktree is in it (or git said nothing sure)
		}
	}
	if err := os.RemoveAll(clone); err != nil {
		return false, fmt.Errorf("remove the clone: %w", err)
	}
	return true, nil
}

// PruneClones removes from the clone cache under root what no run uses
// (`converge serve`): registrations of runs whose process died, or that
// live says are not registered any more, with their worktrees, then each
// clone no live run is registered in and no worktree is in. It returns
// the clones it removed. A run of a removed clone that later needs it
// clones again.
func PruneClones(ctx context.Context, root string, live func(run string) bool) ([]string, error) {
	clones, err := cachedClones(filepath.Join(root, "clones"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, c := range clones {
		if strings.HasSuffix(c, ".converge-lock") {
			continue
		}
		unlock := lockClone(c)
		ok, err := dropClone(ctx, root, c, live)
		unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", c, err))
		}
		if ok {
			removed = append(removed, c)
		}
	}
	return removed, errors.Join(errs...)
}

// cachedClones lists the clone directories under dir (<root>/clones).
// converge makes every clone three levels down (<host>/<owner>/<repo>,
// cloneDir); an older one nested a GitLab project's under its subgroups,
// so a clone deeper down is listed too, and a directory holding a clone
// is never one itself, lest pruning it remove the clone inside. A
// directory three levels down that is no clone and holds none (a clone
// that never finished) is listed too: it is removed under its own lock,
// the one a run making a clone there holds.
func cachedClones(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		depth := len(strings.Split(rel, string(filepath.Separator)))
		if depth < 3 {
			return nil
		}
		if hasClone(p) {
			out = append(out, p)
			return filepath.SkipDir
		}
		if depth == 3 && !holdsClone(p) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out, err
}

// holdsClone reports whether a clone is anywhere under dir.
func holdsClone(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if d.IsDir() && p != dir && hasClone(p) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}
