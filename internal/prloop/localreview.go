package prloop

import (
	"context"
	"errors"

	"github.com/convergeloop/converge/internal/forge"
)

// LocalReview runs the multi-angle review of the PR's head (PR-S4).
func (w *GitWorkspace) LocalReview(ctx context.Context, pr *forge.PullRequest, round int) (LocalReviewResult, error) {
	return LocalReviewResult{}, errors.New("local review: not implemented")
}
