package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/convergeloop/converge/internal/repo"
)

// Workspace is the git side of a plan run, in the repository it was
// started in, on its current branch (IF-4).
type Workspace interface {
	// Dir is the repository's top level, where agents run.
	Dir() string
	Head(ctx context.Context) (string, error)
	// Reset puts HEAD, the index and the work tree at commit, untracked
	// files removed (ignored ones stay), on the run's branch.
	Reset(ctx context.Context, commit string) error
	// Commit commits every change on top of HEAD with the trailer
	// Converge-Task: ref and returns HEAD; with nothing to commit it
	// returns HEAD as it is (commits the agent made itself stay).
	Commit(ctx context.Context, ref, message string) (string, error)
	// Changed lists the paths that differ between two commits, sorted.
	Changed(ctx context.Context, from, to string) ([]string, error)
	// Diff is `git diff from..to`.
	Diff(ctx context.Context, from, to string) (string, error)
	// Keep points ref at sha, so work taken off the branch stays.
	Keep(ctx context.Context, ref, sha string) error
}

// GitWorkspace is the Workspace on a local git repository.
type GitWorkspace struct {
	Git *repo.Git
	// Branch is the branch the run works on ("" when HEAD is detached):
	// an agent that switched branches is put back on it.
	Branch string
	// Author and Email name the commits' author (IF-4); empty means
	// repo.DefaultAuthorName and repo.DefaultAuthorEmail.
	Author, Email string
}

var _ Workspace = (*GitWorkspace)(nil)

// OpenWorkspace opens the git repository dir is in, at its top level.
func OpenWorkspace(ctx context.Context, dir string) (*GitWorkspace, error) {
	top, err := (&repo.Git{Dir: dir}).Run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git repository: %w", dir, err)
	}
	w := &GitWorkspace{Git: &repo.Git{Dir: strings.TrimSpace(top)}}
	if b, err := w.Git.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		w.Branch = strings.TrimSpace(b)
	}
	return w, nil
}

func (w *GitWorkspace) Dir() string { return w.Git.Dir }

func (w *GitWorkspace) Head(ctx context.Context) (string, error) {
	h, err := w.Git.HeadSHA(ctx)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	return h, nil
}

func (w *GitWorkspace) branch(ctx context.Context) error {
	if w.Branch == "" {
		return nil
	}
	if cur, _ := w.Git.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD"); strings.TrimSpace(cur) == w.Branch {
		return nil
	}
	_, err := w.Git.Run(ctx, "symbolic-ref", "HEAD", "refs/heads/"+w.Branch)
	return err
}

func (w *GitWorkspace) Reset(ctx context.Context, commit string) error {
	for _, args := range [][]string{{"reset", "--hard", "--quiet", commit}, {"clean", "-fdq"}} {
		if err := w.branch(ctx); err != nil {
			return fmt.Errorf("reset to %s: %w", commit, err)
		}
		if _, err := w.Git.Run(ctx, args...); err != nil {
			return fmt.Errorf("reset to %s: %w", commit, err)
		}
	}
	return nil
}

func (w *GitWorkspace) Commit(ctx context.Context, ref, message string) (string, error) {
	if err := w.branch(ctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	_, err := w.Git.Commit(ctx, repo.CommitOptions{
		Message:     message,
		Trailers:    []repo.Trailer{{Key: TrailerKey, Value: ref}},
		AuthorName:  w.Author,
		AuthorEmail: w.Email,
	})
	if err != nil && !errors.Is(err, repo.ErrNothingToCommit) {
		return "", err
	}
	return w.Head(ctx)
}

func (w *GitWorkspace) Changed(ctx context.Context, from, to string) ([]string, error) {
	if from == to {
		return []string{}, nil
	}
	out, err := w.Git.Run(ctx, "diff", "--name-only", "-z", "--no-renames", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("changed paths %s..%s: %w", from, to, err)
	}
	paths := []string{}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func (w *GitWorkspace) Diff(ctx context.Context, from, to string) (string, error) {
	out, err := w.Git.Run(ctx, "diff", "--no-color", "--no-ext-diff", from+".."+to)
	if err != nil {
		return "", fmt.Errorf("diff %s..%s: %w", from, to, err)
	}
	return out, nil
}

func (w *GitWorkspace) Keep(ctx context.Context, ref, sha string) error {
	if _, err := w.Git.Run(ctx, "update-ref", ref, sha); err != nil {
		return fmt.Errorf("keep %s at %s: %w", ref, sha, err)
	}
	return nil
}

// fileBodies reads a task's files for a re-dispatch with more context,
// each clipped, and no more than budget bytes in all; directories are
// named, not read.
func fileBodies(dir string, files []string, budget int) []FileBody {
	var out []FileBody
	for _, f := range files {
		if strings.HasSuffix(f, "/") || budget <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if errors.Is(err, os.ErrNotExist) {
			out = append(out, FileBody{Path: f, Missing: true})
			continue
		}
		if err != nil {
			continue
		}
		s := string(b)
		if n := min(len(s), 8<<10, budget); n < len(s) {
			s = s[:n] + "\n… (clipped)"
		}
		budget -= len(s)
		out = append(out, FileBody{Path: f, Content: s})
	}
	return out
}
