package prwork

import (
	"context"

	"github.com/convergeloop/converge/internal/crashpoint"
	"github.com/convergeloop/converge/internal/repo"
)

// commit commits in the run's worktree between REL-2's crash boundaries
// (package crashpoint): a crash before the commit, or after it and before
// the push, must leave the rerun one commit, not two.
func (w *GitWorkspace) commit(ctx context.Context, opts repo.CommitOptions) (string, error) {
	crashpoint.Hit("git commit: before")
	sha, err := w.worktree.Commit(ctx, opts)
	crashpoint.Hit("git commit: after")
	return sha, err
}
