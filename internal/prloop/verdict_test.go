package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_T10_CheckRunVerdictBlocksUnlessProven: as a check run, only
// two-stable concludes success; every other terminal concludes failure
// or action_required, which branch protection blocks on (never neutral,
// which it lets pass). Read back, each conclusion is the state it was made
// from, so a head that shows its verdict as a check run gets no second
// write, on this run or the next.
func TestPR_T10_CheckRunVerdictBlocksUnlessProven(t *testing.T) {
	for _, r := range []Reason{ReasonTwoStable, ReasonHumanPush, ReasonBaseMoved, ReasonNoIndependentReview, ReasonConvergenceFailure,
		ReasonCapExhausted, ReasonIdleTimeout, ReasonStoppedByHuman, ReasonErrored, ReasonHandedOff, ReasonAllConflicting} {
		st := statusFor(r)
		c := checkConclusion(st)
		switch {
		case r == ReasonTwoStable && c != "success":
			t.Errorf("%s concludes %q, want success", r, c)
		case r != ReasonTwoStable && c != "failure" && c != "action_required":
			t.Errorf("%s concludes %q: branch protection would not block an unproven head", r, c)
		}
		if back := conclusionState(c); back != st {
			t.Errorf("%s: %s → %q → %s; a shown verdict would be published again", r, st, c, back)
		}
		pr := newPR("h1")
		pr.Labels = []string{LabelNeedsAttention}
		if r == ReasonTwoStable {
			pr.Labels = []string{LabelReady}
		}
		pr.Checks.Contexts = append(pr.Checks.Contexts, forge.CheckContext{Name: StatusContext, Status: forge.CheckCompleted, Conclusion: forge.CheckConclusion(strings.ToUpper(c))})
		if acts := terminalActions(&Terminal{Reason: r}, pr, cfg()); findAct(acts, ActSetStatus, "") != nil {
			t.Errorf("%s: the head shows the verdict as a check run, yet it is published again: %q", r, sig(acts))
		}
	}
	if checkConclusion(forge.StatusPending) != "" || conclusionState("") != forge.StatusPending {
		t.Error("a pending verdict is not an in-progress check run")
	}
}

// TestPR_T10_VerdictCarriesTheProofAndRounds: the check run's title is
// the action's reason and its summary the terminal, the proof and one
// line per round; while a loop works, the summary says so.
func TestPR_T10_VerdictCarriesTheProofAndRounds(t *testing.T) {
	pr := newPR("h2")
	proof := &Proof{PR: pr.URL, HeadSHA: "h2", ReviewedCommit: "h2", ReviewID: "PRR_9", ReviewSource: "copilot", ReviewedAt: at(5),
		CIState: "success", MergeState: forge.MergeClean, RoundsRun: 2, HandOffs: []string{"PRRT_x|y"}}
	st := State{Rounds: []RoundRecord{{N: 1, HeadSHA: "h1", CommitSHA: "h2", Structural: true, Findings: []Finding{{ID: "a"}, {ID: "b"}}}, {N: 2, HeadSHA: "h2"}},
		Terminal: &Terminal{Reason: ReasonTwoStable, Message: "two-stable on h2 after 2 round(s)", Proof: proof}}
	a := Action{Kind: ActSetStatus, SHA: "h2", State: forge.StatusSuccess, Reason: "two-stable: copilot review of h2, 2 round(s), CI success"}
	v := verdictOf(st, pr, a)
	if v.Name != "converge" || v.SHA != "h2" || v.Conclusion != "success" || v.Title != a.Reason || v.DetailsURL != pr.URL {
		t.Fatalf("verdict %+v", v)
	}
	for _, w := range []string{"**two-stable** (exit 0): two-stable on h2 after 2 round(s)", "### Proof", "| reviewed commit | h2 (copilot review PRR_9 at ",
		"| hand-offs | PRRT_x\\|y |", "| rounds run | 2 |", "### Rounds", "| 1 | h1 | 2 | yes | h2 |", "| 2 | h2 | 0 | no | none |"} {
		if !strings.Contains(v.Summary, w) {
			t.Errorf("summary lacks %q:\n%s", w, v.Summary)
		}
	}
	pending := verdictOf(State{Rounds: st.Rounds[:1]}, pr, Action{Kind: ActSetStatus, SHA: "h2", State: forge.StatusPending, Reason: "converge: round 2 running"})
	if pending.Conclusion != "" || !strings.HasPrefix(pending.Summary, "converge is working on h2: converge: round 2 running") || !strings.Contains(pending.Summary, "| 1 | h1 |") {
		t.Fatalf("pending verdict %+v", pending)
	}
}
