package repo

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Local is a run's place in the user's own repository (converge loop,
// converge plan): the repository at its top level, the branch the run
// works on, and the author of the run's commits.
type Local struct {
	Git *Git
	// Branch is the branch the run works on ("" when HEAD is detached): an
	// agent that switched branches is put back on it.
	Branch string
	// Author and Email name the commits' author (IF-4); empty means
	// DefaultAuthorName and DefaultAuthorEmail.
	Author, Email string
}

// OpenLocal opens the git repository dir is in, at its top level, on the
// branch HEAD names; its commits are converge's until UseRepoIdentity.
// Its Git is pinned to the repository's git directory as found now.
func OpenLocal(ctx context.Context, dir string) (Local, error) {
	g, err := (&Git{Dir: dir}).PinWorktree(ctx)
	if err != nil {
		return Local{}, fmt.Errorf("%s is not in a git repository: %w", dir, err)
	}
	// Pinned to the git directory found before any agent ran (SEC-8).
	g.Dir = g.WorkTree
	l := Local{Git: g}
	if b, err := l.Git.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		l.Branch = strings.TrimSpace(b)
	}
	return l, nil
}

// UseRepoIdentity makes the repository's configured user.name and
// user.email the author of the run's commits (IF-4), where it has them.
func (l *Local) UseRepoIdentity(ctx context.Context) {
	n, _ := l.Git.Run(ctx, "config", "user.name")
	e, _ := l.Git.Run(ctx, "config", "user.email")
	l.Author, l.Email = strings.TrimSpace(n), strings.TrimSpace(e)
}

// Dir is the repository's top level.
func (l *Local) Dir() string { return l.Git.Dir }

// OnBranch puts HEAD back on the run's branch when an agent switched it,
// keeping the work tree as it is.
func (l *Local) OnBranch(ctx context.Context) error {
	if l.Branch == "" {
		return nil
	}
	if cur, _ := l.Git.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD"); strings.TrimSpace(cur) == l.Branch {
		return nil
	}
	_, err := l.Git.Run(ctx, "symbolic-ref", "HEAD", "refs/heads/"+l.Branch)
	return err
}

// ResetHard puts the run's branch, the index and the work tree at commit,
// removing untracked files (ignored ones stay).
func (l *Local) ResetHard(ctx context.Context, commit string) error {
	if err := l.OnBranch(ctx); err != nil {
		return err
	}
	if _, err := l.Git.Run(ctx, "reset", "--hard", "--quiet", commit); err != nil {
		return err
	}
	_, err := l.Git.Run(ctx, "clean", "-fdq")
	return err
}

// ChangedPaths are the paths that differ between two commits or trees,
// sorted; none (not nil) when they are the same.
func (l *Local) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	paths := []string{}
	if from == to {
		return paths, nil
	}
	out, err := l.Git.Run(ctx, "diff-tree", "-r", "--no-renames", "--name-only", "-z", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("changed paths %s..%s: %w", from, to, err)
	}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths, nil
}
