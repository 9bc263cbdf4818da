package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNothingToCommit is returned by Commit when no change is left to
// commit once excluded paths are kept out.
var ErrNothingToCommit = errors.New("nothing to commit")

// ErrNonFastForward is returned by Push when the remote branch has commits
// the pushed ref does not contain. converge never force-pushes (PR-S11):
// the caller re-observes instead.
var ErrNonFastForward = errors.New("push rejected: not a fast-forward")

// Clone clones url into dir (whose parent is created) and returns a Git
// for it. env is kept on the returned Git for later fetches and pushes;
// pass AuthEnvFor's entries there, never a token in url (IF-2, SEC-8).
func Clone(ctx context.Context, url, dir string, env []string) (*Git, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	g := &Git{Dir: filepath.Dir(dir), Env: env}
	if _, err := g.Run(ctx, "clone", "--quiet", "--no-tags", "--", url, dir); err != nil {
		return nil, err
	}
	return &Git{Dir: dir, Env: env}, nil
}

// Fetch fetches refspecs (or the remote's configured ones) from remote,
// without tags.
func (g *Git) Fetch(ctx context.Context, remote string, refspecs ...string) error {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--", remote}, refspecs...)
	_, err := g.Run(ctx, args...)
	return err
}

// AddWorktree checks out ref in a new worktree at path: detached when
// newBranch is "", else on a new local branch newBranch (which must not
// exist). The returned Git works in the new worktree with g's Env, pinned
// to its git directory (PinWorktree).
func (g *Git) AddWorktree(ctx context.Context, path, ref, newBranch string) (*Git, error) {
	args := []string{"worktree", "add", "--quiet"}
	if newBranch == "" {
		args = append(args, "--detach", path, ref)
	} else {
		args = append(args, "-b", newBranch, path, ref)
	}
	if _, err := g.Run(ctx, args...); err != nil {
		return nil, err
	}
	return (&Git{Dir: path, Env: g.Env, Cred: g.Cred}).PinWorktree(ctx)
}

// RemoveWorktree removes the worktree at path, discarding its changes and
// untracked files (a run's worktree is scratch space), and prunes git's
// record of it.
func (g *Git) RemoveWorktree(ctx context.Context, path string) error {
	if _, err := g.Run(ctx, "worktree", "remove", "--force", "--force", path); err != nil {
		if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
			return err
		}
		// The directory was gone already: only a prune drops git's
		// record of it.
		_, err := g.Run(ctx, "worktree", "prune")
		return err
	}
	// A remove that succeeded has dropped git's record itself; a prune
	// would be one more git process for nothing.
	return nil
}

// MayPruneWorktrees reports whether `git worktree prune` may find
// something to prune in the git directory commonDir (a repository's
// common directory): a record of a linked worktree that is not a
// directory, is not locked and has no readable gitdir file, or names a
// worktree that is gone, or two records of one worktree. It answers as
// git's own test does, and yes whenever it cannot tell (a record it
// cannot read, a relative path): skipping the prune is only ever a
// saving, never the difference between a record kept and one dropped.
func MayPruneWorktrees(commonDir string) bool {
	dir := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		rec := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			return true
		}
		if _, err := os.Lstat(filepath.Join(rec, "locked")); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return true
		}
		b, err := os.ReadFile(filepath.Join(rec, "gitdir"))
		path := strings.TrimSpace(string(b))
		if err != nil || path == "" || !filepath.IsAbs(path) || seen[path] {
			return true
		}
		seen[path] = true
		if _, err := os.Stat(path); err != nil {
			return true
		}
	}
	return false
}

// MayHaveWorktreesUnder reports whether the repository whose common git
// directory is commonDir may hold a record of a linked worktree inside
// dir: a record whose gitdir file names a path under dir (as given, or
// with its parent's symbolic links resolved), and yes whenever it cannot
// tell (a record it cannot read, a relative path).
func MayHaveWorktreesUnder(commonDir, dir string) bool {
	records := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(records)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	dirs := []string{filepath.Clean(dir)}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
		dirs = append(dirs, filepath.Join(parent, filepath.Base(dir)))
	}
	for _, e := range entries {
		if !e.IsDir() {
			return true
		}
		b, err := os.ReadFile(filepath.Join(records, e.Name(), "gitdir"))
		path := strings.TrimSpace(string(b))
		if err != nil || path == "" || !filepath.IsAbs(path) {
			return true
		}
		for _, d := range dirs {
			if rel, err := filepath.Rel(d, filepath.Clean(path)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return true
			}
		}
	}
	return false
}

// Checkout switches the working tree to ref (a branch, or any commit-ish,
// detached).
func (g *Git) Checkout(ctx context.Context, ref string) error {
	_, err := g.Run(ctx, "checkout", "--quiet", ref, "--")
	return err
}

// HeadSHA is the commit HEAD points at.
func (g *Git) HeadSHA(ctx context.Context) (string, error) {
	return g.RevParse(ctx, "HEAD")
}

// RevParse resolves rev to a full commit SHA.
func (g *Git) RevParse(ctx context.Context, rev string) (string, error) {
	out, err := g.Run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

// FileStatus is one entry of `git status --porcelain`.
type FileStatus struct {
	Code     string // two letters XY, e.g. " M", "A ", "??"
	Path     string
	OrigPath string // rename or copy source
}

// Status lists changed and untracked files (ignored files excluded).
func (g *Git) Status(ctx context.Context) ([]FileStatus, error) {
	out, err := g.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var st []FileStatus
	parts := strings.Split(out, "\x00")
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if len(p) < 4 {
			continue
		}
		fs := FileStatus{Code: p[:2], Path: p[3:]}
		if fs.Code[0] == 'R' || fs.Code[0] == 'C' {
			if i+1 < len(parts) {
				fs.OrigPath = parts[i+1]
				i++
			}
		}
		st = append(st, fs)
	}
	return st, nil
}

// IsDirty reports whether the working tree has changes or untracked files.
func (g *Git) IsDirty(ctx context.Context) (bool, error) {
	st, err := g.Status(ctx)
	return len(st) > 0, err
}

// Trailer is one git trailer line, "Key: Value".
type Trailer struct{ Key, Value string }

// Default identity when CommitOptions leaves it empty: commits never
// depend on the machine's git config (IF-4).
const (
	DefaultAuthorName  = "converge"
	DefaultAuthorEmail = "converge@localhost"
)

// CommitOptions describes a commit made by Commit.
type CommitOptions struct {
	Message  string
	Trailers []Trailer // appended to the message's trailer block, in order
	// Author and committer; committer defaults to the author, the author to
	// DefaultAuthorName/Email.
	AuthorName, AuthorEmail       string
	CommitterName, CommitterEmail string
	// Date sets author and committer dates; zero means now.
	Date time.Time
	// Exclude lists pathspecs (relative to the repository root) kept out
	// of the commit, changed or not: local-only patches stay in the working
	// tree, uncommitted (PR-S11).
	Exclude []string
}

// Commit stages every change except opts.Exclude, commits it with an
// explicit identity and returns the new commit's SHA. With nothing to
// commit it returns ErrNothingToCommit and leaves the index as it found
// it for the excluded paths.
func (g *Git) Commit(ctx context.Context, opts CommitOptions) (string, error) {
	addArgs := []string{"add", "-A", "--", "."}
	for _, x := range opts.Exclude {
		addArgs = append(addArgs, ":(top,exclude)"+x)
	}
	if _, err := g.Run(ctx, addArgs...); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	// A path someone staged earlier would still be committed: unstage it.
	if len(opts.Exclude) > 0 {
		if err := g.unstage(ctx, opts.Exclude); err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
	}
	if _, err := g.Run(ctx, "diff", "--cached", "--quiet"); err == nil {
		return "", ErrNothingToCommit
	} else if e := (*Error)(nil); !errors.As(err, &e) || e.ExitCode != 1 {
		return "", fmt.Errorf("commit: %w", err)
	}

	msg, err := g.withTrailers(ctx, opts.Message, opts.Trailers)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	an, ae := opts.AuthorName, opts.AuthorEmail
	if an == "" {
		an = DefaultAuthorName
	}
	if ae == "" {
		ae = DefaultAuthorEmail
	}
	cn, ce := opts.CommitterName, opts.CommitterEmail
	if cn == "" {
		cn = an
	}
	if ce == "" {
		ce = ae
	}
	cg := g.WithEnv("GIT_AUTHOR_NAME="+an, "GIT_AUTHOR_EMAIL="+ae,
		"GIT_COMMITTER_NAME="+cn, "GIT_COMMITTER_EMAIL="+ce)
	if !opts.Date.IsZero() {
		d := opts.Date.Format(time.RFC3339)
		cg.Env = append(cg.Env, "GIT_AUTHOR_DATE="+d, "GIT_COMMITTER_DATE="+d)
	}
	// cleanup=verbatim: the trailer block we built must survive as is;
	// --no-edit: never open an editor.
	if _, err := cg.run(ctx, []byte(msg), "commit", "--quiet", "--no-edit", "--cleanup=verbatim", "-F", "-"); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return g.HeadSHA(ctx)
}

func (g *Git) unstage(ctx context.Context, pathspecs []string) error {
	args := []string{"diff", "--cached", "--name-only", "-z", "--"}
	for _, x := range pathspecs {
		args = append(args, ":(top)"+x)
	}
	out, err := g.Run(ctx, args...)
	if err != nil {
		return err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, ":(top,literal)"+f)
		}
	}
	if len(files) == 0 {
		return nil
	}
	if _, err := g.RevParse(ctx, "HEAD"); err != nil {
		// No commit yet: nothing to reset to, drop from the index instead.
		_, err = g.Run(ctx, append([]string{"rm", "--cached", "--quiet", "-r", "--"}, files...)...)
		return err
	}
	_, err = g.Run(ctx, append([]string{"reset", "--quiet", "HEAD", "--"}, files...)...)
	return err
}

// withTrailers appends trailers to msg's trailer block the way git does.
func (g *Git) withTrailers(ctx context.Context, msg string, trailers []Trailer) (string, error) {
	msg = strings.TrimRight(msg, "\n") + "\n"
	if len(trailers) == 0 {
		return msg, nil
	}
	// No --no-divider: git reads trailers above a "---" line, so they must be
	// written there too for CommitsBetween and HasTrailer to see them.
	args := []string{"-c", "trailer.ifexists=addIfDifferent", "interpret-trailers"}
	for _, t := range trailers {
		if t.Key == "" || strings.ContainsAny(t.Key, ": \n") || strings.Contains(t.Value, "\n") {
			return "", fmt.Errorf("invalid trailer %q: %q", t.Key, t.Value)
		}
		args = append(args, "--trailer", t.Key+": "+t.Value)
	}
	return g.run(ctx, []byte(msg), args...)
}

// Push pushes localRef to remoteBranch on remote, never forcing: a "+"
// refspec is refused, and a rejection because the remote moved returns
// ErrNonFastForward. remoteBranch is a branch name or a full ref.
func (g *Git) Push(ctx context.Context, remote, localRef, remoteBranch string) error {
	if strings.HasPrefix(localRef, "+") || strings.HasPrefix(remoteBranch, "+") ||
		strings.Contains(localRef, ":") || strings.Contains(remoteBranch, ":") {
		return fmt.Errorf("push %s: refusing refspec %q -> %q: converge never force-pushes", remote, localRef, remoteBranch)
	}
	if localRef == "" || remoteBranch == "" {
		return fmt.Errorf("push %s: empty ref", remote)
	}
	dst := remoteBranch
	if !strings.HasPrefix(dst, "refs/") {
		dst = "refs/heads/" + dst
	}
	var args []string
	if !strings.ContainsAny(remote, "/:") {
		// A remote configured as a mirror pushes --mirror, which forces.
		args = append(args, "-c", "remote."+remote+".mirror=false")
	}
	args = append(args, "push", "--porcelain", "--no-force-with-lease", "--", remote, localRef+":"+dst)
	out, err := g.Run(ctx, args...)
	if err == nil {
		return nil
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "!") && (strings.Contains(line, "non-fast-forward") || strings.Contains(line, "fetch first")) {
			return fmt.Errorf("push %s to %s: %w", localRef, dst, ErrNonFastForward)
		}
	}
	return err
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (g *Git) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := g.Run(ctx, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	var e *Error
	if errors.As(err, &e) && e.ExitCode == 1 {
		return false, nil
	}
	return false, err
}

// CommitInfo describes one commit.
type CommitInfo struct {
	SHA         string
	Parents     []string
	AuthorName  string
	AuthorEmail string
	Subject     string
	// Trailers are the commit's real trailers as git parses them (the final
	// trailer block only), by key as written.
	Trailers map[string][]string
}

// HasTrailer reports whether the commit carries trailer key (matched
// case-insensitively, as git does).
func (c CommitInfo) HasTrailer(key string) bool {
	for k := range c.Trailers {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// CommitsBetween lists the commits reachable from to but not from from
// (from..to), oldest first. An empty from lists all of to's history.
func (g *Git) CommitsBetween(ctx context.Context, from, to string) ([]CommitInfo, error) {
	rng := to
	if from != "" {
		rng = from + ".." + to
	}
	const sep = "\x1e"
	out, err := g.Run(ctx, "log", "--reverse", "--topo-order", "--no-color",
		"--format=%H%x00%P%x00%an%x00%ae%x00%s%x00%(trailers:only,unfold)"+sep, rng, "--")
	if err != nil {
		return nil, fmt.Errorf("commits %s: %w", rng, err)
	}
	var cs []CommitInfo
	for _, rec := range strings.Split(out, sep) {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x00", 6)
		if len(f) != 6 {
			return nil, fmt.Errorf("commits %s: malformed log record", rng)
		}
		c := CommitInfo{SHA: f[0], Parents: strings.Fields(f[1]), AuthorName: f[2], AuthorEmail: f[3], Subject: f[4],
			Trailers: map[string][]string{}}
		for _, line := range strings.Split(f[5], "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k != "" {
				k = strings.TrimSpace(k)
				c.Trailers[k] = append(c.Trailers[k], strings.TrimSpace(v))
			}
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// DiffLines counts lines added and deleted on head since it forked from
// base (base...head, the PR's own diff; PR-T6). Binary files count zero.
func (g *Git) DiffLines(ctx context.Context, base, head string) (added, deleted int, err error) {
	return g.numstat(ctx, base+"..."+head)
}

// DiffLinesBetween counts lines added and deleted from commit from to
// commit to (from..to: the changes of exactly these commits, e.g. the
// loop's own since it started).
func (g *Git) DiffLinesBetween(ctx context.Context, from, to string) (added, deleted int, err error) {
	return g.numstat(ctx, from+".."+to)
}

func (g *Git) numstat(ctx context.Context, rng string) (added, deleted int, err error) {
	out, err := g.Run(ctx, "diff", "--numstat", "--find-renames", "--no-color", "--no-ext-diff", rng, "--")
	if err != nil {
		return 0, 0, fmt.Errorf("diff %s: %w", rng, err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 {
			continue
		}
		a, errA := strconv.Atoi(f[0])
		d, errD := strconv.Atoi(f[1])
		if errA != nil || errD != nil {
			continue // binary: "-\t-\tpath"
		}
		added += a
		deleted += d
	}
	return added, deleted, nil
}

// ChangedFiles lists the paths changed on head since it forked from base
// (base...head), sorted as git prints them.
func (g *Git) ChangedFiles(ctx context.Context, base, head string) ([]string, error) {
	out, err := g.Run(ctx, "diff", "--name-only", "-z", "--no-renames", base+"..."+head, "--")
	if err != nil {
		return nil, fmt.Errorf("changed files %s...%s: %w", base, head, err)
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}
