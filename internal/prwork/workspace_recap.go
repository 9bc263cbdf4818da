package prwork

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/repo"
)

var _ prloop.Recapper = (*GitWorkspace)(nil)

// Recap asks the workspace's recap judge for the verdict (PR-G2). Without
// a judge the verdict is a HAND-OFF that says so.
func (w *GitWorkspace) Recap(ctx context.Context, in recap.Input) (recap.Verdict, error) {
	j := w.RecapJudge
	if j != nil && j.Env == nil {
		jj := *j
		jj.Env = w.AgentEnv
		if jj.Budget <= 0 {
			jj.Budget = w.Budget
		}
		if jj.Workdir == "" && w.worktree != nil {
			jj.Workdir = w.worktree.Dir
		}
		j = &jj
	}
	return j.Run(ctx, in)
}

var _ prloop.RecapScoper = (*GitWorkspace)(nil)

// RecapScope reads the PR's original scope into in (PR-G2): the files,
// with their added and deleted lines, and the diff of the PR's base
// (merge base with the base branch) to in.ScopeHead, the head before the
// loop's first commit; the diff clipped by file (recap.ClipDiff).
func (w *GitWorkspace) RecapScope(ctx context.Context, pr *forge.PullRequest, in *recap.Input) error {
	// The recap judge that runs next reads the files here (Recap).
	if made, err := w.useWorktree(ctx, pr); err != nil {
		return err
	} else if !made {
		if err := w.fetch(ctx, pr); err != nil {
			return err
		}
	}
	head := in.ScopeHead
	if head == "" {
		head = pr.HeadSHA
	}
	rng := "origin/" + pr.BaseRef + "..." + head
	stat, err := w.worktree.Run(ctx, "diff", "--numstat", "--no-renames", "--no-color", "--no-ext-diff", rng, "--")
	if err != nil {
		return fmt.Errorf("base diff %s: %w", rng, err)
	}
	files, lines := []recap.FileStat{}, 0
	for _, l := range strings.Split(strings.TrimSpace(stat), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		// A binary file's counts are "-": it counts as changed, no lines.
		add, _ := strconv.Atoi(f[0])
		del, _ := strconv.Atoi(f[1])
		files = append(files, recap.FileStat{Path: f[2], Added: add, Deleted: del})
		lines += add + del
	}
	diff, err := w.worktree.Run(ctx, "diff", "--no-renames", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", rng, "--")
	if err != nil {
		return fmt.Errorf("base diff %s: %w", rng, err)
	}
	in.ScopeHead, in.ScopeFiles, in.BaseDiffLines = head, files, lines
	in.BaseDiff = recap.ClipDiff(diff, recap.MaxDiff, recap.MaxDiffFile)
	return nil
}

// Revert makes one commit on the PR's head that reverts the given loop
// commits (newest first), carrying the loop's round trailer and naming the
// reverted rounds, runs the tests and pushes it when they pass (never a
// force-push). A revert that does not apply cleanly makes no commit.
func (w *GitWorkspace) Revert(ctx context.Context, pr *forge.PullRequest, round int, commits []string, rounds []int) (prloop.FixResult, error) {
	res := prloop.FixResult{Round: round}
	if err := w.atHead(ctx, pr); err != nil {
		return res, err
	}
	for i := len(commits) - 1; i >= 0; i-- {
		if _, err := w.worktree.Run(ctx, "revert", "--no-commit", "--no-edit", commits[i]); err != nil {
			w.logf("the revert of %s does not apply cleanly: %v", commits[i], err)
			_, _ = w.worktree.Run(ctx, "revert", "--abort")
			return res, w.reset(ctx, pr.HeadSHA)
		}
	}
	if test := w.testCommand(ctx, pr); len(test) > 0 {
		tr, err := w.runTests(ctx, test)
		if err != nil {
			return res, err
		}
		res.TestsPassed = tr.ok()
		if !tr.ok() {
			w.logf("the revert of rounds %v fails the tests: %s", rounds, strings.Join(tr.excerpt(nil), " | "))
			return res, w.reset(ctx, pr.HeadSHA)
		}
	} else {
		res.TestsPassed = true
	}
	var names []string
	for _, n := range rounds {
		names = append(names, fmt.Sprint(n))
	}
	msg := fmt.Sprintf("converge: revert drifted rounds %s (recap gate)\n\nThe recap judge found rounds %s out of the PR's scope (PR-G2);\nthis commit reverts their commits:\n\n", strings.Join(names, ", "), strings.Join(names, ", "))
	for _, c := range commits {
		msg += "- " + c + "\n"
	}
	msg += fmt.Sprintf("\n%s: %d\n", prloop.CommitTrailer, round)
	sha, err := w.commit(ctx, repo.CommitOptions{Message: msg, AuthorName: w.Author, AuthorEmail: w.Email})
	if errors.Is(err, repo.ErrNothingToCommit) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if err := w.push(ctx, pr); err != nil {
		return res, err
	}
	res.CommitSHA = sha
	add, del, err := w.worktree.DiffLines(ctx, sha+"~1", sha)
	if err != nil {
		return res, err
	}
	res.LinesChanged = add + del
	return res, nil
}
