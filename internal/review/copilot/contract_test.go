package copilot_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/review/reviewbottest"
)

// TestReviewBotContract: Copilot passes the contract every review bot
// passes (reviewbottest), with samples in its own format as GitHub's
// GraphQL reports them.
func TestReviewBotContract(t *testing.T) {
	reviewbottest.Run(t, func(t *testing.T) reviewbottest.Harness {
		return reviewbottest.Harness{Bot: copilot.New(), Fixture: &copilotFixture{}}
	})
}

// copilotFixture writes Copilot's reviews: always COMMENTED, by its
// GraphQL login, the count in the body, the inline comments by "Copilot"
// in threads rooted in the review.
type copilotFixture struct{ ids reviewbottest.Counter }

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const cleanBody = "## Pull Request Overview\n\nThis PR adds retries to the fetcher.\n\n### Reviewed Changes\n\nCopilot reviewed 2 out of 2 changed files in this pull request and generated no new comments."

func (f *copilotFixture) Logins() []string {
	return append(copilot.DefaultAllowlist(), "Copilot")
}

func (f *copilotFixture) LookAlikes() []string {
	return []string{"copilot-fan", "copilot-pull-request-reviewer-bot", "dependabot[bot]", "github-actions[bot]", "GitLabDuo", "octo-reviewer"}
}

func (f *copilotFixture) review(head, body string, count int) forge.Review {
	return forge.Review{
		ID: f.ids.String("PRR_"), Author: "copilot-pull-request-reviewer", State: forge.ReviewCommented,
		CommitSHA: head, SubmittedAt: at, Body: body, CommentCount: count,
	}
}

func (f *copilotFixture) sample(name, head, body string, count int) reviewbottest.Sample {
	r := f.review(head, body, count)
	s := reviewbottest.Sample{Name: name, Review: r}
	for i := range count {
		id := f.ids.Next()
		s.Threads = append(s.Threads, forge.Thread{
			ID: fmt.Sprintf("PRRT_%d", id), Path: "fetch.go", Line: 10 + i,
			Comments: []forge.Comment{{
				ID: fmt.Sprintf("PRRC_%d", id), DatabaseID: id, Author: "Copilot", Path: "fetch.go",
				Body: "The retry loop never stops on a cancelled context.", CreatedAt: at, ReviewID: r.ID, OriginalCommit: head,
			}},
		})
	}
	return s
}

func (f *copilotFixture) Clean(head string) reviewbottest.Sample {
	return f.sample("clean", head, cleanBody, 0)
}

func (f *copilotFixture) Findings(head string, n int) reviewbottest.Sample {
	return f.sample("findings", head, fmt.Sprintf("Copilot reviewed 2 out of 2 changed files in this pull request and generated %d comments.", n), n)
}

func (f *copilotFixture) Contradicted(head string, n int) reviewbottest.Sample {
	return f.sample("contradicted", head, cleanBody, n)
}

func (f *copilotFixture) Empty(head string) reviewbottest.Sample {
	return f.sample("empty", head, "", 0)
}

func (f *copilotFixture) Garbled(head string) reviewbottest.Sample {
	return f.sample("garbled", head, "Copilot reviewed \ufffd\ufffd out of 2 changed files in this pull request and generat\x00ed n\u200bo new c0mments.", 0)
}

func (f *copilotFixture) Truncated(head string) reviewbottest.Sample {
	return f.sample("truncated", head, cleanBody[:strings.Index(cleanBody, "generated")+len("generated")], 0)
}

func (f *copilotFixture) Errors(head string) []reviewbottest.Sample {
	var out []reviewbottest.Sample
	for _, b := range []string{
		"Copilot encountered an error and was unable to review this pull request. You can try again by re-requesting a review.",
		"Copilot wasn't able to review any files in this pull request.",
		"You have run out of premium requests for Copilot code review. generated no new comments",
		"Copilot code review is temporarily unavailable.",
		"Copilot reviewed 0 out of 3 changed files in this pull request and generated no comments.",
	} {
		out = append(out, f.sample(b, head, b, 0))
	}
	return out
}

func (f *copilotFixture) Hostile(head string) []reviewbottest.Sample {
	return []reviewbottest.Sample{
		f.sample("fenced", head, "```\ngenerated no new comments\n```", 0),
		f.sample("quoted", head, "> Copilot reviewed 2 out of 2 changed files in this pull request and generated no new comments.", 0),
		f.sample("clean then could not review", head, cleanBody+"\n\nCopilot wasn't able to review any files in this pull request.", 0),
		f.sample("quota beside a clean line", head, "Quota exceeded for Copilot code review.\n\ngenerated no new comments", 0),
		f.sample("no count", head, "LGTM", 0),
	}
}
