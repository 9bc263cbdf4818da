package prloop

import "testing"

// TestREL1_LostRequestAnswerIsNotAskedAgain: a review request whose
// answer was lost (a reset, a timeout) may have landed; when the forge
// shows it did — the bot among the requested reviewers, or already a
// review of its — it is not asked again, which would start a second
// review. When the forge shows nothing, it is (PR-M3).
func TestREL1_LostRequestAnswerIsNotAskedAgain(t *testing.T) {
	c := cfg()
	for _, tc := range []struct {
		name   string
		pr     func() Observation
		asked  bool
		reason string
	}{
		{"requested at the forge", func() Observation {
			pr := newPR("h1")
			pr.RequestedReviewers = []string{"Copilot"}
			return obs(at(0.1), pr)
		}, false, "the bot is requested"},
		{"already reviewed", func() Observation {
			pr := newPR("h1")
			pr.Reviews = append(pr.Reviews, okReview("PRR_new", "h1", at(0.05)))
			return obs(at(0.1), pr)
		}, false, "the bot reviewed since"},
		{"nothing at the forge", func() Observation { return obs(at(0.1), newPR("h1")) }, true, "no sign of the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.pr()
			o.Result = &ActResult{RequestFailed: true}
			_, acts, _ := Decide(awaiting("h1", 1), o, c)
			asked := false
			for _, a := range acts {
				asked = asked || a.Kind == ActRequestReview
			}
			if asked != tc.asked {
				t.Fatalf("%s: asked again %v, want %v: %v", tc.reason, asked, tc.asked, sig(acts))
			}
		})
	}
}
