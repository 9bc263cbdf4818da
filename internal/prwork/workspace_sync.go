package prwork

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
)

var _ prloop.BaseSyncer = (*GitWorkspace)(nil)

// SyncBase merges the PR's base into its head in the run's worktree
// (PR-S14): a merge commit whose first parent is the head, carrying the
// round trailer, tested with the repository's own test command and pushed
// only when green, never forced. A merge that conflicts here (the base
// moved again since the forge said BEHIND), or that turns the tests red,
// is dropped and makes no commit; SyncWhy says why. The merge brings the
// base's lines, not the loop's: it adds nothing to the loop's diff
// (PR-T6) and no hunks for the oscillation check (PR-S8).
func (w *GitWorkspace) SyncBase(ctx context.Context, pr *forge.PullRequest, round int) (prloop.FixResult, error) {
	res := prloop.FixResult{Round: round, Sync: true}
	if err := w.atHead(ctx, pr); err != nil {
		return res, err
	}
	// git merge wants an identity even when it stops before committing;
	// the commit below sets its own.
	name, email := cmp.Or(w.Author, repo.DefaultAuthorName), cmp.Or(w.Email, repo.DefaultAuthorEmail)
	_, err := w.worktree.Run(ctx, "-c", "user.name="+name, "-c", "user.email="+email,
		"merge", "--no-ff", "--no-commit", "--no-edit", "origin/"+pr.BaseRef)
	if e := (*repo.Error)(nil); errors.As(err, &e) && e.ExitCode == 1 {
		w.logf("merging %s into %s conflicts: %v", pr.BaseRef, pr.HeadRef, err)
		_, _ = w.worktree.Run(ctx, "merge", "--abort")
		res.SyncWhy = fmt.Sprintf("%s does not merge cleanly into %s; merge it by hand", pr.BaseRef, pr.HeadRef)
		return res, w.reset(ctx, pr.HeadSHA)
	}
	if err != nil {
		return res, errors.Join(fmt.Errorf("merge %s: %w", pr.BaseRef, err), w.reset(ctx, pr.HeadSHA))
	}
	if test := w.testCommand(ctx, pr); len(test) > 0 {
		tr, err := w.runTests(ctx, test)
		if err != nil {
			return res, err
		}
		if !tr.ok() {
			res.SyncWhy = "the tests fail after merging " + pr.BaseRef + ": " + strings.Join(tr.excerpt(nil), " | ")
			w.logf("base sync not pushed: %s", res.SyncWhy)
			return res, w.reset(ctx, pr.HeadSHA)
		}
	}
	res.TestsPassed = true
	msg := fmt.Sprintf("converge: merge %s into %s (base sync)\n\nThe branch was BEHIND %s and merges without conflicts (sync_base);\nthe tests pass on the merge.\n\n%s: %d\n",
		pr.BaseRef, pr.HeadRef, pr.BaseRef, prloop.CommitTrailer, round)
	sha, err := w.commit(ctx, repo.CommitOptions{Message: msg, AuthorName: w.Author, AuthorEmail: w.Email})
	if errors.Is(err, repo.ErrNothingToCommit) {
		// The base's commits change nothing the branch lacks: a merge
		// commit would only move the head.
		res.SyncWhy = "merging " + pr.BaseRef + " changes no file"
		return res, w.reset(ctx, pr.HeadSHA)
	}
	if err != nil {
		return res, err
	}
	if err := w.push(ctx, pr); err != nil {
		return res, err
	}
	res.CommitSHA = sha
	return res, nil
}
