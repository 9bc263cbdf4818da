package copilot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
)

// FuzzPR_O3_CopilotBody: whatever a Copilot review's body says, reading
// it is fail-closed: clean only with no comment anywhere, a zero count in
// its own words and no error phrase; findings only when the body's
// count, the review's comments and its threads agree; the same body
// quoted (every line behind "> ") is no signal; and a body that also
// says Copilot could not review is never clean.
func FuzzPR_O3_CopilotBody(f *testing.F) {
	for _, s := range []string{
		"Copilot reviewed 2 out of 2 changed files in this pull request and generated no new comments.", "**Findings:** None",
		"Comments generated: 0 new", "Copilot reviewed 2 out of 2 changed files and generated 2 comments.",
		"## Overview\nThis PR makes quota exceeded errors retryable.\n\nCopilot reviewed 3 files and generated 1 comment.",
		"generated no new comments\n\n> Copilot encountered an error and was unable to review this pull request.",
		"generated no new comments\n\nUpdate: generated 1 comment", "```\ngenerated no new comments\n```", "> generated no new comments",
		"Copilot encountered an error and was unable to review this pull request.", "Copilot wasn't able to review any files in this pull request.",
		"You have run out of premium requests for Copilot code review. generated no new comments", "Copilot code review is temporarily unavailable.",
		"Copilot reviewed 0 out of 3 changed files in this pull request and generated no comments.", "", "LGTM",
		"~~~\n```\n~~~\ngenerated no new comments", "GENERATED NO NEW COMMENTS\r\n", "generated no new comments\n```",
	} {
		for _, n := range []uint8{0, 1, 2} {
			f.Add(s, n, n)
		}
	}
	f.Fuzz(func(t *testing.T, body string, count, visible uint8) {
		read := func(body string) review.Signal {
			pr := &forge.PullRequest{HeadSHA: "h1"}
			for i := range int(visible % 8) {
				pr.Threads = append(pr.Threads, forge.Thread{ID: fmt.Sprintf("T%d", i), Comments: []forge.Comment{{Author: "Copilot", Body: "x", ReviewID: "R"}}})
			}
			r := forge.Review{ID: "R", Author: "copilot-pull-request-reviewer", State: forge.ReviewCommented, CommitSHA: "h1", Body: body, CommentCount: int(count % 8)}
			s, why := New().Read(r, pr)
			if s != review.Clean && s != review.Findings && why == "" {
				t.Fatalf("%q read %s without a why", body, s)
			}
			return s
		}
		c, v := int(count%8), int(visible%8)
		switch s := read(body); s {
		case review.Clean:
			if n, ok := statedCount(body); c != 0 || v != 0 || !ok || n != 0 || isErrorReview(body) {
				t.Fatalf("%q (count %d, visible %d) read clean", body, c, v)
			}
		case review.Findings:
			if n, _ := statedCount(body); n == 0 || n != c || n != v {
				t.Fatalf("%q (count %d, visible %d) read as findings", body, c, v)
			}
		}
		quoted := "> " + strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\n> ")
		if s := read(quoted); s != review.NoSignal {
			t.Fatalf("quoted %q read %s, want no signal", quoted, s)
		}
		// Unless an unclosed fence in body swallows it, a could-not-review
		// line is the review's own words.
		withErr := body + "\n\nCopilot wasn't able to review any files in this pull request."
		if s := read(withErr); s == review.Clean && strings.Contains(review.OwnText(withErr), "wasn't able to review") {
			t.Fatalf("%q with a could-not-review line read clean", body)
		}
	})
}

// TestPR_O3_NoFilesReviewedIsNoSignal: Copilot's answer on a PR whose
// diff is empty or unreadable, bare or in its overview wrapping, and a
// review of "0 out of 0" files, are no signal — Copilot saw nothing, so
// it found nothing proves nothing.
func TestPR_O3_NoFilesReviewedIsNoSignal(t *testing.T) {
	for _, body := range []string{
		"Copilot wasn't able to review any files in this pull request.",
		"## Pull Request Overview\n\nCopilot wasn't able to review any files in this pull request.\n\n<details>\n<summary>Files not reviewed (1)</summary>\n\n* **logo.png**: Language not supported\n</details>",
		"## Pull Request Overview\n\n### Reviewed Changes\n\nCopilot reviewed 0 out of 0 changed files in this pull request and generated no new comments.",
	} {
		r := forge.Review{ID: "R", Author: "copilot-pull-request-reviewer", State: forge.ReviewCommented, CommitSHA: "h1", Body: body}
		if s, why := New().Read(r, &forge.PullRequest{HeadSHA: "h1"}); s != review.NoSignal {
			t.Errorf("%q read %s (%s), want no signal", body, s, why)
		}
	}
}
