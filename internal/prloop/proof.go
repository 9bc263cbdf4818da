package prloop

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
)

// verdict is the four conjuncts of two-stable (PR-T1) on one observation,
// with what keeps a run from success beyond them (PR-T11, PR-T13).
type verdict struct {
	minorOnly bool   // (1) no structural finding this round
	ci        string // (2) CI on the head
	ciOK      bool   //     settled and passed, or no checks where none are expected
	awaiting  []string
	// (4) the independent review of the head: the review bot's latest
	// review (review) or the local multi-angle review (local).
	review    *forge.Review
	local     *LocalReviewRecord
	reviewOK  bool
	reviewWhy string // why (4) does not hold
	// latest is the review bot's latest review and signal what it says.
	latest    *forge.Review
	signal    review.Signal
	signalWhy string
	// unseen are reviews that count more comments of their own than the
	// threads show yet (PR-O2): nothing is proven while one is.
	unseen   []forge.Review
	handOffs []string // open trusted threads converge handed to a human
	blockers []string // trusted humans whose latest review requests changes
	views    []threadView
}

func (d *step) verdict(minorOnly bool) verdict {
	v := verdict{minorOnly: minorOnly, ci: ciState(d.pr.Checks), views: classifyThreads(d.s, d.o, d.c)}
	v.ciOK = v.ci == ciSuccess || (v.ci == ciNone && d.c.ExpectNoChecks)
	for _, tv := range v.views {
		switch tv.Kind {
		case thFinding, thStale, thDropped, thPendingResolve:
			v.awaiting = append(v.awaiting, tv.T.ID)
		case thEscalated, thDeferred:
			v.handOffs = append(v.handOffs, tv.T.ID)
		}
	}
	for _, f := range commentFindings(d.pr, d.o, d.c) {
		v.awaiting = append(v.awaiting, f.ID)
	}
	v.blockers = changesRequested(d.pr, d.o, d.c)
	v.review, v.latest, v.signal, v.reviewWhy = d.botArm()
	for _, r := range d.pr.Reviews {
		// A PENDING review is a draft only its author sees, comments and
		// all; it is not on the PR yet.
		if r.State == forge.ReviewPending {
			continue
		}
		if r.CommentCount > reviewComments(r, d.pr) || d.botUnsettled(r, v.latest) {
			v.unseen = append(v.unseen, r)
		}
	}
	v.signalWhy = v.reviewWhy
	if lr := d.s.localReview(d.head); lr != nil {
		switch {
		case lr.Degraded:
			v.reviewWhy += "; the local review of the head was degraded"
		case lr.structural() > 0:
			// Its findings keep conjunct 1 from holding; as a review it ran.
			v.local = lr
		default:
			v.local = lr
		}
	} else if d.c.LocalReview {
		v.reviewWhy += "; no local review of the head yet"
	}
	v.reviewOK = v.review != nil || v.local != nil
	return v
}

// botUnsettled reports an earlier review by the bot whose body states
// more comments than the PR shows (PR-O2). The forge can lag the comment
// count together with the threads, so the count alone does not tell; a
// review the loop re-requested past while its comments were still
// invisible keeps its threads open at the forge, and a clean later
// review must not read them as zero. The latest review is read as the
// signal of conjunct 4 instead (botArm).
func (d *step) botUnsettled(r forge.Review, latest *forge.Review) bool {
	if !isBot(r.Author, d.c) || (latest != nil && latest.ID == r.ID) {
		return false
	}
	sig, _ := readReview(r, d.pr, d.c)
	return sig == review.Unsettled
}

// botArm is PR-T1(4) for the review bot: its latest review on the PR is of
// the head, was submitted after the loop's last push, and reads clean or
// with settled findings. A review of an earlier head never counts, even
// one of a commit that became the head again after a force-push (it is
// not the latest).
func (d *step) botArm() (ok, latest *forge.Review, sig review.Signal, why string) {
	latest = latestBot(d.pr, d.c)
	if latest == nil {
		return nil, nil, review.NoSignal, "no review by " + botName(d.c) + " on the pull request"
	}
	if latest.CommitSHA != d.head {
		return nil, latest, review.NoSignal, fmt.Sprintf("%s's latest review %s is of %s, not the head", d.c.Bot.Name(), latest.ID, text.ShortSHA(latest.CommitSHA))
	}
	if p := d.s.PushedForgeAt; d.s.LastLoopSHA == d.head && !p.IsZero() && latest.SubmittedAt.Before(p.Truncate(time.Second)) {
		return nil, latest, review.NoSignal, fmt.Sprintf("%s's latest review %s predates the loop's last push", d.c.Bot.Name(), latest.ID)
	}
	if fp := d.pr.LastForcePush(); !fp.IsZero() && !latest.SubmittedAt.After(fp) && !d.requestedAfter(latest, fp) {
		// A review of a commit that became the head again by a force-push
		// is a review of an earlier state of the branch (PR-T1(4)); at
		// the forge's one-second resolution a tie does not count.
		return nil, latest, review.NoSignal, fmt.Sprintf("%s's latest review %s was submitted before the last push to the head ref (a force-push at %s)",
			d.c.Bot.Name(), latest.ID, fp.UTC().Format(time.RFC3339))
	}
	sig, why = readReview(*latest, d.pr, d.c)
	switch sig {
	case review.Clean, review.Findings:
		return latest, latest, sig, ""
	}
	return nil, latest, sig, fmt.Sprintf("%s's latest review %s is %s: %s", d.c.Bot.Name(), latest.ID, sig, why)
}

// requestedAfter reports a review this round requested after the
// force-push at fp and saw start: it is newer than the push whatever the
// timestamps' resolution says.
func (d *step) requestedAfter(r *forge.Review, fp time.Time) bool {
	q := d.s.Request
	return q.Accepted == r.ID && q.Head == d.head && !q.ForgeAt.Before(fp) && !slices.Contains(q.SeenReviews, r.ID)
}

// ownStatusUnsettled: the head's merge state reads UNSTABLE while every
// check but converge's own passed, and converge's own verdict on the head
// is a failure or an error from before: the merge state is then
// converge's own doing, so the success status goes first and the proof
// reads the merge state on the next observation.
func (d *step) ownStatusUnsettled(v verdict) bool {
	own := convergeStatus(d.pr.Checks)
	return d.pr.MergeState == forge.MergeUnstable && (v.ci == ciSuccess || v.ci == ciNone) &&
		own != "" && own != forge.StatusSuccess && own != forge.StatusPending
}

// succeed ends the run two-stable with its proof (PR-T9).
func (d *step) succeed(v verdict) {
	if d.ownStatusUnsettled(v) {
		d.acts = append(d.acts, Action{Kind: ActSetStatus, Key: fmt.Sprintf("status/%s/%s", d.head, forge.StatusSuccess), SHA: d.head,
			State: forge.StatusSuccess, Round: d.s.Round, Reason: "two-stable: converge's verdict first, then the merge state is read again"})
		d.again("settling converge's own status on " + text.ShortSHA(d.head) + " before reading the merge state")
		return
	}
	p := d.proof(v)
	if tc := p.TestCensus; tc != nil && tc.Known && tc.Failed > 0 {
		// A proof never shows a failing test beside two-stable (PR-V4):
		// converge's own run of the head's tests is a fact of the head
		// like its CI.
		d.end(ReasonHandedOff, fmt.Sprintf("not two-stable: converge's test run of %s shows failing tests (%s); make them pass and run converge again",
			text.ShortSHA(p.HeadSHA), tc.Census), nil)
		return
	}
	msg := fmt.Sprintf("two-stable on %s after %d round(s)", text.ShortSHA(p.HeadSHA), p.RoundsRun)
	switch p.ReviewSource {
	case "none", "":
	case "local":
		msg += fmt.Sprintf("; the local multi-angle review of %s came back without structural findings", text.ShortSHA(p.ReviewedCommit))
	default:
		// The review bot, by its name (proof sets ReviewSource to it).
		msg += fmt.Sprintf("; %s reviewed %s", p.ReviewSource, text.ShortSHA(p.ReviewedCommit))
	}
	d.end(ReasonTwoStable, msg, p)
	// PR-S13: cleanup once after success, after the verdict is published.
	d.acts = append(d.acts, cleanupActions(d.s, d.o, d.c)...)
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
		UntrustedThreads:         []string{},
		RoundsRun:                d.s.Round,
		RevertedRounds:           append([]int{}, d.s.RevertedRounds...),
		MergeState:               pr.MergeState,
		ObservedAt:               d.o.Now,
	}
	if v.ci == ciNone {
		p.CIState = "none (no checks expected)"
	}
	switch {
	case v.review != nil:
		r := v.review
		p.ReviewedCommit, p.ReviewID, p.ReviewSource, p.ReviewedAt = r.CommitSHA, r.ID, d.c.Bot.Name(), r.SubmittedAt
	case v.local != nil:
		p.ReviewedCommit, p.ReviewSource, p.ReviewedAt = v.local.Head, "local", d.o.Now
		for _, rr := range d.s.Rounds {
			if rr.N == v.local.Round {
				p.ReviewedAt = rr.StartedAt
			}
		}
	}
	// At success every hand-off is resolved (PR-T11); the proof still
	// names every thread converge handed to a human.
	p.EscalatedThreads = d.handedOver(v, DispEscalated)
	p.HandOffs = d.handedOver(v, DispDeferred)
	var acked []string
	for _, tv := range v.views {
		switch tv.Kind {
		case thUntrusted:
			// SEC-1: listed, never acted on, and not handed to anyone.
			p.UntrustedThreads = append(p.UntrustedThreads, tv.T.ID)
		case thAcknowledged:
			acked = append(acked, tv.T.ID)
		}
	}
	if len(acked) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d open thread(s) only thank or approve, asking for nothing: no finding, left to their reviewers: %s",
			len(acked), strings.Join(acked, ", ")))
	}
	if how := d.behind(); how != "" {
		p.Notes = append(p.Notes, "the branch is "+how+" its base: not terminal (PR-T7); merge the base in before merging")
		if d.c.SyncBase && d.s.BaseSyncWhy != "" {
			p.Notes = append(p.Notes, "the base sync (sync_base) made no commit: "+d.s.BaseSyncWhy)
		}
	}
	if d.s.SingleIteration {
		p.Notes = append(p.Notes, "single-iteration mode ("+d.s.SingleIterationWhy+"): the local multi-angle review is the independent review")
	}
	if pr.MergeState == forge.MergeUnstable && (v.ci == ciSuccess || v.ci == ciNone) && convergeStatus(pr.Checks) == forge.StatusPending {
		// GitHub reads converge's own pending status as a check not
		// passing; the success this verdict publishes is the last one.
		p.Notes = append(p.Notes, "merge state UNSTABLE only from converge's own pending status on the head, which this verdict turns to success; every other check passed")
	}
	p.TestCensus = proofCensus(&d.s, pr.HeadSHA)
	// Each addressed thread's proof, its latest (PR-V7).
	at := map[string]int{}
	for _, tr := range d.s.Threads {
		if tr.Disposition != DispAddressed || strings.TrimSpace(tr.Reason) == "" {
			continue
		}
		fp := FindingProof{Thread: tr.ThreadID, Round: tr.Round, Proof: tr.Reason}
		if i, ok := at[tr.ThreadID]; ok {
			p.FindingProofs[i] = fp
			continue
		}
		at[tr.ThreadID] = len(p.FindingProofs)
		p.FindingProofs = append(p.FindingProofs, fp)
	}
	if d.s.BaselineRed {
		p.Notes = append(p.Notes, "the tests were red on the PR's head before any fix (baseline): "+d.s.BaselineTail)
	}
	return p
}

// handedOver are the threads, and the top-level comments and checks
// (PR-T13, PR-V5), converge handed to a human with disp: every one its
// records of this run name, and every one where the forge shows its
// reply with disp — not only as a thread's latest reply, which a later
// one (a human spoke, converge answered again) supersedes. A run that
// replied "Escalated to a human" anywhere never proves with none (issue
// 36). In the forge's order, then the records', each once.
func (d *step) handedOver(v verdict, disp Disposition) []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(id string) {
		if k := markerField(id); !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	for _, tv := range v.views {
		for _, m := range threadMarkers(tv.T, d.c) {
			if m.Disposition == disp {
				add(tv.T.ID)
			}
		}
	}
	for _, r := range d.s.Threads {
		if r.Disposition == disp {
			add(r.ThreadID)
		}
	}
	for _, ic := range d.pr.IssueComments {
		if !selfComment(ic.Author, d.c) {
			continue
		}
		for _, m := range ParseMarkers(ic.Body) {
			if m.Disposition == disp && isCommentKey(m.Thread) {
				add(m.Thread)
			}
		}
	}
	return out
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
