package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/crashpoint"
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
	// Commit commits every change but the paths in exclude on top of HEAD
	// with the trailer Converge-Task: ref and returns HEAD; with nothing
	// to commit it returns HEAD as it is (commits the agent made itself
	// stay).
	Commit(ctx context.Context, ref, message string, exclude []string) (string, error)
	// Changed lists the paths that differ between two commits, sorted.
	Changed(ctx context.Context, from, to string) ([]string, error)
	// Diff is `git diff from..to`, limited to paths when there are any.
	Diff(ctx context.Context, from, to string, paths []string) (string, error)
	// Unwind takes a blocked task's commits base..head off the branch,
	// keeping head at ref: HEAD goes back to base when head is still HEAD
	// and base..head changes nothing but paths; when other tasks committed
	// on top or in between, paths get their content at base back in a new
	// commit. It says which it did.
	Unwind(ctx context.Context, base, head string, paths []string, ref, taskRef, message string) (string, error)
	// TaskCommit finds the newest commit of the task ref (its trailer
	// names ref) among the branch's commits since from (first parents,
	// from excluded; HEAD alone when from is ""); ok is false when there
	// is none.
	TaskCommit(ctx context.Context, ref, from string) (c TaskCommit, ok bool, err error)
	// Repo is the repository, for the worktree pool.
	Repo() *repo.Git
}

// GitWorkspace is the Workspace on a local git repository.
type GitWorkspace struct {
	repo.Local
}

var _ Workspace = (*GitWorkspace)(nil)

// OpenWorkspace opens the git repository dir is in, at its top level.
func OpenWorkspace(ctx context.Context, dir string) (*GitWorkspace, error) {
	l, err := repo.OpenLocal(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &GitWorkspace{Local: l}, nil
}

func (w *GitWorkspace) Head(ctx context.Context) (string, error) {
	h, err := w.Git.HeadSHA(ctx)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	return h, nil
}

func (w *GitWorkspace) Reset(ctx context.Context, commit string) error {
	if err := w.ResetHard(ctx, commit); err != nil {
		return fmt.Errorf("reset to %s: %w", commit, err)
	}
	return nil
}

func (w *GitWorkspace) Repo() *repo.Git { return w.Git }

// TaskCommit is a commit of a task found on the branch: its SHA, its
// first parent, and how many commits are on top of it (0: it is HEAD).
type TaskCommit struct {
	SHA, Parent string
	Above       int
}

func (w *GitWorkspace) TaskCommit(ctx context.Context, ref, from string) (TaskCommit, bool, error) {
	args := []string{"log", "--first-parent", "--no-color", "--format=%H%x00%P%x00%(trailers:key=" + TrailerKey + ",valueonly,separator=%x01)%x1e"}
	if from == "" {
		args = append(args, "-1", "HEAD", "--")
	} else {
		args = append(args, from+"..HEAD", "--")
	}
	out, err := w.Git.Run(ctx, args...)
	if err != nil {
		return TaskCommit{}, false, fmt.Errorf("read the task trailers: %w", err)
	}
	for above, rec := range strings.Split(strings.TrimRight(out, "\n\x1e"), "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(strings.TrimRight(rec, "\n"), "\x00", 3)
		if len(f) != 3 {
			return TaskCommit{}, false, fmt.Errorf("read the task trailers: unexpected %q", rec)
		}
		parents := strings.Fields(f[1])
		if len(parents) > 0 && slices.Contains(strings.Split(f[2], "\x01"), ref) {
			return TaskCommit{SHA: f[0], Parent: parents[0], Above: above}, true, nil
		}
	}
	return TaskCommit{}, false, nil
}

func (w *GitWorkspace) Commit(ctx context.Context, ref, message string, exclude []string) (string, error) {
	if err := w.OnBranch(ctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	_, err := w.Git.Commit(ctx, repo.CommitOptions{
		Message:     message,
		Trailers:    []repo.Trailer{{Key: TrailerKey, Value: ref}},
		AuthorName:  w.Author,
		AuthorEmail: w.Email,
		Exclude:     exclude,
	})
	if err != nil && !errors.Is(err, repo.ErrNothingToCommit) {
		return "", err
	}
	// REL-2's crash boundary after a task's commit, before the store
	// records it (named by the task: "plan commit b: after").
	crashpoint.Hit("plan commit " + ref[strings.LastIndex(ref, ".")+1:] + ": after")
	return w.Head(ctx)
}

func (w *GitWorkspace) Changed(ctx context.Context, from, to string) ([]string, error) {
	return w.ChangedPaths(ctx, from, to)
}

func (w *GitWorkspace) Diff(ctx context.Context, from, to string, paths []string) (string, error) {
	args := []string{"diff", "--no-color", "--no-ext-diff", from + ".." + to}
	if len(paths) > 0 {
		args = append(args, "--")
		for _, p := range paths {
			args = append(args, ":(top,literal)"+strings.TrimSuffix(p, "/"))
		}
	}
	out, err := w.Git.Run(ctx, args...)
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

func (w *GitWorkspace) Unwind(ctx context.Context, base, head string, paths []string, ref, taskRef, message string) (string, error) {
	if err := w.Keep(ctx, ref, head); err != nil {
		return "", err
	}
	cur, err := w.Head(ctx)
	if err != nil {
		return "", err
	}
	changed, err := w.Changed(ctx, base, head)
	if err != nil {
		return "", err
	}
	// Back to base only when nothing but the task's own change lies
	// between: under --parallel another task may have committed there.
	if cur == head && !slices.ContainsFunc(changed, func(c string) bool { return !Intersect(paths, []string{c}) }) {
		return "the branch is back at " + base[:min(12, len(base))], w.Reset(ctx, base)
	}
	// Other tasks committed on top, or in between: the task's paths get
	// their content at base back, which leaves the others' work (on other
	// paths) standing.
	if err := w.Reset(ctx, cur); err != nil {
		return "", err
	}
	for _, p := range paths {
		lit := ":(top,literal)" + strings.TrimSuffix(p, "/")
		if _, err := w.Git.Run(ctx, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", lit); err != nil {
			return "", fmt.Errorf("unwind %s: %w", p, err)
		}
		if out, err := w.Git.Run(ctx, "ls-tree", "-r", "--name-only", base, "--", lit); err != nil {
			return "", fmt.Errorf("unwind %s: %w", p, err)
		} else if strings.TrimSpace(out) != "" {
			if _, err := w.Git.Run(ctx, "checkout", base, "--", lit); err != nil {
				return "", fmt.Errorf("unwind %s: %w", p, err)
			}
		} else if err := os.RemoveAll(filepath.Join(w.Dir(), filepath.FromSlash(strings.TrimSuffix(p, "/")))); err != nil {
			return "", fmt.Errorf("unwind %s: %w", p, err)
		}
	}
	sha, err := w.Commit(ctx, taskRef, message, nil)
	if err != nil {
		return "", err
	}
	return "its files are restored in " + sha[:min(12, len(sha))], nil
}
