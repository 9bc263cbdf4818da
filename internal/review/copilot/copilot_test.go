package copilot

import (
	"fmt"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
)

// TestPR_O3_ReadingIsFailClosed: only a recognized no-findings line with
// zero comments everywhere is clean; findings only when they are visible
// and match the count; everything else is no signal or not settled.
func TestPR_O3_ReadingIsFailClosed(t *testing.T) {
	withThreads := func(n int) *forge.PullRequest {
		pr := &forge.PullRequest{HeadSHA: "h1"}
		for i := range n {
			pr.Threads = append(pr.Threads, forge.Thread{ID: fmt.Sprintf("T%d", i), Comments: []forge.Comment{{Author: "Copilot", Body: "x", ReviewID: "R"}}})
		}
		return pr
	}
	tests := []struct {
		body    string
		count   int // the review's own comments.totalCount
		visible int // threads rooted in it
		want    review.Signal
	}{
		{"Copilot reviewed 2 out of 2 changed files in this pull request and generated no new comments.", 0, 0, review.Clean},
		{"**Findings:** None", 0, 0, review.Clean},
		{"Comments generated: 0 new", 0, 0, review.Clean},
		{"Copilot reviewed 2 out of 2 changed files and generated 2 comments.", 2, 2, review.Findings},
		{"## Overview\nThis PR makes quota exceeded errors retryable.\n\nCopilot reviewed 3 files and generated 1 comment.", 1, 1, review.Findings},
		{"generated no new comments\n\n> Copilot encountered an error and was unable to review this pull request.", 0, 0, review.Clean},
		// Not settled: GitHub shows the review before its comments.
		{"Copilot reviewed 2 out of 2 changed files and generated 2 comments.", 0, 0, review.Unsettled},
		{"Copilot reviewed 2 out of 2 changed files and generated 2 comments.", 2, 0, review.Unsettled},
		{"Copilot reviewed 2 out of 2 changed files and generated no new comments.", 1, 1, review.Unsettled},
		// A current non-zero count beats an older zero (PR-O4).
		{"generated no new comments\n\nUpdate: generated 1 comment", 1, 1, review.Findings},
		// A count inside a fence or a quote is not the review's own.
		{"```\ngenerated no new comments\n```", 0, 0, review.NoSignal},
		{"> generated no new comments", 0, 0, review.NoSignal},
		{"Copilot encountered an error and was unable to review this pull request.", 0, 0, review.NoSignal},
		{"Copilot wasn't able to review any files in this pull request.", 0, 0, review.NoSignal},
		{"You have run out of premium requests for Copilot code review. generated no new comments", 0, 0, review.NoSignal},
		{"Copilot code review is temporarily unavailable.", 0, 0, review.NoSignal},
		{"Copilot reviewed 0 out of 3 changed files in this pull request and generated no comments.", 0, 0, review.NoSignal},
		{"", 0, 0, review.NoSignal},
		{"LGTM", 0, 0, review.NoSignal},
	}
	for _, tt := range tests {
		r := forge.Review{ID: "R", Author: "copilot-pull-request-reviewer", State: forge.ReviewCommented, CommitSHA: "h1", Body: tt.body, CommentCount: tt.count}
		if got, why := New().Read(r, withThreads(tt.visible)); got != tt.want {
			t.Errorf("%q (count %d, visible %d): %s (%s), want %s", tt.body, tt.count, tt.visible, got, why, tt.want)
		}
	}
}

// TestPR_O2_CopilotOnEverySurface: Copilot's logins on every API surface,
// and only those.
func TestPR_O2_CopilotOnEverySurface(t *testing.T) {
	b := New()
	for _, l := range []string{"Copilot", "copilot-pull-request-reviewer", "copilot-pull-request-reviewer[bot]", "copilot[bot]", "github-copilot[bot]"} {
		if !b.Is(l) {
			t.Errorf("%s is Copilot", l)
		}
	}
	for _, l := range []string{"copilot-fan", "dependabot[bot]", "", "octo-reviewer"} {
		if b.Is(l) {
			t.Errorf("%s is not Copilot", l)
		}
	}
}
