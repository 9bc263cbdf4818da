package prloop

import (
	"errors"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_T8_ErroredAndEveryNonSuccessTerminalNeedAttention: an unhandled
// error ends the run errored in a done state that holds the terminal (the
// engine persists that state before it acts), with needs-attention on,
// ready-for-merge off and a failed verdict; a later Decide on that state
// returns the same terminal and finishes only what the forge does not show
// yet. Every terminal but two-stable applies needs-attention; a forge that
// cannot take the label (auth, outage) gets no write at all.
func TestPR_T8_ErroredAndEveryNonSuccessTerminalNeedAttention(t *testing.T) {
	pr := newPR("h1")
	pr.Labels = []string{LabelReady}
	s, acts, term := Fail(verifying("h1", 2), obs(at(1), pr), ReasonErrored, "boom")
	wantTerminal(t, term, ReasonErrored)
	if s.Phase != PhaseDone || s.Terminal == nil || s.Terminal.Reason != ReasonErrored {
		t.Fatalf("the state does not hold the errored terminal: %+v", s)
	}
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "remove-label "+LabelReady, "set-status error h1")

	done := forgeApply(pr, acts, at(2))
	done.Labels = []string{LabelNeedsAttention}
	done.Checks = withConvergeStatus(done.Checks, "ERROR")
	_, again, term := Decide(s, obs(at(3), done), cfg())
	wantTerminal(t, term, ReasonErrored)
	wantActs(t, again)

	l := &Loop{Deps: Deps{Config: cfg()}}
	if _, a := l.Fail(verifying("h1", 2), obs(at(1), pr), &forge.Error{Kind: forge.KindAuth, Msg: "bad credentials"}); len(a) != 0 {
		t.Fatalf("a forge that refuses the token is written to: %q", sig(a))
	}
	if _, a := l.Fail(verifying("h1", 2), obs(at(1), pr), errors.New("disk full")); len(a) != 3 {
		t.Fatalf("an unhandled error gets the label and the verdict: %q", sig(a))
	}

	for _, r := range []Reason{ReasonPRClosed, ReasonHumanPush, ReasonBaseMoved, ReasonNoIndependentReview, ReasonConvergenceFailure,
		ReasonCapExhausted, ReasonIdleTimeout, ReasonStoppedByHuman, ReasonErrored, ReasonHandedOff, ReasonAllConflicting} {
		got := terminalActions(&Terminal{Reason: r}, newPR("h1"), cfg())
		if r == ReasonPRClosed {
			// A closed PR is not converge's to label (PR-T7).
			if len(got) != 0 {
				t.Errorf("%s: %q, want no write", r, sig(got))
			}
			continue
		}
		if a := findAct(got, ActAddLabel, ""); a == nil || a.Label != LabelNeedsAttention {
			t.Errorf("%s does not apply needs-attention: %q", r, sig(got))
		}
	}
}
