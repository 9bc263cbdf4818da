package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// Thin guards (issue 36): rules that existed in code with no test failing
// when they were broken on purpose. Each test below names the rule it
// proves; testdata/mutants holds the one-line break each one kills.

// crashedReply is a Copilot thread converge already answered with disp on
// head h1 (its marker is in the thread) and never resolved: the run died
// between the reply and the resolve (REL-2). h1, a loop commit, is still
// in the branch's history.
func crashedReply(disp Disposition) (*forge.PullRequest, forge.Thread) {
	th := copilotThread("T1", "nil dereference on the error path")
	th.Comments = append(th.Comments, forge.Comment{Author: self, Body: "Answered.\n\n— converge\n\n" + Marker("T1", "h1", disp), CreatedAt: at(0.5)})
	pr := newPR("h1")
	pr.Commits = []forge.Commit{{SHA: "h0", Parents: []string{"base0"}, Message: "feat: the change"}, loopCommit("h1", "h0", 1)}
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	pr.Threads = []forge.Thread{th}
	return pr, th
}

// TestPR_T1_RepliedButUnresolvedThreadKeepsTheRunFromSuccess: conjunct 3
// of two-stable is that every trusted thread is replied AND resolved. A
// thread converge replied to whose resolve a crash lost is still awaiting:
// with every other conjunct holding (clean review of the head, green CI,
// no structural finding) the run must not end two-stable with it open —
// neither a resumed run nor a new run on the same PR.
func TestPR_T1_RepliedButUnresolvedThreadKeepsTheRunFromSuccess(t *testing.T) {
	for _, disp := range []Disposition{DispAddressed, DispSettled, DispStale} {
		for name, s := range map[string]State{"resumed": verifying("h1", 2), "new run": {}} {
			t.Run(string(disp)+"/"+name, func(t *testing.T) {
				pr, _ := crashedReply(disp)
				_, acts, term := Decide(s, obs(at(2), pr), cfg())
				if term != nil {
					t.Fatalf("terminal %s (%s) with thread T1 replied and still open", term.Reason, term.Message)
				}
				if findAct(acts, ActResolve, "T1") == nil {
					t.Fatalf("T1 not resolved: %q", sig(acts))
				}
			})
		}
	}

	// Once the resolve lands the thread no longer holds the run back.
	pr, _ := crashedReply(DispAddressed)
	pr.Threads[0].IsResolved = true
	_, _, term := Decide(verifying("h1", 2), obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
}

// TestREL_2_RepliedThreadLeftOpenByACrashIsResolvedNotAnsweredAgain: the
// reply on the forge is the record (PR-S12's marker). A thread converge
// answered before a crash lost the resolve is resolved under that reply —
// never triaged, fixed or answered a second time.
func TestREL_2_RepliedThreadLeftOpenByACrashIsResolvedNotAnsweredAgain(t *testing.T) {
	for _, disp := range []Disposition{DispAddressed, DispSettled, DispStale} {
		for _, tc := range []struct {
			name  string
			s     State
			round string
		}{{"resumed", verifying("h1", 2), "round-3"}, {"new run", State{}, "round-1"}} {
			t.Run(string(disp)+"/"+tc.name, func(t *testing.T) {
				pr, _ := crashedReply(disp)
				_, acts, _ := Decide(tc.s, obs(at(2), pr), cfg())
				wantActs(t, acts, "set-status pending h1", "resolve "+tc.round+"/resolve/T1")
			})
		}
	}
}
