package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/forge"
)

// borderlineBody is a comment the heuristic cannot decide: nit phrasing
// around a code change.
const borderlineBody = "nit: `i < n` should be `i <= n`"

// judgedRound is round n awaiting its review, with one Copilot thread T1
// on the head that reads borderline.
func judgedRound(n int) (State, *forge.PullRequest) {
	s := awaiting("h1", n)
	pr := newPR("h1")
	th := copilotThread("T1", borderlineBody)
	r := rooted(okReview("R"+string(rune('0'+n)), "h1", at(1)), &th)
	r.Body = "## Pull request overview\n\nCopilot reviewed 1 out of 1 changed files in this pull request and generated 1 comment."
	pr.Reviews, pr.Threads = []forge.Review{r}, []forge.Thread{th}
	return s, pr
}

func judgeCfg() Config {
	c := cfg()
	c.ClassifyJudge = true
	return c
}

// answer is the judge's result about the pending findings of acts.
func answer(t *testing.T, acts []Action, a classify.Answer) *ActResult {
	t.Helper()
	ca := findAct(acts, ActClassify, "")
	if ca == nil {
		t.Fatalf("no classify action: %q", sig(acts))
	}
	var keys []string
	for _, f := range ca.Findings {
		keys = append(keys, classKey(f))
	}
	return &ActResult{Classify: &ClassifyResult{Keys: keys, Answer: a}}
}

func TestPR_S5_BorderlineCommentsGoToTheJudge(t *testing.T) {
	minor := classify.Answer{Valid: true, Verdicts: []classify.Judged{{ID: "T1", Verdict: classify.Minor, Reason: "a typo in a code comment"}}}
	structural := classify.Answer{Valid: true, Verdicts: []classify.Judged{{ID: "T1", Verdict: classify.Structural, Reason: "changes the loop bound"}}}
	garbage := classify.Answer{Valid: false, Why: "the last line is not a JSON object: sure!", Verdicts: []classify.Judged{{ID: "T1", Verdict: classify.Unclear}}}
	for _, tc := range []struct {
		name       string
		answer     classify.Answer
		verdict    Verdict
		unclear    bool
		structural bool
		class      string
	}{
		{"the judge says minor", minor, VerdictMinor, false, false, "judge: minor (a typo"},
		{"the judge says structural", structural, VerdictStructural, false, true, "judge: structural"},
		{"an invalid answer is unclear, treated as structural", garbage, VerdictStructural, true, true, "judge: unclear (the last line is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, pr := judgedRound(2)
			s.ConsecutiveStructural = 1
			c := judgeCfg()
			s, acts, term := Decide(s, obs(at(2), pr), c)
			wantTerminal(t, term, "")
			wantActs(t, acts, "classify round-2/classify", "wait")
			if ca := findAct(acts, ActClassify, ""); len(ca.Findings) != 1 || ca.Findings[0].ID != "T1" {
				t.Fatalf("the judge is asked about %+v, want T1 only", ca.Findings)
			}
			o := obs(at(3), pr)
			o.Result = answer(t, acts, tc.answer)
			s, acts, _ = Decide(s, o, c)
			wantActs(t, acts, "fix round-2/fix")
			rr := s.Rounds[len(s.Rounds)-1]
			f := rr.Findings[0]
			if f.Verdict != tc.verdict || f.Unclear != tc.unclear || !strings.HasPrefix(f.Class, tc.class) {
				t.Fatalf("finding %+v; want verdict %s, unclear %v, class %q…", f, tc.verdict, tc.unclear, tc.class)
			}
			if rr.Structural != tc.structural || rr.Unclear != tc.unclear {
				t.Fatalf("round structural %v unclear %v; want %v %v", rr.Structural, rr.Unclear, tc.structural, tc.unclear)
			}
			if want := map[bool]int{true: 2, false: 0}[tc.structural]; s.ConsecutiveStructural != want {
				t.Fatalf("consecutive structural %d, want %d", s.ConsecutiveStructural, want)
			}
		})
	}

	// No judge configured: today's behaviour, the borderline comment is
	// structural at once (fail-closed) and no judge is asked.
	s, pr := judgedRound(2)
	s2, acts, _ := Decide(s, obs(at(2), pr), cfg())
	wantActs(t, acts, "fix round-2/fix")
	if f := s2.Rounds[len(s2.Rounds)-1].Findings[0]; f.Verdict != VerdictStructural || f.Unclear || !f.Borderline {
		t.Fatalf("without a judge: %+v", f)
	}
}

// A judge's minor or structural verdict holds for the comment in later
// rounds; an unclear one holds for its round only, and the next round
// asks again.
func TestPR_S5_UnclearIsAskedAgainNextRound(t *testing.T) {
	c := judgeCfg()
	s, pr := judgedRound(3)
	f := finding(classifyThread(pr.Threads[0], s, obs(at(0), pr), c), nil, c)
	s.Classified = []ClassRecord{{Key: classKey(f), Round: 2, Verdict: string(classify.Unclear), Reason: "no output"}}
	_, acts, _ := Decide(s, obs(at(2), pr), c)
	wantActs(t, acts, "classify round-3/classify", "wait")

	s.Classified = []ClassRecord{{Key: classKey(f), Round: 2, Verdict: string(classify.Minor), Reason: "a typo"}}
	_, acts, _ = Decide(s, obs(at(2), pr), c)
	wantActs(t, acts, "fix round-3/fix")

	// An edited comment is judged again.
	pr.Threads[0].Comments[0].Body = borderlineBody + " (and rename it)"
	_, acts, _ = Decide(s, obs(at(2), pr), c)
	wantActs(t, acts, "classify round-3/classify", "wait")
}

// TestPR_G4_UnclearRoundsCountAsStructural: a round whose classification
// was unclear is a structural round for PR-T6 even when its finding ends
// handed off (which otherwise makes a round not structural), so three
// unclear rounds in a row reach k = 3; the terminal's message says so.
func TestPR_G4_UnclearRoundsCountAsStructural(t *testing.T) {
	c := judgeCfg()
	garbage := classify.Answer{Why: "no output", Verdicts: []classify.Judged{{ID: "T1", Verdict: classify.Unclear}}}
	consecutive := 0
	for n := 1; n <= 3; n++ {
		s, pr := judgedRound(n)
		s.ConsecutiveStructural = consecutive
		for i := range s.Rounds[:n-1] {
			s.Rounds[i].Unclear, s.Rounds[i].Structural = true, true
		}
		s, acts, _ := Decide(s, obs(at(2), pr), c)
		o := obs(at(3), pr)
		o.Result = answer(t, acts, garbage)
		s, _, _ = Decide(s, o, c)
		// The fixer cannot address it: escalated, a hand-off.
		o = obs(at(4), pr)
		o.Result = &ActResult{Fix: &FixResult{Round: n, Blocked: []BlockedFinding{{ID: "T1", Reason: "not sure what is meant"}}}}
		s, _, _ = Decide(s, o, c)
		rr := s.Rounds[len(s.Rounds)-1]
		if !rr.Unclear || !rr.Structural || s.ConsecutiveStructural != n {
			t.Fatalf("round %d: unclear %v structural %v consecutive %d; want true true %d", n, rr.Unclear, rr.Structural, s.ConsecutiveStructural, n)
		}
		consecutive = s.ConsecutiveStructural
	}

	// The guard then names the unclear rounds.
	s := verifying("h1", 3)
	s.ConsecutiveStructural = 3
	for i := range s.Rounds {
		s.Rounds[i].Unclear, s.Rounds[i].Structural = true, true
	}
	s.Kept = []Finding{{ID: "L1", Path: "main.go", EndLine: 3, Verdict: VerdictStructural, Source: "local"}}
	pr := newPR("h1")
	pr.Checks = ciWith("COMPLETED", "FAILURE")
	_, _, term := Decide(s, obs(at(2), pr), c)
	wantTerminal(t, term, ReasonConvergenceFailure)
	if !strings.Contains(term.Message, "3 of them with unclear classification") || !strings.Contains(term.Message, "PR-G4") {
		t.Fatalf("message %q does not name the unclear rounds", term.Message)
	}
}
