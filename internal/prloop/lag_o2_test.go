package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_O2_EarlierReviewsLaggingCommentsBlockTwoStable is the false
// success issue 18's lag run found: Copilot's review of round 1 says it
// generated 2 comments, but the forge lags them together with the
// review's own comment count (0, no thread visible); the loop re-requested
// past it, and round 3's review of the head is clean. Zero open threads
// is then a false reading of conjunct 3: no observation of this PR, however
// often repeated, ends two-stable until the comments show.
func TestPR_O2_EarlierReviewsLaggingCommentsBlockTwoStable(t *testing.T) {
	c := cfg()
	pr := newPR("h1")
	lagging := botReview("R1", "h1", at(1), "## Pull request overview\n\nCopilot reviewed 2 out of 2 changed files in this pull request and generated 2 comments.")
	pr.Reviews = []forge.Review{lagging, okReview("R3", "h1", at(5))}
	s := verifying("h1", 3)
	s.Request.SeenReviews = []string{"R1"}
	for i := range 2 * c.UnsettledReads {
		next, acts, term := Decide(s, obs(at(6+float64(i)), pr), c)
		if term != nil && term.Reason == ReasonTwoStable {
			t.Fatalf("observation %d: two-stable while review R1's 2 comments are not visible (acts %v)", i, sig(acts))
		}
		if term != nil {
			return // any other ending is fail-closed
		}
		s = next
	}

	// Once the comments show, they are threads to handle, not a clean PR.
	th1, th2 := copilotThread("T1", "Rename this."), copilotThread("T2", "Check the bound.")
	pr.Reviews[0] = rooted(lagging, &th1, &th2)
	pr.Threads = []forge.Thread{th1, th2}
	if _, _, term := Decide(verifying("h1", 3), obs(at(30), pr), c); term != nil && term.Reason == ReasonTwoStable {
		t.Fatal("two-stable with two open Copilot threads")
	}
}
