package prloop

import (
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// statusFor is the PR-T10 verdict a terminal publishes on the head: a
// bound or a failure to converge is a failure of the run; every hand-off
// is an error state, which tools read as "not proven".
func statusFor(reason Reason) forge.CommitStatusState {
	switch reason {
	case ReasonTwoStable:
		return forge.StatusSuccess
	case ReasonCapExhausted, ReasonConvergenceFailure:
		return forge.StatusFailure
	}
	return forge.StatusError
}

func hasLabel(pr *forge.PullRequest, label string) bool {
	for _, l := range pr.Labels {
		if strings.EqualFold(l, label) {
			return true
		}
	}
	return false
}

// terminalActions are a terminal's side effects: label hygiene (PR-T1,
// PR-T2, PR-T8) and the published verdict (PR-T10). Each is emitted only
// when the forge does not already show it, so a second run on a converged
// PR writes nothing (PR-S12). A closed PR gets nothing: it is not ours.
func terminalActions(t *Terminal, pr *forge.PullRequest, c Config) []Action {
	if pr == nil || t.Reason == ReasonPRClosed || t.Reason == ReasonTakenOver {
		// A closed PR is not ours; a taken-over one is another run's.
		return nil
	}
	add, remove := LabelNeedsAttention, LabelReady
	if t.Reason == ReasonTwoStable {
		add, remove = LabelReady, LabelNeedsAttention
	}
	var acts []Action
	if !hasLabel(pr, add) {
		a := Action{Kind: ActAddLabel, Key: "terminal/add-label/" + add, Label: add, Reason: string(t.Reason)}
		if t.Proof != nil {
			// The head the verdict proved: the act publishes for no other
			// (PR-T14, ErrHeadMoved).
			a.SHA = t.Proof.HeadSHA
		}
		acts = append(acts, a)
	}
	if hasLabel(pr, remove) {
		acts = append(acts, Action{Kind: ActRemoveLabel, Key: "terminal/remove-label/" + remove, Label: remove, Reason: string(t.Reason)})
	}
	st := statusFor(t.Reason)
	if pr.HeadSHA != "" && convergeStatus(pr.Checks) != st {
		acts = append(acts, Action{
			Kind: ActSetStatus, Key: fmt.Sprintf("status/%s/%s", pr.HeadSHA, st),
			SHA: pr.HeadSHA, State: st, Reason: statusDescription(t),
		})
	}
	if f := t.AgentFailure; f != nil && pr.HeadSHA != "" && !agentFailurePosted(pr, f, c) {
		// Beside the label, the PR says which agent failed and why: the
		// label alone sends a human to a log they may not have (AG-T4).
		acts = append(acts, Action{Kind: ActComment, Key: "terminal/agent-failure/" + pr.HeadSHA + "/" + markerField(f.Agent),
			SHA: pr.HeadSHA, Body: agentFailureBody(f, pr.HeadSHA), Reason: agentFailureReason})
	}
	return acts
}

// statusDescription fits the verdict in a commit status description
// (GitHub allows 140 characters).
func statusDescription(t *Terminal) string {
	if p := t.Proof; p != nil {
		d := fmt.Sprintf("two-stable: %d round(s), CI %s, 0 threads awaiting reply", p.RoundsRun, p.CIState)
		if p.ReviewID != "" {
			d = fmt.Sprintf("two-stable: %s review of %s, %d round(s), CI %s", p.ReviewSource, text.ShortSHA(p.ReviewedCommit), p.RoundsRun, p.CIState)
		}
		return text.Clip(d, 140)
	}
	return text.Clip(string(t.Reason)+": "+t.Message, 140)
}

// Fail ends a run outside Decide's own rules, for the engine: an unhandled
// error (ReasonErrored, PR-T8) gets the same label and status hygiene as
// every other non-success terminal. The state comes back PhaseDone so a
// later Decide returns the terminal again.
func Fail(s State, o Observation, reason Reason, message string) (State, []Action, *Terminal) {
	return failWith(s, o, &Terminal{Reason: reason, ExitCode: ExitCode(reason), Message: message}, Config{})
}

// failWith ends the run with t, which gets the usage of the rounds so far.
func failWith(s State, o Observation, t *Terminal, c Config) (State, []Action, *Terminal) {
	c = c.observed(o)
	s = s.clone()
	t.Usage = UsageOf(s)
	s.Phase, s.Terminal = PhaseDone, t
	return s, terminalActions(t, o.PR, c), t
}
