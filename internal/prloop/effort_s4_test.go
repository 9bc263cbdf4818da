package prloop

import (
	"slices"
	"testing"

	localreview "github.com/convergeloop/converge/internal/review"
)

// TestPR_S4_ReviewEffortAfterStructuralRounds: the round after one whose
// local review found structural items asks for a review that looks
// harder (effort 1), two in a row for effort 2; a clean review, one with
// minor points only, or one that could not be parsed resets it. The
// round's ledger notes the escalation.
func TestPR_S4_ReviewEffortAfterStructuralRounds(t *testing.T) {
	structural := Finding{ID: "local:a", Path: "main.go", EndLine: 3, Summary: "leaks the file", Verdict: VerdictStructural, Source: "local", Author: "local-review/correctness-leak"}
	minor := Finding{ID: "local:b", Path: "main.go", EndLine: 9, Summary: "typo", Verdict: VerdictMinor, Source: "local", Author: "local-review/edge-cases"}
	unparsed := Finding{ID: "local:c", Summary: localreview.UnparsedSummary("edge-cases"), Verdict: VerdictStructural, Source: "local", Author: "local-review/edge-cases"}
	rec := func(head string, round int, fs ...Finding) LocalReviewRecord {
		return LocalReviewRecord{Head: head, Round: round, Findings: fs}
	}
	for _, tt := range []struct {
		name    string
		reviews []LocalReviewRecord
		effort  int
	}{
		{"first round", nil, 0},
		{"the last review found a structural item", []LocalReviewRecord{rec("h0", 2, structural)}, 1},
		{"two in a row", []LocalReviewRecord{rec("ha", 1, structural), rec("h0", 2, structural, minor)}, 2},
		{"a clean review before: reset", []LocalReviewRecord{rec("ha", 1, structural), rec("h0", 2)}, 0},
		{"minor points only", []LocalReviewRecord{rec("h0", 2, minor)}, 0},
		{"a review that could not be parsed", []LocalReviewRecord{rec("h0", 2, unparsed)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			c.LocalReview = true
			s := verifying("h1", 2)
			s.Phase = PhaseRequest
			s.LocalReviews = slices.Clone(tt.reviews)
			pr := newPR("h1")
			s, acts, term := Decide(s, obs(at(1), pr), c)
			wantTerminal(t, term, "")
			a := findAct(acts, ActLocalReview, "")
			if a == nil || a.Round != 3 {
				t.Fatalf("no local review of round 3: %q", sig(acts))
			}
			if a.Effort != tt.effort {
				t.Fatalf("effort %d, want %d", a.Effort, tt.effort)
			}
			noted := slices.Contains(s.Rounds[len(s.Rounds)-1].Notes, escalationNote(tt.effort))
			if noted != (tt.effort > 0) {
				t.Fatalf("round 3's notes %v", s.Rounds[len(s.Rounds)-1].Notes)
			}
		})
	}
}
