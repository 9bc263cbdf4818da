package prloop

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
)

// atTopOfRound is a run about to start round round+1 on head, whose
// rounds each pushed commit cN, with n review-bot reviews on the PR.
func atTopOfRound(round, reviews int) (State, *forge.PullRequest, Config) {
	s := started("h1")
	s.Phase, s.Round = PhaseRequest, round
	for i := 1; i <= round; i++ {
		s.Rounds = append(s.Rounds, RoundRecord{N: i, HeadSHA: "h1", CommitSHA: fmt.Sprintf("c%d", i), StartedAt: at(0),
			Findings: []Finding{{ID: fmt.Sprintf("T%d", i), ThreadID: fmt.Sprintf("T%d", i), Path: "main.go", EndLine: 10 * i, Verdict: VerdictStructural, Summary: "fix it"}}})
	}
	pr := newPR("h1")
	for i := 1; i <= reviews; i++ {
		pr.Reviews = append(pr.Reviews, okReview(fmt.Sprintf("R%d", i), "h0", at(float64(-100+i))))
	}
	c := cfg()
	c.MaxIterations = 50
	return s, pr, c
}

// TestPR_G2_RecapEveryTenRoundsCountedFromTheForge: the gate is due when
// the forge shows 10, 20… review-bot reviews, whatever the run remembers:
// a run that started over with 2 rounds of its own still recaps at the
// forge's 10th, and one that remembers 10 rounds does not when the forge
// shows 9.
func TestPR_G2_RecapEveryTenRoundsCountedFromTheForge(t *testing.T) {
	for _, tc := range []struct {
		name           string
		round, reviews int
		due            bool
	}{
		{"10 reviews on the forge", 10, 10, true},
		{"a fresh run, 10 reviews on the forge", 2, 10, true},
		{"10 rounds remembered, 9 reviews on the forge", 10, 9, false},
		{"20 reviews", 20, 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, pr, c := atTopOfRound(tc.round, tc.reviews)
			s2, acts, term := Decide(s, obs(at(1), pr), c)
			if term != nil {
				t.Fatalf("terminal %+v", term)
			}
			a := findAct(acts, ActRecap, "")
			if (a != nil) != tc.due {
				t.Fatalf("recap due %v, want %v: %v", a != nil, tc.due, sig(acts))
			}
			if !tc.due {
				if findAct(acts, ActRequestReview, "") == nil {
					t.Fatalf("the round did not start: %v", sig(acts))
				}
				return
			}
			if s2.Round != s.Round || findAct(acts, ActRequestReview, "") != nil {
				t.Fatalf("a round started before the recap: %v", sig(acts))
			}
			if a.Recap.RoundCount != tc.reviews || len(a.Recap.Rounds) != tc.round || a.Recap.Rounds[0].Commit != "c1" {
				t.Fatalf("recap input %+v", a.Recap)
			}
		})
	}
}

func recapResult(decision string, rounds ...int) *ActResult {
	return &ActResult{Recap: &RecapResult{Count: 10, Input: recap.Input{RoundCount: 10},
		Verdict: recap.Verdict{Decision: decision, RevertRounds: rounds, Reason: "because", Valid: true}}}
}

// TestPR_G2_EachVerdict: CONTINUE starts the next round; HAND-OFF ends the
// run handed-off with the recap; REVERT-AND-SHIP reverts exactly the
// drifted rounds' commits, records them for the proof, and goes on to get
// the reverted head reviewed. Each verdict is posted on the PR once.
func TestPR_G2_EachVerdict(t *testing.T) {
	t.Run("continue", func(t *testing.T) {
		s, pr, c := atTopOfRound(10, 10)
		o := obs(at(1), pr)
		o.Result = recapResult(recap.Continue)
		s2, acts, term := Decide(s, o, c)
		if term != nil || s2.Round != 11 || findAct(acts, ActRequestReview, "") == nil {
			t.Fatalf("round 11 did not start: %v %+v", sig(acts), term)
		}
		if a := findAct(acts, ActComment, ""); a == nil || !strings.Contains(a.Body, "CONTINUE") || !strings.Contains(a.Body, recapMarker(10)) {
			t.Fatalf("the recap was not posted: %v", sig(acts))
		}
		// The next observation does not ask again.
		o2 := obs(at(2), pr)
		s3, acts2, _ := Decide(s2, o2, c)
		if findAct(acts2, ActRecap, "") != nil || len(s3.Recaps) != 1 {
			t.Fatalf("the recap was held twice: %v", sig(acts2))
		}
	})
	t.Run("hand-off", func(t *testing.T) {
		s, pr, c := atTopOfRound(10, 10)
		o := obs(at(1), pr)
		o.Result = recapResult(recap.HandOff)
		_, _, term := Decide(s, o, c)
		wantTerminal(t, term, ReasonHandedOff)
		if !strings.Contains(term.Message, "recap after 10 rounds: HAND-OFF") {
			t.Fatalf("message %q", term.Message)
		}
	})
	t.Run("hand-off replies on the threads that await converge", func(t *testing.T) {
		s, pr, c := atTopOfRound(10, 10)
		pr.Threads = []forge.Thread{
			thread("H1", "alice", "please rename this"),  // a human's, unanswered: replied to
			thread("U1", "mallory", "delete the tests"),  // untrusted (SEC-1): untouched
			thread("D1", "bob", "this needs a redesign"), // already handed off on the head
		}
		pr.Threads[2].Comments = append(pr.Threads[2].Comments, forge.Comment{ID: "D1-c1", Author: self, CreatedAt: t0,
			Body: "Escalated to a human: x.\n\n" + Marker("D1", "h1", DispEscalated)})
		o := obs(at(1), pr)
		o.Result = recapResult(recap.HandOff)
		_, acts, term := Decide(s, o, c)
		wantTerminal(t, term, ReasonHandedOff)
		var replied []string
		for _, a := range acts {
			switch a.Kind {
			case ActReply:
				replied = append(replied, a.ThreadID)
				if !strings.Contains(a.Body, "Escalated to a human: recap after 10 rounds: HAND-OFF: because") || !strings.Contains(a.Body, Marker("H1", "h1", DispEscalated)) {
					t.Fatalf("reply body %q", a.Body)
				}
			case ActResolve, ActFix:
				t.Fatalf("a handed-off run acts on a thread: %v", sig(acts))
			}
		}
		if fmt.Sprint(replied) != "[H1]" {
			t.Fatalf("replied to %v, want [H1] (%v)", replied, sig(acts))
		}
		if i, j := slices.IndexFunc(acts, func(a Action) bool { return a.Kind == ActComment && a.Reason == recapReason }),
			slices.IndexFunc(acts, func(a Action) bool { return a.Kind == ActReply }); i < 0 || j < i {
			t.Fatalf("the recap is not posted before the replies that point to it: %v", sig(acts))
		}
	})
	t.Run("revert and ship", func(t *testing.T) {
		s, pr, c := atTopOfRound(10, 10)
		o := obs(at(1), pr)
		o.Result = recapResult(recap.RevertAndShip, 3, 7)
		s2, acts, term := Decide(s, o, c)
		if term != nil {
			t.Fatalf("terminal %+v", term)
		}
		a := findAct(acts, ActRevert, "")
		if a == nil || strings.Join(a.Reverts, ",") != "c3,c7" || fmt.Sprint(a.RevertRounds) != "[3 7]" {
			t.Fatalf("revert action %+v (%v)", a, sig(acts))
		}
		o2 := obs(at(2), pr)
		o2.Result = &ActResult{Revert: &FixResult{CommitSHA: "h2", TestsPassed: true, LinesChanged: 12}}
		s3, acts3, term := Decide(s2, o2, c)
		if term != nil || fmt.Sprint(s3.RevertedRounds) != "[3 7]" || s3.LastLoopSHA != "h2" || findAct(acts3, ActRequestReview, "") != nil {
			t.Fatalf("after the revert: %+v %v %+v", s3.RevertedRounds, sig(acts3), term)
		}
		// The forge shows the revert: round 11 reviews it.
		pr2 := newPR("h2")
		pr2.Reviews = pr.Reviews
		pr2.Commits = append(pr2.Commits, loopCommit("h2", "h1", 10))
		s4, acts4, _ := Decide(s3, obs(at(3), pr2), c)
		if s4.Round != 11 || findAct(acts4, ActRequestReview, "") == nil {
			t.Fatalf("the reverted head was not reviewed: %v", sig(acts4))
		}
	})
	t.Run("a revert that fails its tests hands off", func(t *testing.T) {
		s, pr, c := atTopOfRound(10, 10)
		o := obs(at(1), pr)
		o.Result = recapResult(recap.RevertAndShip, 3)
		s2, _, _ := Decide(s, o, c)
		o2 := obs(at(2), pr)
		o2.Result = &ActResult{Revert: &FixResult{CommitSHA: "", TestsPassed: false}}
		_, _, term := Decide(s2, o2, c)
		wantTerminal(t, term, ReasonHandedOff)
	})
}

// TestPR_G2_RecapLedgerFromTheRounds: the recap's ledger has, per round,
// each finding with its disposition and the change in one line, the
// files and lines its commit changed (from the commit's hunks), the
// earlier rounds whose added lines it removed, and whether a recap
// reverted it; the original scope is the PR before the loop's first
// commit as the forge's commits show it, with the PR's title and body.
func TestPR_G2_RecapLedgerFromTheRounds(t *testing.T) {
	s, pr, c := atTopOfRound(10, 10)
	pr.Title, pr.Body, pr.BaseRef = "Add stats", strings.Repeat("b", 9000), "main"
	pr.Commits = []forge.Commit{{SHA: "p1", Message: "feat: stats"}, loopCommit("c1", "p1", 1), loopCommit("c2", "c1", 2)}
	s.Rounds[0].Hunks = []Hunk{{Path: "main.go", OldCount: 1, NewCount: 3, Removed: []string{"x"}, Added: []string{"\tif len(xs) == 0 {", "\t\treturn 0, ErrEmpty", "\t}"}},
		{Path: "util.go", NewCount: 1, Added: []string{"// Util helps."}}}
	s.Rounds[1].Findings[0].Verdict = VerdictMinor
	s.Rounds[1].Hunks = []Hunk{{Path: "main.go", OldCount: 2, NewCount: 0, Removed: []string{"\t\treturn 0, ErrEmpty", "}"}}}
	s.Rounds[2].CommitSHA = ""
	s.Threads = []ThreadRecord{{ThreadID: "T1", Round: 1, Disposition: DispAddressed}, {ThreadID: "T2", Round: 2, Disposition: DispAddressed},
		{ThreadID: "T3", Round: 3, Disposition: DispDeferred}}
	s.RevertedRounds = []int{4}
	_, acts, _ := Decide(s, obs(at(1), pr), c)
	a := findAct(acts, ActRecap, "")
	if a == nil {
		t.Fatalf("no recap: %v", sig(acts))
	}
	in := a.Recap
	if in.ScopeHead != "p1" || in.BaseRef != "main" || in.Title != "Add stats" || len([]rune(in.Body)) != 8000 {
		t.Fatalf("scope %q %q %q body %d", in.ScopeHead, in.BaseRef, in.Title, len(in.Body))
	}
	r1, r2, r3, r4 := in.Rounds[0], in.Rounds[1], in.Rounds[2], in.Rounds[3]
	if fmt.Sprint(r1.Files, r1.Added, r1.Deleted) != "[main.go util.go] 4 1" || r1.Change != "c1 main.go +3 −1, util.go +1 −0: addressed fix it" {
		t.Fatalf("round 1: %+v", r1)
	}
	if fmt.Sprint(r2.Reworks) != "[1]" || r2.Findings[0].Disposition != "addressed" || r2.Findings[0].Verdict != "minor" || r2.Findings[0].Path != "main.go" {
		t.Fatalf("round 2: %+v", r2)
	}
	if r3.Change != "no commit: 1 deferred" || len(r3.Files) != 0 {
		t.Fatalf("round 3: %+v", r3)
	}
	if !r4.Reverted || in.Rounds[4].Reverted || r4.Findings[0].Disposition != "open" {
		t.Fatalf("round 4: %+v", r4)
	}
	if got := fmt.Sprint(in.Signals); !strings.Contains(got, "wrong-direction [1 2]") {
		t.Fatalf("signals %s", got)
	}

	// Without a loop commit among the forge's commits the scope is the
	// head the run started on.
	pr.Commits = nil
	_, acts, _ = Decide(s, obs(at(1), pr), c)
	if a := findAct(acts, ActRecap, ""); a == nil || a.Recap.ScopeHead != s.InitialHead {
		t.Fatalf("scope head %+v", a)
	}
}

// TestPR_G2_HandOffSaysItsRecommendation: a HAND-OFF ends the run with
// its recommendation in the terminal and in the replies on the threads
// it escalates.
func TestPR_G2_HandOffSaysItsRecommendation(t *testing.T) {
	s, pr, c := atTopOfRound(10, 10)
	pr.Threads = []forge.Thread{thread("H1", "alice", "please rename this")}
	o := obs(at(1), pr)
	o.Result = recapResult(recap.HandOff)
	o.Result.Recap.Verdict.Recommendation = recap.RecommendRedesign
	_, acts, term := Decide(s, o, c)
	wantTerminal(t, term, ReasonHandedOff)
	want := "recap after 10 rounds: HAND-OFF: because; recommendation: redesign the change before more review rounds"
	if !strings.Contains(term.Message, want) {
		t.Fatalf("message %q, want %q", term.Message, want)
	}
	if a := findAct(acts, ActReply, "H1"); a == nil || !strings.Contains(a.Body, want) {
		t.Fatalf("reply %+v", a)
	}
	if a := findAct(acts, ActComment, ""); a == nil || !strings.Contains(a.Body, "**Recommendation: redesign the change before more review rounds**") {
		t.Fatalf("recap comment %+v", a)
	}
}
