package checkloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/verify"
)

// TrailerKey is the trailer of a loop's commits: Converge-Loop: <ticket>
// (IF-4).
const TrailerKey = "Converge-Loop"

// Workspace is the git side of the loop, in the repository it was started
// in (IF-4).
type Workspace interface {
	// Dir is the repository's top level, where agents and checks run.
	Dir() string
	// Snapshot reads HEAD and identifies the work tree's content: the
	// tree object of every tracked and untracked file, ignored files
	// aside. Committing changes neither; any edit changes the tree.
	Snapshot(ctx context.Context) (head, tree string, err error)
	// Changed lists the paths that differ between two snapshot trees,
	// sorted.
	Changed(ctx context.Context, from, to string) ([]string, error)
	// TestAware names the files whose code, not a test, the change
	// between two snapshot trees makes behave differently under a test
	// runner (LOOP-6), each with why.
	TestAware(ctx context.Context, from, to string) ([]string, error)
	// Undo puts HEAD, the index and the work tree back at head, removing
	// untracked files (ignored ones stay).
	Undo(ctx context.Context, head string) error
	// Commit commits the whole work tree as one commit on top of base
	// (commits an agent made itself are folded in), with the trailer
	// Converge-Loop: ticket. It is idempotent: when HEAD already is that
	// ticket's commit, it is returned.
	Commit(ctx context.Context, ticket, message, base string) (sha string, err error)
}

// GitWorkspace is the Workspace on a local git repository.
type GitWorkspace struct {
	repo.Local
}

var _ Workspace = (*GitWorkspace)(nil)

// OpenWorkspace opens the git repository that dir is in, at its top
// level.
func OpenWorkspace(ctx context.Context, dir string) (*GitWorkspace, error) {
	l, err := repo.OpenLocal(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &GitWorkspace{Local: l}, nil
}

// Snapshot writes the work tree into a scratch index, never the real one.
func (w *GitWorkspace) Snapshot(ctx context.Context) (string, string, error) {
	head, err := w.Git.HeadSHA(ctx)
	if err != nil {
		return "", "", fmt.Errorf("read HEAD: %w", err)
	}
	gitDir, err := w.Git.Run(ctx, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", "", fmt.Errorf("snapshot: %w", err)
	}
	gitDir = strings.TrimSpace(gitDir)
	idx := filepath.Join(gitDir, "converge-loop.index")
	defer os.Remove(idx)
	// The real index's stat data spares re-hashing unchanged files.
	if err := copyFile(filepath.Join(gitDir, "index"), idx); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("snapshot: %w", err)
	}
	g := w.Git.WithEnv("GIT_INDEX_FILE=" + idx)
	if _, err := g.Run(ctx, "add", "-A", "--", "."); err != nil {
		return "", "", fmt.Errorf("snapshot: %w", err)
	}
	tree, err := g.Run(ctx, "write-tree")
	if err != nil {
		return "", "", fmt.Errorf("snapshot: %w", err)
	}
	return head, strings.TrimSpace(tree), nil
}

func (w *GitWorkspace) Changed(ctx context.Context, from, to string) ([]string, error) {
	return w.ChangedPaths(ctx, from, to)
}

func (w *GitWorkspace) TestAware(ctx context.Context, from, to string) ([]string, error) {
	if from == to {
		return nil, nil
	}
	out, err := w.Git.Run(ctx, "diff-tree", "-p", "-r", "--no-renames", "--no-ext-diff", "--no-textconv", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("test-aware code %s..%s: %w", from, to, err)
	}
	d, err := verify.ParseDiff(out)
	if errors.Is(err, verify.ErrTooLarge) {
		// Fail closed: a change too large to read is not shown clean.
		return []string{"(the change is too large to read for code that behaves differently under a test runner)"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("test-aware code: %w", err)
	}
	var names []string
	for _, v := range verify.TestAwareChanges(d) {
		names = append(names, v.Path+" (behaves differently under a test runner)")
	}
	return names, nil
}

func (w *GitWorkspace) Undo(ctx context.Context, head string) error {
	if err := w.ResetHard(ctx, head); err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	return nil
}

func (w *GitWorkspace) Commit(ctx context.Context, ticket, message, base string) (string, error) {
	if err := w.OnBranch(ctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	head, err := w.Git.HeadSHA(ctx)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if t, err := w.Git.Run(ctx, "log", "-1", "--format=%(trailers:key="+TrailerKey+",valueonly)", head); err == nil && strings.TrimSpace(t) == ticket {
		return head, nil
	}
	if head != base {
		// The agent committed: its commits are folded into this one.
		if _, err := w.Git.Run(ctx, "reset", "--soft", "--quiet", base); err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
	}
	sha, err := w.Git.Commit(ctx, repo.CommitOptions{
		Message:     message,
		Trailers:    []repo.Trailer{{Key: TrailerKey, Value: ticket}},
		AuthorName:  w.Author,
		AuthorEmail: w.Email,
	})
	if errors.Is(err, repo.ErrNothingToCommit) {
		return base, nil
	}
	return sha, err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
