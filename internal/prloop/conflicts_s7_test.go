package prloop

import (
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	localreview "github.com/convergeloop/converge/internal/review"
)

// TestPR_S7_AllConflictingBeforeMinorFixes: every structural finding of
// the round conflicts and one minor point elsewhere could be fixed. The
// round fixes nothing: the run ends awaiting-human-review with note
// all-conflicting-deferred-to-human, and the minor thread is deferred
// too (replied, left open), not fixed and pushed.
func TestPR_S7_AllConflictingBeforeMinorFixes(t *testing.T) {
	c := cfg()
	minor := threadAt("T3", "util.go", 0, 40, "Typo in the doc comment: \"recieve\" should be \"receive\".")
	s, pr, o := reviewed("h1", 1,
		threadAt("T1", "main.go", 10, 12, "use a switch here"),
		threadAt("T2", "main.go", 12, 14, "return early instead"),
		minor)
	s, acts, term := Decide(s, o, c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "reply round-1/reply/T1/deferred", "reply round-1/reply/T2/deferred", "reply round-1/reply/T3/deferred")
	if f := s.Kept[2]; f.ID != "T3" || f.Verdict != VerdictMinor {
		t.Fatalf("the third finding is %+v, want T3 minor", f)
	}
	if b := findAct(acts, ActReply, "T3").Body; !strings.Contains(b, "Deferred to a human") || !strings.Contains(b, NoteAllConflicting) {
		t.Fatalf("the minor thread's reply: %q", b)
	}
	pr = forgeApply(pr, acts, at(4))
	s, acts, term = Decide(s, obs(at(5), pr), c)
	wantTerminal(t, term, ReasonAllConflicting)
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status error h1")
	if term.Note != NoteAllConflicting || !strings.Contains(term.Message, "awaiting-human-review") {
		t.Fatalf("terminal %+v", term)
	}
	if s.LastLoopSHA != "h1" || s.Rounds[0].CommitSHA != "" {
		t.Fatalf("something was pushed: last loop sha %s, round commit %q", s.LastLoopSHA, s.Rounds[0].CommitSHA)
	}
	for _, th := range pr.Threads {
		if th.IsResolved {
			t.Fatalf("thread %s resolved", th.ID)
		}
	}
}

// TestPR_S7_UnfixableStructuralThatDoesNotConflict: conflicting threads
// and a structural finding that conflicts with nothing but cannot be
// fixed either (an angle of the local review that could not be parsed;
// a suggestion that would undo an earlier round, escalated): not every
// structural finding conflicts, so the run does not end all-conflicting.
func TestPR_S7_UnfixableStructuralThatDoesNotConflict(t *testing.T) {
	unparsed := Finding{ID: "local:edge-cases:unparsed", Summary: localreview.UnparsedSummary("edge-cases"), Verdict: VerdictStructural,
		Source: "local", Author: "local-review/edge-cases"}
	round1 := RoundRecord{N: 1, HeadSHA: "h0", CommitSHA: "h1", StartedAt: at(0), Hunks: []Hunk{
		{Path: "util.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}},
	}}
	back := threadAt("T3", "util.go", 0, 20, "This should be:\n\n```suggestion\n\treturn nil\n```\n")
	for _, tt := range []struct {
		name  string
		local *Finding
		extra []forge.Thread
		first []string
		end   Reason
	}{
		{"an unparsed local angle", &unparsed, nil,
			[]string{"reply round-2/reply/T1/deferred", "reply round-2/reply/T2/deferred"}, ""},
		{"an oscillating suggestion, escalated", nil, []forge.Thread{back},
			[]string{"reply round-2/reply/T1/deferred", "reply round-2/reply/T2/deferred", "reply round-2/reply/T3/escalated"}, ReasonHandedOff},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			threads := append([]forge.Thread{threadAt("T1", "main.go", 10, 12, "use a switch here"), threadAt("T2", "main.go", 12, 14, "return early instead")}, tt.extra...)
			s, pr, o := reviewed("h1", 2, threads...)
			s.Rounds = []RoundRecord{round1, {N: 2, HeadSHA: "h1", StartedAt: at(0)}}
			if tt.local != nil {
				c.LocalReview = true
				s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 2, Degraded: true, Findings: []Finding{*tt.local}}}
			}
			s, acts, term := Decide(s, o, c)
			wantTerminal(t, term, "")
			wantActs(t, acts, tt.first...)
			if slices.Contains(s.Rounds[1].Notes, NoteAllConflicting) {
				t.Fatalf("round noted %s: %v", NoteAllConflicting, s.Rounds[1].Notes)
			}
			pr = forgeApply(pr, acts, at(4))
			_, _, term = Decide(s, obs(at(5), pr), c)
			if term != nil && term.Reason == ReasonAllConflicting {
				t.Fatalf("ended all-conflicting although a structural finding conflicts with nothing: %s", term.Message)
			}
			wantTerminal(t, term, tt.end)
		})
	}
}
