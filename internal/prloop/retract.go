package prloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// A verdict never outlives its facts (PR-T14). The ready label and a
// `converge` success on the head are what people merge on; both stay on
// the PR after the run that earned them ended. So every run that is not
// ending two-stable on this observation, and finds either still showing
// while a conjunct of PR-T1 no longer holds, takes them back at once —
// label off, the verdict on the head no longer success, one comment
// saying what broke — before it does anything else about it. A new run
// started on news about a finished PR (serve's rearm, `pr --watch`) is
// such a run: its first observation retracts or, when nothing broke,
// ends two-stable again without writing (PR-S12).

// Retraction is one withdrawal of the ready verdict: the head the
// observation showed, when, and what no longer held.
type Retraction struct {
	Head string    `json:"head"`
	At   time.Time `json:"at"`
	Why  []string  `json:"why"`
}

// retractReason is the reason of a retraction's actions.
const retractReason = "verdict-retracted"

// retractMarker ends a retraction comment, so the forge itself says one
// was posted for the head (a crash between posting and persisting is not
// repeated).
func retractMarker(head string, n int) string {
	return fmt.Sprintf("<!-- converge:retracted head=%s n=%d -->", markerField(head), n)
}

// retract withdraws a verdict the PR still shows when this observation
// does not prove it (PR-T14). It runs after the step decided, and only
// when the step does not end the run: a terminal's own label and status
// hygiene replaces the verdict then.
func (d *step) retract() {
	if d.term != nil || d.pr == nil || d.head == "" {
		return
	}
	ready := hasLabel(d.pr, LabelReady)
	own := convergeStatus(d.pr.Checks) == forge.StatusSuccess
	if !ready && !own {
		return
	}
	why := d.broken()
	if len(why) == 0 {
		// Every conjunct holds on this observation: the step goes on to
		// end two-stable, or to settle what the proof reads next.
		return
	}
	n := len(d.s.Retractions)
	if n == 0 || d.s.Retractions[n-1].Head != d.head || !sameWhy(d.s.Retractions[n-1].Why, why) {
		d.s.Retractions = append(d.s.Retractions, Retraction{Head: d.head, At: d.o.Now, Why: why})
		n++
	}
	key := fmt.Sprintf("retract/%s/%d", d.head, n)
	reason := "verdict retracted: " + strings.Join(why, "; ")
	var acts []Action
	if ready {
		acts = append(acts, Action{Kind: ActRemoveLabel, Key: key + "/label", Label: LabelReady, Round: d.s.Round, Reason: reason})
	}
	if own {
		// Even when the step goes on to mark the head pending (a round
		// starts): the retraction's writes come first, and the success
		// must not outlive them.
		acts = append(acts, Action{Kind: ActSetStatus, Key: key + "/status", SHA: d.head, State: forge.StatusFailure,
			Round: d.s.Round, Reason: text.Clip(reason, 140)})
	}
	if !retractionPosted(d.pr, d.head, n, d.c) {
		acts = append(acts, Action{Kind: ActComment, Key: key + "/comment", SHA: d.head, Round: d.s.Round,
			Body: retractBody(d.head, d.s.PriorVerdictHead, why, ready, own, n), Reason: retractReason})
	}
	// First, before the step's work: a fix takes minutes, and the PR must
	// not say "ready" for one of them.
	d.acts = append(acts, d.acts...)
}

// setsStatus reports a status on the head this step already writes (a
// round's pending status).
func (d *step) setsStatus() bool {
	for _, a := range d.acts {
		if a.Kind == ActSetStatus && a.SHA == d.head && a.State != forge.StatusSuccess {
			return true
		}
	}
	return false
}

// broken lists the conjuncts of the published verdict this observation
// does not show, in PR-T1's order; none means the verdict still holds.
func (d *step) broken() []string {
	var why []string
	if p := d.s.PriorVerdictHead; p != "" && p != d.head {
		why = append(why, fmt.Sprintf("a new head %s (the verdict was for %s)", text.ShortSHA(d.head), text.ShortSHA(p)))
	}
	v := d.verdict(true)
	if !v.ciOK {
		switch v.ci {
		case ciPending:
			why = append(why, fmt.Sprintf("CI runs again on %s", text.ShortSHA(d.head)))
		default:
			why = append(why, fmt.Sprintf("CI on %s is %s", text.ShortSHA(d.head), v.ci))
		}
	}
	why = append(why, v.blockers...)
	if n := len(v.awaiting); n > 0 {
		why = append(why, fmt.Sprintf("%d trusted thread(s) or comment(s) await a reply (%s)", n, strings.Join(firstN(v.awaiting, 3), ", ")))
	}
	if n := len(v.handOffs); n > 0 {
		why = append(why, fmt.Sprintf("%d thread(s) handed to a human are open", n))
	}
	if !v.reviewOK && (len(why) == 0 || d.s.PriorVerdictHead == d.head) {
		// A new head's review is missing by definition; said once.
		why = append(why, "no independent review of the head: "+strings.TrimPrefix(v.reviewWhy, "; "))
	}
	return why
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func sameWhy(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// retractionPosted reports converge's retraction comment n for head on the
// PR already.
func retractionPosted(pr *forge.PullRequest, head string, n int, c Config) bool {
	m := retractMarker(head, n)
	for _, ic := range pr.IssueComments {
		if strings.Contains(ic.Body, m) && selfComment(ic.Author, c) {
			return true
		}
	}
	return false
}

// retractBody is the one comment that says why the verdict went.
func retractBody(head, prior string, why []string, label, status bool, n int) string {
	var b strings.Builder
	on := text.ShortSHA(head)
	if prior != "" {
		on = text.ShortSHA(prior)
	}
	fmt.Fprintf(&b, "**converge withdrew its verdict** on %s: it no longer holds.\n\n", on)
	for _, w := range why {
		fmt.Fprintf(&b, "- %s\n", defang(w))
	}
	var did []string
	if label {
		did = append(did, "the `"+LabelReady+"` label is removed")
	}
	if status {
		did = append(did, "the `"+StatusContext+"` verdict on "+text.ShortSHA(head)+" is no longer success")
	}
	if len(did) > 0 {
		fmt.Fprintf(&b, "\n%s; converge works on the pull request again.\n", upperFirst(strings.Join(did, " and ")))
	}
	b.WriteString("\n" + retractMarker(head, n) + "\n")
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// voidUnpublished is PR-T14's other half: a two-stable terminal decided
// on an earlier observation whose head is no longer the PR's head was
// never a verdict on that head. Its labels and status are not written
// (the act that would have found the head moved, ErrHeadMoved); the run
// goes on from the check of the new head instead, and what moved the head
// is judged there (a human push ends it, PR-T4).
func (s State) voidUnpublished(o Observation) (State, bool) {
	t := s.Terminal
	if s.Phase != PhaseDone || t == nil || t.Reason != ReasonTwoStable || t.Proof == nil || o.PR == nil {
		return s, false
	}
	if o.PR.State != forge.StateOpen || o.PR.HeadSHA == "" || o.PR.HeadSHA == t.Proof.HeadSHA {
		return s, false
	}
	s = s.clone()
	s.Retractions = append(s.Retractions, Retraction{Head: o.PR.HeadSHA, At: o.Now, Why: []string{
		fmt.Sprintf("the head moved to %s before the verdict on %s was published", text.ShortSHA(o.PR.HeadSHA), text.ShortSHA(t.Proof.HeadSHA)),
	}})
	s.Terminal, s.Phase = nil, PhaseVerify
	return s, true
}

// ErrHeadMoved is a ready verdict's act that found the PR's head is no
// longer the head the verdict proved: nothing was written, and the loop
// observes again at once (engine: ObserveNow).
type ErrHeadMoved struct{ Proved, Head string }

func (e *ErrHeadMoved) Error() string {
	return fmt.Sprintf("the head moved to %s after the verdict on %s was decided; not published", text.ShortSHA(e.Head), text.ShortSHA(e.Proved))
}

// ObserveNow tells the engine this fault is answered by a new observation,
// not by waiting.
func (e *ErrHeadMoved) ObserveNow() bool { return true }

// headMoved reports a fault a new observation answers (ErrHeadMoved, a
// push the moved branch refused): transient on every engine.
func headMoved(err error) bool {
	var now interface{ ObserveNow() bool }
	return errors.As(err, &now) && now.ObserveNow()
}

// PriorVerdictHead reads, from a PR's earlier runs (newest first), the
// head the newest of them proved two-stable, when it is also the newest
// finished run: the verdict the PR may still show.
func PriorVerdictHead(runs []store.Run) string {
	for _, r := range runs {
		if !r.Finished() || r.Status == "interrupted" || r.Status == "refused" {
			// Ended without a verdict of its own: the one before stands.
			continue
		}
		if r.Status != string(ReasonTwoStable) || len(r.Proof) == 0 {
			return ""
		}
		var p Proof
		if json.Unmarshal(r.Proof, &p) != nil {
			return ""
		}
		return p.HeadSHA
	}
	return ""
}

// ProofObservedAt is when the observation a finished run's proof was
// decided on began (zero when the run holds no proof, or one recorded
// before proofs said): news on the PR after it is news the verdict did not
// read.
func ProofObservedAt(r store.Run) time.Time {
	var p Proof
	if len(r.Proof) == 0 || json.Unmarshal(r.Proof, &p) != nil {
		return time.Time{}
	}
	return p.ObservedAt
}
