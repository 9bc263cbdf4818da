package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/classify"
)

// TestPR_G4_UnclearFindingDeferredStillCounts: the judge gives no valid
// verdict on a borderline comment (unclear: structural), and triage hands
// it to a human before any fix, since it conflicts with a reviewer's
// thread on the same lines (PR-S7); the round's other structural finding
// is escalated (PR-S8), so nothing is fixed and nothing conflicts with
// everything. A round of hand-offs is otherwise not structural (PR-T11),
// but an unclear one still counts toward PR-T6 (PR-G4).
func TestPR_G4_UnclearFindingDeferredStillCounts(t *testing.T) {
	c := judgeCfg()
	s, pr := judgedRound(2)
	s.ConsecutiveStructural = 1
	s.Rounds[0].CommitSHA, s.Rounds[0].Hunks = "h1", []Hunk{
		{Path: "util.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}},
	}
	pr.Threads = append(pr.Threads,
		threadAt("T2", "main.go", 0, threadLine("T1"), "Return early here instead of looping: the caller depends on it."),
		threadAt("T3", "util.go", 0, 20, "This should be:\n\n```suggestion\n\treturn nil\n```\n"))
	s, acts, term := Decide(s, obs(at(2), pr), c)
	wantTerminal(t, term, "")
	ca := findAct(acts, ActClassify, "")
	if ca == nil {
		t.Fatalf("no judge asked: %q", sig(acts))
	}
	var verdicts []classify.Judged
	for _, f := range ca.Findings {
		verdicts = append(verdicts, classify.Judged{ID: f.ID, Verdict: classify.Unclear})
	}
	o := obs(at(3), pr)
	o.Result = answer(t, acts, classify.Answer{Why: "no output", Verdicts: verdicts})
	s, acts, term = Decide(s, o, c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "reply round-2/reply/T1/deferred", "reply round-2/reply/T2/deferred", "reply round-2/reply/T3/escalated")
	rr := s.Rounds[len(s.Rounds)-1]
	if !rr.Unclear || !rr.Structural || s.ConsecutiveStructural != 2 {
		t.Fatalf("round unclear %v structural %v, consecutive %d; want true true 2", rr.Unclear, rr.Structural, s.ConsecutiveStructural)
	}
	// The replies land: the hand-offs stand, and the round still counts.
	pr = forgeApply(pr, acts, at(4))
	s, _, _ = Decide(s, obs(at(5), pr), c)
	if s.ConsecutiveStructural != 2 {
		t.Fatalf("after the replies: consecutive %d, want 2", s.ConsecutiveStructural)
	}
}
