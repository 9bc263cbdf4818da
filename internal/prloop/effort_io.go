package prloop

import (
	"context"

	"github.com/convergeloop/converge/internal/forge"
)

// localReview runs the local review of a at its effort; effort 0 is
// LocalReview.
func (l *Loop) localReview(ctx context.Context, pr *forge.PullRequest, round int, a Action) (LocalReviewResult, error) {
	if er, ok := l.Workspace.(EffortReviewer); ok && a.Effort > 0 {
		return er.LocalReviewAt(ctx, pr, round, a.Effort)
	}
	return l.Workspace.LocalReview(ctx, pr, round)
}

// EffortReviewer is a Workspace whose local review can look harder:
// LocalReviewAt with effort n > 0 reviews after n local reviews in a row
// that found structural items; effort 0 is LocalReview.
type EffortReviewer interface {
	LocalReviewAt(ctx context.Context, pr *forge.PullRequest, round, effort int) (LocalReviewResult, error)
}
