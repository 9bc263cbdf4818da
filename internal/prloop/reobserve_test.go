package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_S2_AWaitForAnotherReadIsBounded: a wait that needs no event,
// only another read (here GitHub still computing the merge state), carries
// Reobserve as its deadline, so a loop whose polls are far apart (converge
// serve, woken by webhooks) reads again within seconds, not at its next
// poll.
func TestPR_S2_AWaitForAnotherReadIsBounded(t *testing.T) {
	pr := newPR("h2")
	pr.Checks = withConvergeStatus(green(), "SUCCESS")
	pr.Reviews = []forge.Review{okReview("R3", "h2", at(-10))}
	pr.MergeState = forge.MergeUnknown
	c := cfg()
	_, acts, term := Decide(State{}, obs(at(0), pr), c)
	if term != nil || len(acts) != 1 || acts[0].Kind != ActWait {
		t.Fatalf("terminal %+v, actions %+v: want one wait", term, acts)
	}
	if after, _ := acts[0].Wait(); after != c.Reobserve || after <= 0 {
		t.Fatalf("wait %q after %s, want Reobserve %s", acts[0].Reason, after, c.Reobserve)
	}
}
