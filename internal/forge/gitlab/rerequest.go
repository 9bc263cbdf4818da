package gitlab

import (
	"context"
	"net/http"

	"github.com/convergeloop/converge/internal/forge"
)

// A reviewer who finished a review (state reviewed, approved,
// requested_changes, unapproved) stays among a merge request's reviewers,
// and GitLab asks nothing of a reviewer_ids list that already holds them;
// the PR loop asks the review bot for a new review on every new head
// (PR-O5). RequestReviews asks such a reviewer anew as a person does in
// GitLab's UI without the re-request button: it removes them from the
// reviewers, then adds them again, which GitLab reads as a new request
// (for GitLab Duo, a new review). A reviewer whose review is still pending
// (unreviewed, review_started) is left alone: asking again would start a
// second review of the same head (PR-S1).

// reviewFinished reports whether userID is a reviewer of ref whose
// review is over.
func (c *Client) reviewFinished(ctx context.Context, ref forge.PRRef, userID int64) (bool, error) {
	var rs []reviewerState
	if _, err := c.do(ctx, http.MethodGet, mrPath(ref)+"/reviewers", nil, &rs); err != nil {
		return false, err
	}
	for _, r := range rs {
		if r.User.ID == userID {
			return !pendingReview(r.State), nil
		}
	}
	return false, nil
}

// emptyIfNil keeps an empty reviewer list a JSON array ([]), which
// removes every reviewer, rather than null.
func emptyIfNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
