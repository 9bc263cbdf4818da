package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// provenPR is a PR an earlier run left two-stable on head h1: the ready
// label, converge's success on h1, Copilot's clean review of h1, CI green.
func provenPR() *forge.PullRequest {
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30))}
	pr.Labels = []string{LabelReady}
	pr.Checks = withConvergeStatus(green(), string(forge.StatusSuccess))
	return pr
}

// newRun is the first state of a new run on a PR whose last verdict was
// two-stable on prior.
func newRun(prior string) State { return State{PriorVerdictHead: prior} }

// retraction checks what a step did to the published verdict: the label
// off, converge's verdict on head no longer success, and one comment
// that names each broken fact.
func retraction(t *testing.T, acts []Action, head string, why ...string) {
	t.Helper()
	var label, status, comments int
	for i, a := range acts {
		switch {
		case a.Kind == ActRemoveLabel && a.Label == LabelReady:
			label++
		case a.Kind == ActSetStatus && a.SHA == head && a.State != forge.StatusSuccess:
			status++
		case a.Kind == ActComment && a.Reason == retractReason:
			comments++
			for _, w := range why {
				if !strings.Contains(a.Body, w) {
					t.Errorf("the retraction comment does not say %q:\n%s", w, a.Body)
				}
			}
			if !strings.Contains(a.Body, "<!-- converge:retracted head="+head) {
				t.Errorf("the retraction comment has no marker for %s:\n%s", head, a.Body)
			}
		case a.Kind == ActFix || a.Kind == ActRequestReview:
			if label == 0 || comments == 0 {
				t.Errorf("action %d (%s) runs before the verdict is retracted: %q", i, a.Kind, sig(acts))
			}
		}
	}
	if label != 1 || status < 1 || comments != 1 {
		t.Fatalf("retraction: %d label removal(s), %d status write(s) off success on %s, %d comment(s); want 1, >=1, 1: %q",
			label, status, head, comments, sig(acts))
	}
}

// TestPR_T14_RedCIOnTheProvenHeadRetractsTheVerdict: CI turning red on
// the very head the verdict proved takes the label and the success off
// on the first observation, before any fix runs.
func TestPR_T14_RedCIOnTheProvenHeadRetractsTheVerdict(t *testing.T) {
	pr := provenPR()
	pr.Checks = withConvergeStatus(ciWith("COMPLETED", "FAILURE"), string(forge.StatusSuccess))
	_, acts, term := Decide(newRun("h1"), obs(at(0), pr), cfg())
	if term != nil && term.Reason == ReasonTwoStable {
		t.Fatalf("two-stable with red CI: %+v", term)
	}
	if term == nil {
		retraction(t, acts, "h1", "CI on h1 is failure")
		return
	}
	// A terminal's own hygiene retracts as surely.
	wantNoReady(t, acts, "h1")
}

// wantNoReady: a terminal's actions take the ready label and the success
// off.
func wantNoReady(t *testing.T, acts []Action, head string) {
	t.Helper()
	var label, status bool
	for _, a := range acts {
		label = label || (a.Kind == ActRemoveLabel && a.Label == LabelReady)
		status = status || (a.Kind == ActSetStatus && a.SHA == head && a.State != forge.StatusSuccess)
	}
	if !label || !status {
		t.Fatalf("the verdict stands: %q", sig(acts))
	}
}

// TestPR_T14_ChangesRequestedRetractsTheVerdict: a trusted human's
// CHANGES_REQUESTED after the verdict retracts it, naming the review.
func TestPR_T14_ChangesRequestedRetractsTheVerdict(t *testing.T) {
	pr := provenPR()
	pr.Reviews = append(pr.Reviews, forge.Review{ID: "RH", Author: "bob", State: forge.ReviewChangesRequested,
		Body: "Please reject negative window sizes.", CommitSHA: "h1", SubmittedAt: at(-1)})
	_, acts, term := Decide(newRun("h1"), obs(at(0), pr), cfg())
	wantTerminal(t, term, "")
	retraction(t, acts, "h1", "@bob requested changes")
}

// TestPR_T14_NewHeadRetractsTheVerdict: a new head since the verdict
// takes the label off at once; the success was on the old head, which is
// no longer the PR's, so nothing on the new head is success.
func TestPR_T14_NewHeadRetractsTheVerdict(t *testing.T) {
	pr := provenPR()
	pr.HeadSHA = "h2"
	pr.Commits = []forge.Commit{{SHA: "h2", Message: "more", Parents: []string{"h1"}}}
	pr.Checks = green()
	_, acts, term := Decide(newRun("h1"), obs(at(0), pr), cfg())
	wantTerminal(t, term, "")
	var label, comment bool
	for _, a := range acts {
		label = label || (a.Kind == ActRemoveLabel && a.Label == LabelReady)
		if a.Kind == ActComment && a.Reason == retractReason {
			comment = true
			if !strings.Contains(a.Body, "a new head h2 (the verdict was for h1)") {
				t.Errorf("comment does not name the new head:\n%s", a.Body)
			}
		}
		if a.Kind == ActSetStatus && a.State == forge.StatusSuccess {
			t.Errorf("success published on a head nobody reviewed: %+v", a)
		}
	}
	if !label || !comment {
		t.Fatalf("label removed %v, comment %v: %q", label, comment, sig(acts))
	}
}

// TestPR_T14_AHoldingVerdictIsNotRetracted: news that breaks nothing (a
// late webhook of the review the verdict read) leaves the verdict as it
// is: the new run ends two-stable and writes nothing (PR-S12).
func TestPR_T14_AHoldingVerdictIsNotRetracted(t *testing.T) {
	_, acts, term := Decide(newRun("h1"), obs(at(0), provenPR()), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	for _, a := range acts {
		if a.Kind == ActRemoveLabel || a.Kind == ActComment || (a.Kind == ActSetStatus && a.State != forge.StatusSuccess) {
			t.Fatalf("a holding verdict was touched: %q", sig(acts))
		}
	}
}

// TestPR_T14_RetractedOnceWhileTheForgeLags: the retraction is not posted
// twice when the next observation still shows the label (the forge lags
// its own writes) and the comment.
func TestPR_T14_RetractedOnceWhileTheForgeLags(t *testing.T) {
	pr := provenPR()
	pr.Checks = withConvergeStatus(ciWith("COMPLETED", "FAILURE"), string(forge.StatusSuccess))
	s, acts, _ := Decide(newRun("h1"), obs(at(0), pr), cfg())
	var body string
	for _, a := range acts {
		if a.Reason == retractReason {
			body = a.Body
		}
	}
	pr.IssueComments = []forge.IssueComment{{ID: 9, Author: self, Body: body}}
	_, acts, _ = Decide(s, obs(at(1), pr), cfg())
	for _, a := range acts {
		if a.Kind == ActComment && a.Reason == retractReason {
			t.Fatalf("a second retraction comment for the same facts: %q", sig(acts))
		}
	}
	if len(s.Retractions) != 1 || s.Retractions[0].Head != "h1" {
		t.Fatalf("retractions %+v, want one on h1", s.Retractions)
	}
}

// TestPR_T14_AVerdictIsPublishedOnlyForTheHeadItProved: a run decided
// two-stable on h1; before its label was written the head moved to h2 (a
// push while the run was finishing). The next observation voids the
// terminal: no ready label, no success, and the new head is judged (a
// human's push ends the run needing attention, PR-T4).
func TestPR_T14_AVerdictIsPublishedOnlyForTheHeadItProved(t *testing.T) {
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30))}
	s, acts, term := Decide(State{}, obs(at(0), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	var labelSHA string
	for _, a := range acts {
		if a.Kind == ActAddLabel && a.Label == LabelReady {
			labelSHA = a.SHA
		}
	}
	if labelSHA != "h1" {
		t.Fatalf("the ready label's act names head %q, want the proved h1", labelSHA)
	}
	moved := newPR("h2")
	moved.Reviews = pr.Reviews
	moved.Commits = append(moved.Commits[:0], pr.Commits[0], forge.Commit{SHA: "h2", Message: "a human's push", Parents: []string{"h1"}})
	s2, acts, term := Decide(s, obs(at(1), moved), cfg())
	if term != nil && term.Reason == ReasonTwoStable {
		t.Fatalf("two-stable kept after the head moved: %+v", term)
	}
	for _, a := range acts {
		if (a.Kind == ActAddLabel && a.Label == LabelReady) || (a.Kind == ActSetStatus && a.State == forge.StatusSuccess) {
			t.Fatalf("the verdict on h1 published on h2: %q", sig(acts))
		}
	}
	if len(s2.Retractions) == 0 || !strings.Contains(s2.Retractions[0].Why[0], "before the verdict on h1 was published") {
		t.Fatalf("the voided verdict is not recorded: %+v", s2.Retractions)
	}
}
