package prloop

import (
	"fmt"

	"github.com/convergeloop/converge/internal/forge"
)

// verdict is the four conjuncts of two-stable (PR-T1) on one observation.
type verdict struct {
	minorOnly bool          // (1) no structural finding this round
	ci        string        // (2) CI on the head
	ciOK      bool          //     settled and passed, or no checks where none are expected
	awaiting  []string      // (3) unresolved actionable threads
	review    *forge.Review // (4) a successful Copilot review of the head
	reviewOK  bool          //     or single-iteration mode, where no review can come
	views     []threadView
}

func (d *step) verdict(minorOnly bool) verdict {
	v := verdict{minorOnly: minorOnly, ci: ciState(d.pr.Checks), views: classifyThreads(d.s, d.o, d.c)}
	v.ciOK = v.ci == ciSuccess || (v.ci == ciNone && d.c.ExpectNoChecks)
	for _, tv := range v.views {
		if tv.Kind == thFinding || tv.Kind == thStale {
			v.awaiting = append(v.awaiting, tv.T.ID)
		}
	}
	v.review = reviewedHead(d.pr, d.c)
	v.reviewOK = v.review != nil || d.s.SingleIteration
	return v
}

// succeed ends the run two-stable with its proof (PR-T9).
func (d *step) succeed(v verdict) {
	p := d.proof(v)
	msg := fmt.Sprintf("two-stable on %s after %d round(s)", abbrev(p.HeadSHA), p.RoundsRun)
	if p.ReviewID != "" {
		msg += fmt.Sprintf("; Copilot reviewed %s", abbrev(p.ReviewedCommit))
	}
	d.end(ReasonTwoStable, msg, p)
}

// proof is what is printed and stored at success: facts read from the
// forge on this observation, not the loop's memory of them.
func (d *step) proof(v verdict) *Proof {
	pr := d.pr
	p := &Proof{
		PR:                       prName(pr),
		HeadSHA:                  pr.HeadSHA,
		ReviewSource:             "none",
		CIState:                  v.ci,
		OpenThreadsAwaitingReply: len(v.awaiting),
		EscalatedThreads:         []string{},
		HandOffs:                 []string{},
		RoundsRun:                d.s.Round,
		RevertedRounds:           []int{},
		MergeState:               pr.MergeState,
	}
	if v.ci == ciNone {
		p.CIState = "none (no checks expected)"
	}
	// The round's accepted review is the one to cite when it is of this
	// head; otherwise the latest successful review of the head.
	r := v.review
	for i := range pr.Reviews {
		if acc := &pr.Reviews[i]; acc.ID == d.s.AcceptedReview && acc.CommitSHA == pr.HeadSHA && !isErrorReview(acc.Body) {
			r = acc
		}
	}
	if r != nil {
		p.ReviewedCommit, p.ReviewID, p.ReviewSource, p.ReviewedAt = r.CommitSHA, r.ID, "copilot", r.SubmittedAt
	}
	for _, tv := range v.views {
		switch tv.Kind {
		case thEscalated:
			p.EscalatedThreads = append(p.EscalatedThreads, tv.T.ID)
		case thDeferred, thUntrusted:
			p.HandOffs = append(p.HandOffs, tv.T.ID)
		}
	}
	if pr.MergeState == forge.MergeBehind {
		p.Notes = append(p.Notes, "the branch is BEHIND its base: not terminal (PR-T7); merge the base in before merging")
	}
	if d.s.SingleIteration {
		p.Notes = append(p.Notes, "single-iteration mode ("+d.s.SingleIterationWhy+"): converged on zero threads awaiting reply and CI; no independent review of this head ran (no local review exists yet)")
	}
	return p
}

func prName(pr *forge.PullRequest) string {
	switch {
	case pr.URL != "":
		return pr.URL
	case pr.Ref.Host != "":
		return pr.Ref.String()
	}
	return fmt.Sprintf("#%d", pr.Number)
}
