package prwork

import (
	"context"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/text"
)

var _ prloop.Classifier = (*GitWorkspace)(nil)

// ClassifyBorderline runs the classifier's judge (PR-S5) as the recap's
// runs: in the worktree, read-only by its task, with the agents' scrubbed
// environment and budget unless the judge sets its own, and with the
// repository's review instructions as pr's base has them.
func (w *GitWorkspace) ClassifyBorderline(ctx context.Context, pr *forge.PullRequest, j *classify.Judge, req classify.Request) (classify.Answer, error) {
	if j != nil {
		jj := *j
		if jj.Env == nil {
			jj.Env = w.AgentEnv
		}
		if jj.Budget <= 0 {
			jj.Budget = w.Budget
		}
		if jj.Workdir == "" && pr != nil {
			// The judge may read the files: a waiting run holds no
			// worktree, so it gets one at the PR's head.
			if _, err := w.useWorktree(ctx, pr); err != nil {
				return classify.Answer{}, err
			}
			jj.Workdir = w.worktree.Dir
		}
		if jj.Instructions == "" {
			jj.Instructions = w.baseInstructions(ctx, pr)
		}
		j = &jj
	}
	return j.Run(ctx, req)
}

// baseInstructions are the review instructions file the local review
// reads (review_instructions), as the PR's base branch has it: the judge
// decides what gets fixed, so a pull request does not get to rewrite the
// conventions it is classified by. "" when the base has none or it cannot
// be read: the judge classifies without them.
func (w *GitWorkspace) baseInstructions(ctx context.Context, pr *forge.PullRequest) string {
	if w.clone == nil || pr == nil || pr.BaseRef == "" {
		return ""
	}
	path := ReviewInstructionsFile
	if w.Reviewer != nil && w.Reviewer.InstructionsPath != "" {
		path = w.Reviewer.InstructionsPath
	}
	// cat-file blob: a directory or a missing path is no instructions.
	out, err := w.clone.Run(ctx, "cat-file", "blob", "refs/remotes/origin/"+pr.BaseRef+":"+path)
	if err != nil {
		return ""
	}
	return text.Clip(out, maxInstructions)
}
