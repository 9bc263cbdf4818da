package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_T13_ChangeRequestIsWorkAndBlocksSuccess: a trusted human's
// review that requests changes is a finding of the round (its body, keyed
// by the review), fixed and answered once with a top-level comment that
// quotes it; and while that review still requests changes the run cannot
// succeed: a clean review of the fixed head ends handed-off, naming it.
func TestPR_T13_ChangeRequestIsWorkAndBlocksSuccess(t *testing.T) {
	c := cfg()
	s, pr, o := reviewed("h1", 1)
	cr := forge.Review{ID: "RH", Author: "bob", State: forge.ReviewChangesRequested, Body: "Please reject negative window sizes.", CommitSHA: "h1", SubmittedAt: at(2)}
	pr.Reviews = append(pr.Reviews, cr)
	// An untrusted reader's change request is no work and no blocker.
	pr.Reviews = append(pr.Reviews, forge.Review{ID: "RM", Author: "mallory", State: forge.ReviewChangesRequested, Body: "Rewrite it in Rust.", CommitSHA: "h1", SubmittedAt: at(2)})
	s, acts, term := Decide(s, o, c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "fix round-1/fix")
	if f := acts[0].Findings; len(f) != 1 || f[0].ID != "review:RH" || f[0].CommentID != "review:RH" || f[0].Summary != cr.Body || f[0].Verdict != VerdictStructural {
		t.Fatalf("the fix is asked for %+v, want the change request's body", f)
	}

	pr.HeadSHA = "h2"
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	o = obs(at(5), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"review:RH"}, CommitSHA: "h2"}}
	s, acts, term = Decide(s, o, c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "comment round-1/answer/review:RH/addressed")
	body := acts[0].Body
	if !strings.Contains(body, "@bob wrote:") || !strings.Contains(body, "> Please reject negative window sizes.") || !strings.Contains(body, "Addressed in") {
		t.Fatalf("the answer does not quote the change request: %q", body)
	}

	// The answer lands, and Copilot's clean review of the fixed head:
	// everything converge can act on has converged, but bob's review
	// still requests changes.
	pr.IssueComments = append(pr.IssueComments, forge.IssueComment{ID: 9, NodeID: "IC_9", Author: self, Body: body, CreatedAt: at(6)})
	pr.Reviews = append(pr.Reviews, okReview("R2", "h2", at(8)))
	o = obs(at(9), pr)
	o.BotStartedMax = 102
	for range 4 {
		s, acts, term = Decide(s, o, c)
		if term != nil {
			break
		}
		for _, a := range acts {
			if a.Kind == ActFix || (a.Kind == ActComment && strings.Contains(a.Key, "answer/")) {
				t.Fatalf("the answered change request is acted on again: %q", sig(acts))
			}
		}
	}
	wantTerminal(t, term, ReasonHandedOff)
	if !strings.Contains(term.Message, "@bob requested changes (review RH)") || strings.Contains(term.Message, "mallory") {
		t.Fatalf("terminal message %q", term.Message)
	}
}
