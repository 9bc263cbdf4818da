package prloop

import (
	"context"

	"github.com/convergeloop/converge/internal/classify"
)

var _ Classifier = (*GitWorkspace)(nil)

// ClassifyBorderline runs the classifier's judge (PR-S5) as the recap's
// runs: in the worktree, read-only by its task, with the agents' scrubbed
// environment and budget unless the judge sets its own.
func (w *GitWorkspace) ClassifyBorderline(ctx context.Context, j *classify.Judge, req classify.Request) (classify.Answer, error) {
	if j != nil {
		jj := *j
		if jj.Env == nil {
			jj.Env = w.AgentEnv
		}
		if jj.Budget <= 0 {
			jj.Budget = w.Budget
		}
		if jj.Workdir == "" && w.worktree != nil {
			jj.Workdir = w.worktree.Dir
		}
		j = &jj
	}
	return j.Run(ctx, req)
}
