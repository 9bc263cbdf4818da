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

const (
	// maxTransitions bounds the phases one Decide walks on one observation.
	// The longest real chain is reply → verify → request → triage → verify.
	maxTransitions = 12
	// maxReplyPasses bounds how often the reply phase asks again for
	// replies and resolves the forge does not show yet; after that the
	// verdict counts what is still open rather than the loop hanging.
	maxReplyPasses = 3
)

// Decide is the whole PR loop as a pure function (DESIGN: the one idea).
// It reads the fresh observation against the persisted state and returns
// the next state, the actions to run in order, and a terminal when the run
// ends (with that terminal's label and status actions). It never sleeps:
// an ActWait asks the engine to observe again after its own back-off.
func Decide(s State, o Observation, c Config) (State, []Action, *Terminal) {
	c = c.observed(o)
	s = s.clone()
	if v, ok := s.voidUnpublished(o); ok {
		s = v
	}
	if s.Phase == PhaseDone && s.Terminal != nil {
		// The terminal's labels and status again, as far as the forge does
		// not show them yet: a write a fault interrupted is finished. So
		// is the last round's summary, a crash may have cut short.
		d := &step{s: s, o: o, c: c, pr: o.PR}
		d.summaryLost()
		acts := append(d.acts, terminalActions(s.Terminal, o.PR, c)...)
		if s.Terminal.Reason == ReasonTwoStable {
			acts = append(acts, cleanupActions(s, o, c)...)
		}
		return s, acts, s.Terminal
	}
	if o.PR == nil {
		return s, []Action{{Kind: ActWait, Key: roundKey(s.Round, "wait"), Reason: "no observation of the pull request"}}, nil
	}
	d := &step{s: s, o: o, c: c, pr: o.PR, head: o.PR.HeadSHA}
	d.bookkeep()
	if d.preTerminal() {
		return d.s, d.acts, d.term
	}
	d.runPhases()
	// Work in flight is finished before a time guard may end the run: a
	// pushed fix without its replies is the half-done state PR-S12 forbids.
	if d.term == nil && d.s.Phase != PhaseFix && d.s.Phase != PhaseReply {
		if reason, msg := d.guards(); reason != "" {
			d.end(reason, msg, nil)
		}
	}
	d.retract()
	d.keepLease()
	return d.s, d.acts, d.term
}

// WantsEvents tells the engine to read the PR's issue events with the next
// observation (PR-O1: only while a requested Copilot review has not
// started). It is also true in the phases that may start the next round on
// the same observation, because the request's baseline event id must be
// read before the request is made.
func (s State) WantsEvents() bool {
	if s.SingleIteration {
		return false
	}
	switch s.Phase {
	case "", PhaseStart, PhaseRequest, PhaseReply, PhaseVerify:
		return true
	case PhaseAwaitReview:
		return !s.Request.Started
	}
	return false
}

// step is one Decide call: the state being changed, the observation it is
// changed against, and what it has decided so far.
type step struct {
	s    State
	o    Observation
	c    Config
	pr   *forge.PullRequest
	head string

	acts []Action
	term *Terminal
	// path is the commits from the head back to the previous last loop
	// commit, head first, as the PR-T4 walk found them: a crash after a
	// push is recognised in it.
	path          []forge.Commit
	roundsStarted int
	// stopWhy is a stop request held until the fix in flight has its
	// replies (PR-G5).
	stopWhy string
}

// bookkeep records what every observation teaches, whatever the phase.
func (d *step) bookkeep() {
	s, o := &d.s, d.o
	if s.Phase == "" {
		s.Phase = PhaseStart
	}
	if s.StartedAt.IsZero() {
		if l, ok := HeadLease(d.pr); ok && l.Run != s.RunID {
			// Held when this run started: the start was refused unless
			// told to take over, so it is no take-over of this run.
			s.LeaseAtStart = l.Run
		}
		s.StartedAt = o.Now
		s.InitialHead, s.LastLoopSHA = d.head, d.head
		s.InitialDiffLines = o.BaseDiffLines
		s.LastActivityAt = o.Now
	}
	if d.head != s.HeadSeen {
		s.HeadSeen, s.HeadSeenAt = d.head, o.Now
	}
	if t := latestActivity(d.pr, d.c); t.After(s.LastActivityAt) {
		s.LastActivityAt = t
	}
	if slices.ContainsFunc(s.Threads, func(r ThreadRecord) bool { return r.Resolved && !r.ObservedResolved }) {
		resolved := make(map[string]bool, len(d.pr.Threads))
		for _, t := range d.pr.Threads {
			resolved[t.ID] = t.IsResolved
		}
		for i := range s.Threads {
			if s.Threads[i].Resolved && resolved[s.Threads[i].ThreadID] {
				s.Threads[i].ObservedResolved = true
			}
		}
	}
	if !s.SingleIteration {
		switch {
		case o.Result != nil && o.Result.RequestRefused:
			s.SingleIteration = true
			s.SingleIterationWhy = "the forge refused the " + botName(d.c) + " review request"
			if o.Result.RefusedReason != "" {
				s.SingleIterationWhy += ": " + o.Result.RefusedReason
			}
		case d.c.Bot == nil:
			s.SingleIteration = true
			s.SingleIterationWhy = "no review bot is configured for this forge"
		case !d.c.ExpectsBot:
			s.SingleIteration = true
			s.SingleIterationWhy = "no " + botName(d.c) + " review is expected on this repository (--no-copilot)"
		}
	}
	if r := o.Result; r != nil {
		if lr := r.LocalReview; lr != nil {
			if lr.Head != "" {
				d.recordLocalReview(*lr)
			}
			if s.Round > 0 && (lr.Usage.TotalTokens() > 0 || lr.Usage.CostReported) {
				// The angles are agent runs like the fixers: what they
				// consumed is the round's cost too (PR-M5).
				d.round().Usage.Add(lr.Usage)
			}
		}
		if f := r.Fix; f != nil && f.BaselineRed {
			s.BaselineRed, s.BaselineTail = true, f.BaselineTail
		}
		if cr := r.Classify; cr != nil {
			d.recordClassified(*cr)
		}
	}
	if s.NoSignalHead != d.head {
		s.NoSignalHead, s.NoSignalTries = d.head, 0
	}
}

// recordLocalReview keeps the latest local review per head; a few heads
// are enough, since only the current head's review ever counts.
func (d *step) recordLocalReview(lr LocalReviewResult) {
	s := &d.s
	rec := LocalReviewRecord{Head: lr.Head, Round: s.Round, Degraded: lr.Degraded, Findings: slices.Clone(lr.Findings), Summary: lr.Summary}
	out := s.LocalReviews[:0:0]
	for _, r := range s.LocalReviews {
		if r.Head != lr.Head {
			out = append(out, r)
		}
	}
	out = append(out, rec)
	if len(out) > 3 {
		out = out[len(out)-3:]
	}
	s.LocalReviews = out
}

// localReview is the local review of head, if one ran.
func (s State) localReview(head string) *LocalReviewRecord {
	for i := len(s.LocalReviews) - 1; i >= 0; i-- {
		if s.LocalReviews[i].Head == head {
			return &s.LocalReviews[i]
		}
	}
	return nil
}

// preTerminal checks the terminals that hold whatever the phase, in the
// order of PR-T7 (stopped-by-human right after pr-closed: a closed PR is
// the stronger fact).
func (d *step) preTerminal() bool {
	switch d.pr.State {
	case forge.StateClosed, forge.StateMerged:
		d.end(ReasonPRClosed, fmt.Sprintf("the pull request is %s; converge never pushes to it", d.pr.State), nil)
		return true
	}
	if d.o.StopRequested && d.stop("a human asked converge to stop (converge stop, or a signal)") {
		return true
	}
	if l, ok := d.takenOver(); ok {
		// Another converge took the PR over: it drives now, and this run
		// writes nothing more (terminalActions: none for taken-over).
		d.end(ReasonTakenOver, fmt.Sprintf("%s took the pull request over; this run yields", l), nil)
		return true
	}
	// The stop label or a /converge stop comment, from a trusted author
	// (PR-G5). The label stays: later runs stop too until it is removed.
	if stop, why := humanStop(d.s, d.o, d.c); stop && d.stop(why) {
		return true
	}
	if msg := d.humanPush(); msg != "" {
		d.end(ReasonHumanPush, msg, nil)
		return true
	}
	if d.pr.MergeState == forge.MergeDirty {
		d.end(ReasonBaseMoved, fmt.Sprintf("%s conflicts with %s; merge the base in by hand, then run converge again", d.pr.HeadRef, d.pr.BaseRef), nil)
		return true
	}
	return false
}

// stop ends the run stopped-by-human, unless a fix is in flight: a push
// and the replies and resolves of the threads it addresses are one step
// (PR-G5), so the stop waits in stopWhy until the reply phase is done.
// The request is seen again on every observation (the store's flag, the
// label, the comment), so nothing of it needs persisting.
func (d *step) stop(why string) bool {
	if d.s.Phase == PhaseFix || d.s.Phase == PhaseReply {
		d.stopWhy = why
		return false
	}
	d.end(ReasonStoppedByHuman, why, nil)
	return true
}

// humanPush is PR-T4. It walks from the head through first parents to the
// last loop commit; every commit on the way must carry the loop's trailer.
// When all do (the loop's own push, perhaps not yet recorded because of a
// crash) the last loop commit advances to the head.
func (d *step) humanPush() string {
	s := &d.s
	if d.head == s.LastLoopSHA || d.lagging() {
		return ""
	}
	if r := d.o.Result; r != nil && r.Fix != nil && r.Fix.CommitSHA != "" && r.Fix.CommitSHA == d.head {
		// The fix just reported pushing exactly this head: it is ours even
		// if the observation's commit list has not caught up with it.
		s.LastLoopSHA = d.head
		return ""
	}
	bySHA := make(map[string]forge.Commit, len(d.pr.Commits))
	for _, c := range d.pr.Commits {
		bySHA[c.SHA] = c
	}
	var path []forge.Commit
	cur := d.head
	for cur != s.LastLoopSHA {
		c, ok := bySHA[cur]
		if !ok || len(path) > len(d.pr.Commits) {
			return fmt.Sprintf("the head %s does not descend from converge's last commit %s (a force-push or a rewrite)", text.ShortSHA(d.head), text.ShortSHA(s.LastLoopSHA))
		}
		if _, ok := roundTrailer(c.Message); !ok {
			return fmt.Sprintf("commit %s has no %s trailer: someone else pushed to the branch", text.ShortSHA(c.SHA), CommitTrailer)
		}
		path = append(path, c)
		if len(c.Parents) == 0 {
			cur = ""
			continue
		}
		cur = c.Parents[0]
	}
	d.path = path
	s.LastLoopSHA = d.head
	return ""
}

// lagging reports an observation that still shows a head from before the
// loop's own push: the forge lags a push by seconds, and reading that as a
// force-push (or reviewing the old head) would be wrong. Bounded by
// PushVisibleWait, after which the head is taken at its word.
func (d *step) lagging() bool {
	s := d.s
	if d.head == s.LastLoopSHA || s.PushedAt.IsZero() || d.o.Now.Sub(s.PushedAt) > d.c.PushVisibleWait {
		return false
	}
	if d.head == s.InitialHead {
		return true
	}
	for _, r := range s.Rounds {
		if d.head == r.HeadSHA || d.head == r.CommitSHA {
			return true
		}
	}
	return false
}

func (d *step) runPhases() {
	for range maxTransitions {
		if d.stopWhy != "" && d.s.Phase != PhaseFix && d.s.Phase != PhaseReply {
			d.end(ReasonStoppedByHuman, d.stopWhy, nil)
			return
		}
		var more bool
		d.summaryLost()
		switch d.s.Phase {
		case PhaseStart:
			more = d.start()
		case PhaseRequest:
			more = d.request()
		case PhaseAwaitReview:
			more = d.awaitReview()
		case PhaseFix:
			more = d.fix()
		case PhaseReply:
			more = d.reply()
		case PhaseVerify:
			more = d.verify()
		case PhaseDone:
			d.end(ReasonErrored, "the stored state is done but holds no terminal", nil)
		default:
			d.end(ReasonErrored, fmt.Sprintf("unknown phase %q in the stored state", d.s.Phase), nil)
		}
		if !more || d.term != nil {
			return
		}
	}
	d.again("re-observing")
}

// start is PR-S1's shortcut: a PR already two-stable on its current head
// ends at once without requesting anything.
func (d *step) start() bool {
	v := d.verdict(true)
	if v.ciOK && len(v.awaiting) == 0 && len(v.handOffs) == 0 && len(v.blockers) == 0 {
		if d.unsettledWait(v) || d.unseenWait(v) {
			return false
		}
		if v.reviewOK && len(v.unseen) == 0 {
			if d.mergeUnknown() {
				d.again("merge state UNKNOWN; observing again")
				return false
			}
			if !d.syncDue() {
				d.succeed(v)
				return false
			}
			// BEHIND with sync_base: a round brings it up to date first
			// (PR-S14), and the merged head is reviewed again.
		}
	}
	d.s.Phase = PhaseRequest
	return true
}

// unsettledWait observes again, a bounded number of times, while Copilot's
// latest review of the head is not settled: its comments may not be
// visible yet (PR-O2).
func (d *step) unsettledWait(v verdict) bool {
	if v.signal != review.Unsettled || v.latest == nil {
		return false
	}
	return d.unsettled(v.latest, v.signalWhy)
}

// unseenWait observes again, a bounded number of times, while any review
// counts more comments of its own than the threads show: a thread may not
// be visible yet, and zero open threads would then be a false reading of
// conjunct 3 (PR-O2, PR-T1(3)).
func (d *step) unseenWait(v verdict) bool {
	if len(v.unseen) == 0 {
		return false
	}
	r := v.unseen[0]
	return d.unsettled(&r, fmt.Sprintf("it counts %d comment(s), %d visible in threads", r.CommentCount, reviewComments(r, d.pr)))
}

func (d *step) unsettled(r *forge.Review, why string) bool {
	s := &d.s
	if s.UnsettledReview != r.ID {
		s.UnsettledReview, s.UnsettledCount = r.ID, 0
	}
	if s.UnsettledCount >= d.c.UnsettledReads {
		return false
	}
	s.UnsettledCount++
	d.wait(fmt.Sprintf("review %s by %s is not settled (%s); observing again (%d/%d)", r.ID, r.Author, why, s.UnsettledCount, d.c.UnsettledReads))
	return true
}

// waitForPushedHead asks to observe again while the forge still shows the
// head from before the loop's own push (bounded by PushVisibleWait).
func (d *step) waitForPushedHead() bool {
	if !d.lagging() {
		return false
	}
	d.wait("waiting for the forge to show the pushed head " + text.ShortSHA(d.s.LastLoopSHA))
	return true
}

// request is the top of a round (PR-S1): the round cap and the time guards
// first (PR-G1: the (N+1)th round never starts), then the request.
func (d *step) request() bool {
	s, c := &d.s, d.c
	if d.waitForPushedHead() {
		return false
	}
	if c.MaxIterations > 0 && s.Round >= c.MaxIterations {
		d.end(ReasonCapExhausted, fmt.Sprintf("%d rounds have run (max_iterations %d); round %d never starts", s.Round, c.MaxIterations, s.Round+1), nil)
		return false
	}
	if reason, msg := d.guards(); reason != "" {
		d.end(reason, msg, nil)
		return false
	}
	if !d.recapGate() {
		return false
	}
	if d.roundsStarted > 0 {
		// One round per observation: a round that changed nothing must not
		// spin through the next ones on the same picture of the world.
		d.again("the next round starts on the next observation")
		return false
	}
	d.roundsStarted++
	s.Round++
	s.Request = ReviewRequest{
		At: d.o.Now, ForgeAt: d.forgeNow(), Head: d.head,
		EventMark: d.o.BotStartedMax, EventMarkSet: d.o.EventsRead,
	}
	s.Kept, s.ReplyPasses = nil, 0
	for _, r := range d.pr.Reviews {
		if isBot(r.Author, c) {
			s.Request.SeenReviews = append(s.Request.SeenReviews, r.ID)
		}
	}
	s.Rounds = append(s.Rounds, RoundRecord{N: s.Round, HeadSHA: d.head, StartedAt: d.o.Now})
	d.pendingStatus()
	if c.LocalReview && s.localReview(d.head) == nil {
		// A head already reviewed keeps its review (it is cached per head
		// anyway): the same head is not reviewed twice.
		d.acts = append(d.acts, d.localReviewAction())
	}
	s.Phase = PhaseAwaitReview
	if s.SingleIteration {
		return true
	}
	if r, _, _, _ := d.botArm(); r != nil {
		// PR-V5: the review bot already reviewed this head after its last
		// push; asking again costs a premium request and says nothing new.
		d.accept(r)
		return true
	}
	d.acts = append(d.acts, d.requestAction())
	s.Request.Unconfirmed = true
	return false
}

func (d *step) requestAction() Action {
	return Action{Kind: ActRequestReview, Key: roundKey(d.s.Round, "request-review"), Round: d.s.Round, SHA: d.head}
}

func (d *step) localReviewAction() Action {
	effort := d.s.reviewEffort()
	if effort > 0 {
		if rr, note := d.round(), escalationNote(effort); !slices.Contains(rr.Notes, note) {
			rr.Notes = append(rr.Notes, note)
		}
	}
	return Action{Kind: ActLocalReview, Key: roundKey(d.s.Round, "local-review"), Round: d.s.Round, SHA: d.head, Effort: effort}
}

// forgeNow is the forge's clock when the observation carries it; review
// times are the forge's, so comparing them with the engine's clock would
// let a skew hide a review that landed.
func (d *step) forgeNow() time.Time {
	if !d.pr.ObservedAt.IsZero() {
		return d.pr.ObservedAt
	}
	return d.o.Now
}

// pendingStatus is PR-T10: a head the loop works on shows it.
// With a run id it carries the run's lease (lease.go), written again when
// another run's or a stale one shows.
func (d *step) pendingStatus() {
	if d.head == "" || (convergeStatus(d.pr.Checks) == forge.StatusPending && (d.s.RunID == "" || d.ownLeaseFresh())) {
		return
	}
	key := fmt.Sprintf("status/%s/pending", d.head)
	if d.s.RunID != "" {
		key = fmt.Sprintf("status/%s/pending/lease-%d", d.head, d.forgeNow().Unix())
	}
	d.acts = append(d.acts, Action{
		Kind: ActSetStatus, Key: key, SHA: d.head, State: forge.StatusPending,
		Round: d.s.Round, Reason: d.leaseReason(fmt.Sprintf("converge: round %d running", d.s.Round)),
	})
}

// awaitReview is PR-S1, PR-S2, PR-O2, PR-O3 and PR-O4: a request counts
// only once the forge shows it started, and only a settled, readable
// review of the current head is accepted.
func (d *step) awaitReview() bool {
	s, c := &d.s, d.c
	if s.SingleIteration {
		// No Copilot (PR-M3): the local review carries the round.
		return d.afterReview()
	}
	if r := d.o.Result; r != nil && r.RequestFailed && !d.requestLanded() {
		// A transient fault is never a refusal (PR-M3): ask again, within
		// bounds, after the engine's back-off — unless the forge shows
		// the request landed though its answer was lost (REL-1): asking
		// again would start a second review.
		s.Request.Attempts++
		if s.Request.Attempts < c.RequestRetries {
			d.acts = append(d.acts, d.requestAction())
			d.wait(fmt.Sprintf("the review request failed (attempt %d/%d); retrying", s.Request.Attempts, c.RequestRetries))
			return false
		}
		return d.afterReview()
	}
	if s.Request.Accepted != "" && s.Request.Head == d.head {
		// The round counts a review of this head already (one accepted
		// without a request, PR-V5, or before a wait for the local review).
		return d.afterReview()
	}
	isNew := func(r forge.Review) bool { return isBot(r.Author, c) && !slices.Contains(s.Request.SeenReviews, r.ID) }
	if s.Request.EventMarkSet && d.o.EventsRead && d.o.BotStartedMax > s.Request.EventMark {
		s.Request.Started = true
	}
	for _, r := range d.pr.Reviews {
		if isNew(r) {
			s.Request.Started = true
		}
	}
	if d.requestLost() {
		return false
	}
	landed := bestReview(d.pr.Reviews, d.head, func(r forge.Review) bool {
		return isNew(r) && r.CommitSHA == d.head && !r.SubmittedAt.Before(s.Request.ForgeAt)
	})
	if landed != nil {
		sig, why := readReview(*landed, d.pr, c)
		switch sig {
		case review.Unsettled:
			if d.unsettled(landed, why) {
				return false
			}
		case review.Clean, review.Findings:
			d.accept(landed)
		}
		// No signal (an error, a quota, an unknown wording, or a review
		// that never settled) is never terminal: the round goes on with
		// the local review and the threads as they are (PR-O3).
		return d.afterReview()
	}
	waited := d.o.Now.Sub(s.Request.At)
	if !s.Request.Started && waited >= c.ReviewStartWindow {
		// GitHub may not start a review on an unchanged head: Copilot's
		// latest review, when it is of this head and readable, already
		// says what a new one would (PR-S1).
		v := d.verdict(true)
		if v.review != nil {
			d.accept(v.review)
			return d.afterReview()
		}
		if d.unsettledWait(v) {
			return false
		}
	}
	if waited >= c.ReviewWaitMax {
		return d.afterReview()
	}
	next := s.Request.At.Add(c.ReviewWaitMax)
	if !s.Request.Started {
		next = s.Request.At.Add(c.ReviewStartWindow)
	}
	d.waitUntil("awaiting "+botName(c)+"'s review", next)
	return false
}

// requestLost is REL-2: the round was saved, then converge died before
// its pending status and review request reached the forge. No
// observation reported the request made, and the forge shows no trace of
// it (the bot neither requested, nor started, nor with a new review): it
// is made now, with the status, keyed as the lost ones were, a bounded
// number of times.
func (d *step) requestLost() bool {
	s := &d.s
	if !s.Request.Unconfirmed {
		return false
	}
	if r := d.o.Result; (r != nil && r.Requested) || s.Request.Started || d.requestLanded() {
		s.Request.Unconfirmed = false
		return false
	}
	if s.Request.Attempts >= d.c.RequestRetries {
		return false
	}
	s.Request.Attempts++
	d.pendingStatus()
	d.acts = append(d.acts, d.requestAction())
	d.wait(fmt.Sprintf("the forge shows no review request for round %d (converge stopped before making it); requesting it", s.Round))
	return true
}

// requestLanded reports whether the forge shows the round's review
// request: the bot among the requested reviewers, its start event since
// the request, or a review of its since.
func (d *step) requestLanded() bool {
	s, c := &d.s, d.c
	for _, login := range d.pr.RequestedReviewers {
		if isBot(login, c) {
			return true
		}
	}
	if s.Request.EventMarkSet && d.o.EventsRead && d.o.BotStartedMax > s.Request.EventMark {
		return true
	}
	for _, r := range d.pr.Reviews {
		if isBot(r.Author, c) && !slices.Contains(s.Request.SeenReviews, r.ID) {
			return true
		}
	}
	return false
}

// afterReview goes to triage once the round's local review, when one is
// configured, has reported on the head.
func (d *step) afterReview() bool {
	if d.c.LocalReview && d.s.localReview(d.head) == nil {
		if slices.ContainsFunc(d.acts, func(a Action) bool { return a.Kind == ActLocalReview }) {
			return false
		}
		// Still running beside the forge poll (the engine does not start
		// the same key twice), or its result was lost in a crash: ask for
		// it again, results are cached per head, and wait for it.
		d.acts = append(d.acts, d.localReviewAction())
		d.wait("awaiting the local review of " + text.ShortSHA(d.head))
		return false
	}
	return d.triage()
}

func (d *step) accept(r *forge.Review) {
	d.s.Request.Accepted, d.s.Request.Started = r.ID, true
	d.round().ReviewID = r.ID
}

// triage is PR-S3, PR-S5, PR-T12, PR-T13 and SEC-1: every open, trusted
// thread that is not a hand-off, every trusted top-level comment and
// changes-requested review not yet answered, and the local review's
// findings, are this round's findings; untrusted ones are only listed.
// They are merged into one set (PR-S6), and conflicting (PR-S7) and
// oscillating (PR-S8) ones are handed to a human instead of fixed.
func (d *step) triage() bool {
	s := &d.s
	acted := len(d.acts)
	findings := make([]Finding, 0, len(d.pr.Threads))
	var recorded []ThreadRecord
	inGit := addressedInGit(d.pr)
	for _, t := range d.pr.Threads {
		// classifyThreads one thread at a time: nothing below writes s.
		switch v := classifyThread(t, *s, d.o, d.c); v.Kind {
		case thDropped:
			// PR-T12: "addressed" by a commit no longer on the branch.
			d.acts = append(d.acts, Action{Kind: ActUnresolve, Key: roundKey(s.Round, "unresolve/"+v.T.ID), ThreadID: v.T.ID, Round: s.Round,
				Reason: "the commit that addressed it is no longer in the head's history"})
			findings = append(findings, finding(v, d.o.Classes, d.c))
		case thFinding:
			// A loop commit says it addressed this thread but no reply
			// followed: a crash between push and reply (REL-2). Reply
			// "addressed" citing that commit; never fix it again. A thread
			// converge already answered is not this case (it may have been
			// reopened by a human, PR-S12).
			if sha, ok := inGit[v.T.ID]; ok && !repliedAs(v.T, DispAddressed, d.c) {
				recorded = append(recorded, ThreadRecord{ThreadID: v.T.ID, Round: s.Round, Disposition: DispAddressed, HeadSHA: sha})
				continue
			}
			if v.T.IsResolved {
				// PR-V6: a trusted reviewer answered in a thread converge
				// had resolved; it is open again while converge acts on it.
				d.acts = append(d.acts, Action{Kind: ActUnresolve, Key: roundKey(s.Round, "unresolve/"+v.T.ID), ThreadID: v.T.ID, Round: s.Round,
					Reason: "a trusted reviewer commented after converge's last reply"})
			}
			findings = append(findings, finding(v, d.o.Classes, d.c))
		case thStale:
			disp, reason := disposition(v.T.ID, nil, v.StaleFrom)
			recorded = append(recorded, ThreadRecord{ThreadID: v.T.ID, Round: s.Round, Disposition: disp, HeadSHA: s.LastLoopSHA, Reason: reason})
		case thPendingResolve:
			// Replied before a crash, never resolved: resolve under the
			// reply that is already there (REL-2).
			recorded = append(recorded, ThreadRecord{ThreadID: v.T.ID, Round: s.Round, Disposition: v.Marker.Disposition, HeadSHA: v.Marker.Head})
		}
	}
	if pending := d.judgeBorderline(findings); len(pending) > 0 {
		// The judge decides the borderline comments first (PR-S5); the
		// round triages again with its verdicts, so nothing this triage
		// decided is acted on yet.
		d.acts = append(d.acts[:acted], d.classifyAction(pending))
		d.wait(fmt.Sprintf("awaiting the judge on %d borderline comment(s)", len(pending)))
		return false
	}
	findings = append(findings, commentFindings(d.pr, d.o, d.c)...)
	findings = append(findings, ciFindings(d.pr, d.c)...)
	lr := s.localReview(d.head)
	if lr != nil {
		findings = append(findings, lr.Findings...)
	}
	findings = mergeFindings(findings)
	// Memory (a point settled in an earlier thread is answered from it)
	// and the fix-caused tag, on the merged set.
	findings = d.tagFixCaused(d.settle(findings))
	if lr != nil {
		d.postSummary(*lr, findings)
	}
	allConflicting := d.holdUnsettled(findings)
	if allConflicting {
		// PR-S7: the run ends for a human before any fix (conflicts.go).
		d.allConflictingHold(findings)
	}
	if !d.c.FixMinor {
		// PR-S9: minor points are fixed only if configured; otherwise a
		// human decides, and the thread says so.
		for i := range findings {
			f := &findings[i]
			if f.Verdict == VerdictMinor && f.Held == "" && (f.ThreadID != "" || f.CommentID != "") {
				f.Held, f.HeldReason = DispDeferred, "a minor point (wording, naming, style); this repository has converge fix only structural findings (fix_minor: false)"
			}
		}
	}
	for _, f := range findings {
		if f.Held == "" {
			continue
		}
		disp, reason := disposition(f.ID, nil, 0, Hold{Disposition: f.Held, Reason: f.HeldReason})
		for _, id := range d.targets(f) {
			recorded = append(recorded, ThreadRecord{ThreadID: id, Round: s.Round, Disposition: disp, HeadSHA: d.head, Reason: reason})
		}
	}
	// A round triaged again after a restart records each thread once.
	have := make(map[ThreadRecord]bool, len(s.Threads)+len(recorded))
	for _, r := range s.Threads {
		have[r] = true
	}
	for _, r := range recorded {
		if !have[r] {
			have[r] = true
			s.Threads = append(s.Threads, r)
		}
	}
	rr := d.round()
	// The round's record and the kept findings are one array (triage's
	// own: mergeFindings copied its input), clipped so an append to either
	// copies: nothing writes a finding in place once triaged, and the next
	// Decide clones both (State.clone). A round of 500 threads copies
	// its findings once less.
	rr.Findings = slices.Clip(findings)
	s.Kept = rr.Findings
	// A round with an unclear classification counts as a structural
	// round for PR-T6, whatever becomes of its findings (PR-G4).
	rr.Unclear = slices.ContainsFunc(findings, func(f Finding) bool { return f.Unclear })
	structural := d.roundStructural() || rr.Unclear
	again := rr.Structural // a round triaged again after a restart counts once
	rr.Structural = structural
	s.ReplyPasses = 0
	switch {
	case structural && !again:
		s.ConsecutiveStructural++
	case !structural:
		s.ConsecutiveStructural = 0
	}
	if anyFixable(findings) {
		d.acts = append(d.acts, d.fixAction())
		s.Phase = PhaseFix
		return false
	}
	if allConflicting && !slices.Contains(rr.Notes, NoteAllConflicting) {
		// The deferred threads are replied to first; verify then ends
		// the run (PR-S7).
		rr.Notes = append(rr.Notes, NoteAllConflicting)
	}
	s.Phase = PhaseVerify
	if len(recorded) > 0 {
		s.Phase = PhaseReply
	}
	return true
}

// fixable are the findings a fixer can act on: ones that point somewhere
// or quote something (minor ones only on the forge), and that triage did not hand to a human
// (PR-S7, PR-S8). A local angle that could not be parsed has nothing to
// fix; it only keeps the round structural.
func fixable(fs []Finding) []Finding {
	n := 0
	for i := range fs {
		if isFixable(&fs[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Finding, 0, n)
	for i := range fs {
		if isFixable(&fs[i]) {
			out = append(out, fs[i])
		}
	}
	return out
}

// fixableKept is fixable(kept) for a fix action: the kept findings
// themselves (clipped, so an append copies) when every one is fixable, as
// in most rounds. Nothing writes a finding in place once triaged, and the
// next Decide clones the state (State.clone): a round of 500 threads
// copies its findings once less.
func fixableKept(kept []Finding) []Finding {
	for i := range kept {
		if !isFixable(&kept[i]) {
			return fixable(kept)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return slices.Clip(kept)
}

// anyFixable: fixable(fs) is not empty.
func anyFixable(fs []Finding) bool {
	for i := range fs {
		if isFixable(&fs[i]) {
			return true
		}
	}
	return false
}

func isFixable(f *Finding) bool {
	// A minor forge finding is fixed too (FixMinor; otherwise triage
	// held it), so its thread is addressed like the rest; a minor
	// local finding has no thread and only shows in the summary.
	minorLocal := f.Verdict == VerdictMinor && f.ThreadID == "" && f.CommentID == ""
	return !minorLocal && f.Held == "" && (f.Path != "" || f.ThreadID != "" || f.CommentID != "")
}

// postSummary posts the round's local review summary once per head
// (PR-S4); the forge's own comments say whether it is there. The local
// findings merged into a forge finding (PR-S6) are named there as
// answered in that thread, so the summary does not read as a second,
// unanswered copy of the point.
func (d *step) postSummary(lr LocalReviewRecord, merged []Finding) {
	key := "summary/" + lr.Head
	if lr.Summary == "" || summaryPosted(d.pr, lr.Head, d.c) || slices.ContainsFunc(d.acts, func(a Action) bool { return a.Key == key }) {
		return
	}
	body := summaryWithMerged(lr, merged)
	d.acts = append(d.acts, Action{Kind: ActComment, Key: key, Body: body, SHA: lr.Head, Round: d.s.Round, Reason: summaryReason})
}

// summaryLost is REL-2: triage saved the round, then converge died before
// the round's local review summary reached the forge. In the phases
// after triage it is posted from the stored review, as far as the forge
// does not show it, keyed as the lost one was.
func (d *step) summaryLost() {
	switch d.s.Phase {
	case PhaseFix, PhaseReply, PhaseVerify, PhaseDone:
	default:
		return
	}
	if d.pr == nil {
		return
	}
	for _, lr := range d.s.LocalReviews {
		if lr.Round == d.s.Round {
			d.postSummary(lr, d.s.Kept)
		}
	}
}

// summaryReason marks the summary comment, whose failed post is logged and
// never fatal (PR-S4).
const summaryReason = "local-review-summary"

// ciSummaryReason marks the round's CI summary comment (PR-V5).
const ciSummaryReason = "ci-summary"

func summaryPosted(pr *forge.PullRequest, head string, c Config) bool {
	for _, ic := range pr.IssueComments {
		if selfComment(ic.Author, c) && strings.Contains(ic.Body, "converge:local-review head="+head) {
			return true
		}
	}
	return false
}

func (d *step) fixAction() Action {
	return Action{Kind: ActFix, Key: roundKey(d.s.Round, "fix"), Round: d.s.Round, SHA: d.head, Findings: fixableKept(d.s.Kept), Memory: d.reviewMemory()}
}

// fix takes the fix's outcome: the new loop commit, the diff it cost
// (PR-T6) and each finding's disposition.
func (d *step) fix() bool {
	s := &d.s
	var res *FixResult
	if r := d.o.Result; r != nil && r.Fix != nil && (r.Fix.Round == 0 || r.Fix.Round == s.Round) {
		res = r.Fix
	}
	if res == nil {
		res = d.recoveredFix()
	}
	if res == nil && d.stopWhy != "" {
		// Nothing was pushed: the stop has no replies to wait for.
		d.end(ReasonStoppedByHuman, d.stopWhy, nil)
		return false
	}
	if res == nil {
		// No outcome and no pushed commit: the engine restarted before the
		// fix ran or reported (PR-G3). The round's triage is not trusted
		// after a restart — the head or the open threads may have changed
		// — so the round triages again on this observation and asks for
		// the fix again under the same key.
		return d.triage()
	}
	// What earlier loop commits changed, placed on the head the fix
	// started from (PR-S8).
	earlier := placeHunks(s.Rounds, s.Round)
	if res.CommitSHA != "" {
		s.LastLoopSHA, s.PushedAt, s.PushedForgeAt = res.CommitSHA, d.o.Now, d.forgeNow()
		rr := d.round()
		rr.CommitSHA, rr.Hunks = res.CommitSHA, slices.Clone(res.Hunks)
	}
	s.LoopDiffLines += res.LinesChanged
	d.round().Usage.Add(res.Usage)
	d.round().Censuses = append(d.round().Censuses, res.Censuses...)
	for _, n := range res.Notes {
		if rr := d.round(); !slices.Contains(rr.Notes, n) {
			rr.Notes = append(rr.Notes, n)
		}
	}
	if res.Sync {
		d.baseSynced(res)
	}
	res = d.reversals(res, earlier)
	for _, f := range fixable(s.Kept) {
		disp, reason := disposition(f.ID, res, 0)
		if disp == DispEscalated && s.BaselineRed {
			reason += "; note: the tests were already red on the PR's head before any fix: " + s.BaselineTail
		}
		if disp == "" {
			continue
		}
		for _, id := range d.targets(f) {
			s.Threads = append(s.Threads, ThreadRecord{ThreadID: id, Round: s.Round, Disposition: disp, HeadSHA: s.LastLoopSHA, Reason: reason})
		}
	}
	if !d.roundStructural() && !d.round().Unclear {
		// Everything structural this round went to a human: a round of
		// hand-offs is not a structural round (PR-T6, PR-T11), unless its
		// classification was unclear (PR-G4).
		s.ConsecutiveStructural = 0
		d.round().Structural = false
	}
	s.Phase, s.ReplyPasses = PhaseReply, 0
	return true
}

// recoveredFix sees a push whose report was lost (a crash between pushing
// and recording, REL-2): a commit of this round's trailer on the branch.
// Its Converge-Addressed trailers say which findings it addressed; the
// others get no disposition and the next round takes them up.
func (d *step) recoveredFix() *FixResult {
	for _, c := range d.path {
		if n, ok := roundTrailer(c.Message); ok && n == d.s.Round {
			return &FixResult{Round: d.s.Round, CommitSHA: d.head, Addressed: trailerValues(c.Message, AddressedTrailer)}
		}
	}
	return nil
}

// reply is PR-S12: reply first, then resolve, each once per (thread, head,
// disposition) as the forge's own markers show.
func (d *step) reply() bool {
	s := &d.s
	byID := make(map[string]forge.Thread, len(d.pr.Threads))
	for _, t := range d.pr.Threads {
		byID[t.ID] = t
	}
	var acts []Action
	var ci []ThreadRecord
	for i := range s.Threads {
		rec := &s.Threads[i]
		if rec.Round == s.Round && isCIKey(rec.ThreadID) {
			// PR-V5: failing checks are answered together, in the round's
			// CI summary comment.
			if !commentAnswered(d.pr, rec.ThreadID, rec.HeadSHA, rec.Disposition, d.c) {
				ci = append(ci, *rec)
			}
			continue
		}
		if rec.Round == s.Round && isCommentKey(rec.ThreadID) {
			// PR-T13: a top-level comment or a review body has no thread;
			// it is answered once with a top-level comment quoting it.
			if !commentAnswered(d.pr, rec.ThreadID, rec.HeadSHA, rec.Disposition, d.c) {
				who, body := quotedText(d.pr, rec.ThreadID)
				acts = append(acts, Action{
					Kind: ActComment, Key: fmt.Sprintf("%s/%s", roundKey(s.Round, "answer/"+rec.ThreadID), rec.Disposition),
					ThreadID: rec.ThreadID, Round: s.Round, SHA: rec.HeadSHA, Reason: string(rec.Disposition),
					Body: commentReplyBody(*rec, d.pr, who, body),
				})
			}
			continue
		}
		t, ok := byID[rec.ThreadID]
		if rec.Round != s.Round || !ok {
			continue
		}
		if t.IsResolved {
			if resolves(rec.Disposition) {
				rec.Resolved, rec.ObservedResolved = true, true
			}
			continue
		}
		if !hasMarker(t, rec.HeadSHA, rec.Disposition, d.c) {
			acts = append(acts, Action{
				Kind: ActReply, Key: fmt.Sprintf("%s/%s", roundKey(s.Round, "reply/"+rec.ThreadID), rec.Disposition),
				ThreadID: rec.ThreadID, Round: s.Round, SHA: rec.HeadSHA, Reason: string(rec.Disposition),
				Body: fixCausedWords(s.Kept, rec.ThreadID, d.pr.URL) + replyBody(*rec, d.pr.URL, d.pr.Author),
			})
		}
		if resolves(rec.Disposition) {
			acts = append(acts, Action{Kind: ActResolve, Key: roundKey(s.Round, "resolve/"+rec.ThreadID), ThreadID: rec.ThreadID, Round: s.Round})
			rec.Resolved = true
		}
	}
	if len(ci) > 0 {
		acts = append(acts, Action{Kind: ActComment, Key: roundKey(s.Round, "ci-summary/"+ci[0].HeadSHA), Round: s.Round, SHA: ci[0].HeadSHA,
			Reason: ciSummaryReason, Body: ciAnswer(s.Round, ci, s.Kept, d.pr)})
	}
	if len(acts) == 0 || s.ReplyPasses >= maxReplyPasses {
		s.Phase = PhaseVerify
		return true
	}
	s.ReplyPasses++
	d.acts = append(d.acts, acts...)
	return false
}

// verify is PR-T1, PR-T2, PR-T6 and PR-T11 on a fresh observation, and
// PR-S7's end of a round whose structural findings all conflicted.
func (d *step) verify() bool {
	s, c := &d.s, d.c
	if d.roundNoted(NoteAllConflicting) {
		d.end(ReasonAllConflicting, d.allConflictingMessage(), nil)
		d.term.Note = NoteAllConflicting
		return false
	}
	if d.waitForPushedHead() {
		return false
	}
	v := d.verdict(!d.roundStructural())
	settledOthers := v.minorOnly && len(v.awaiting) == 0
	if settledOthers && !v.ciOK && (v.ci == ciPending || v.ci == ciNone) && d.o.Now.Sub(s.HeadSeenAt) < c.CIWaitMax {
		d.waitUntil("awaiting CI on "+text.ShortSHA(d.head), s.HeadSeenAt.Add(c.CIWaitMax))
		return false
	}
	if settledOthers && v.ciOK {
		if d.mergeUnknown() {
			d.again("merge state UNKNOWN; observing again")
			return false
		}
		if (!v.reviewOK && d.unsettledWait(v)) || d.unseenWait(v) {
			return false
		}
		if len(v.unseen) > 0 {
			// Still not visible after the bounded reads: conjunct 3 cannot
			// be proven on this observation; a new round reads again.
			r := v.unseen[0]
			if d.emptyRound("unseen/"+r.ID, fmt.Sprintf("review %s's comments never became visible (it counts %d comment(s), %d visible in threads)",
				r.ID, r.CommentCount, reviewComments(r, d.pr))) {
				return false
			}
			s.Phase = PhaseRequest
			d.wait(fmt.Sprintf("review %s's comments are still not all visible; not proven, trying another round", v.unseen[0].ID))
			return false
		}
		if v.reviewOK {
			if len(v.handOffs) > 0 || len(v.blockers) > 0 {
				d.end(ReasonHandedOff, handOffMessage(v), nil)
				return false
			}
			if d.syncDue() {
				return d.syncBase()
			}
			d.succeed(v)
			return false
		}
		if s.Request.Head != d.head {
			// The round pushed: a new round can still bring a review of
			// the new head.
			s.Phase = PhaseRequest
			return true
		}
		if c.ExpectsBot && !s.SingleIteration && s.NoSignalTries < c.NoSignalRetries {
			// No signal is never terminal (PR-O3): re-request after the
			// back-off, within the guards.
			s.NoSignalTries++
			s.Phase = PhaseRequest
			d.wait(fmt.Sprintf("no usable review of %s (%s); re-requesting (%d/%d)", text.ShortSHA(d.head), v.reviewWhy, s.NoSignalTries, c.NoSignalRetries))
			return false
		}
		d.end(ReasonNoIndependentReview, fmt.Sprintf("no independent review of the head %s (%s); conjuncts 1-3 of two-stable hold", text.ShortSHA(d.head), v.reviewWhy), nil)
		return false
	}
	if settledOthers && v.ci == ciFailure && d.ciHandedOff() {
		// PR-V5: red CI is what blocks success and converge has already
		// handed each failing check on this head to a human.
		d.end(ReasonHandedOff, ciRed(d.pr, d.c)+"; converge could not fix it on this head and handed it to a human", nil)
		return false
	}
	if msg := d.convergenceFailure(); msg != "" {
		d.end(ReasonConvergenceFailure, msg, nil)
		return false
	}
	if settledOthers && !v.ciOK && (v.ci == ciPending || v.ci == ciNone) {
		// Past the bounded CI wait, CI is all the round waits on.
		key, why := "ci-none/"+d.head, fmt.Sprintf("no CI reported on %s while checks are expected (if the repository has none, set expects_github_checks: false)", text.ShortSHA(d.head))
		if v.ci == ciPending {
			key, why = "ci-pending/"+d.head, fmt.Sprintf("CI on %s never settled: %s still pending", text.ShortSHA(d.head), strings.Join(ciPendingNames(d.pr.Checks), ", "))
		}
		if d.emptyRound(key, why) {
			return false
		}
	}
	s.Phase = PhaseRequest
	return true
}

// emptyRoundsMax is how many rounds in a row may change nothing while
// waiting on the same missing fact before the run ends naming it.
const emptyRoundsMax = 3

// NoteEmptyRounds is the terminal's note when rounds that changed nothing
// ended the run (emptyRound).
const NoteEmptyRounds = "rounds-changed-nothing"

// emptyRound is a round that ends waiting on a missing fact (key; why in
// words) and is about to start another. When it changed nothing (no
// commit, no reply, resolve or answer) and so did the rounds right before
// it while waiting on the same fact, emptyRoundsMax of them end the run
// convergence-failure naming the fact: a loop that makes no progress is
// stalled (LOOP-5, the same exit, IF-1), and running empty rounds to the
// cap would end cap-exhausted naming neither the fact nor its cause.
func (d *step) emptyRound(key, why string) bool {
	s := &d.s
	if d.roundChanged() {
		s.EmptyKey, s.EmptyWhy, s.EmptyRounds, s.EmptyRound = "", "", 0, 0
		return false
	}
	switch {
	case s.EmptyRound == s.Round && s.EmptyKey == key:
		// This round is counted already (verify ran again).
	case s.EmptyRound > 0 && s.EmptyRound == s.Round-1 && s.EmptyKey == key:
		s.EmptyRounds++
	default:
		s.EmptyRounds = 1
	}
	s.EmptyKey, s.EmptyWhy, s.EmptyRound = key, why, s.Round
	if s.EmptyRounds < emptyRoundsMax {
		return false
	}
	d.end(ReasonConvergenceFailure, fmt.Sprintf("%d rounds in a row changed nothing, each waiting on the same missing fact: %s", s.EmptyRounds, why), nil)
	d.term.Note = NoteEmptyRounds
	return true
}

// roundChanged: the round pushed a commit or wrote a reply, a resolve or
// an answer (a thread record of the round).
func (d *step) roundChanged() bool {
	if d.round().CommitSHA != "" {
		return true
	}
	return slices.ContainsFunc(d.s.Threads, func(r ThreadRecord) bool { return r.Round == d.s.Round })
}

// ciPendingNames are the checks on the head still pending, converge's
// own verdict excluded.
func ciPendingNames(ch forge.CheckRollup) []string {
	var out []string
	for _, cx := range ch.Contexts {
		if !strings.EqualFold(cx.Name, StatusContext) && contextState(cx) == ciPending {
			out = append(out, cx.Name)
		}
	}
	return out
}

// roundStructural reports a structural finding of this round that is
// still converge's to act on: one it handed to a human this round
// (escalated or deferred) is a hand-off, not a structural finding, so a
// round that only handed off ends handed-off at once instead of asking
// for another review of an unchanged head (PR-T11).
func (d *step) roundStructural() bool {
	handed := map[string]bool{}
	for _, r := range d.s.Threads {
		if r.Round == d.s.Round && (r.Disposition == DispEscalated || r.Disposition == DispDeferred) {
			handed[r.ThreadID] = true
		}
	}
	for _, f := range d.s.Kept {
		id := f.ThreadID
		if id == "" {
			id = f.ID
		}
		// Only a thread or a comment can be handed off: a human sees it
		// and answers there. A local finding the fixer could not address
		// stays structural.
		handedOff := handed[id] && (f.ThreadID != "" || f.CommentID != "")
		// A point answered from memory is no work of this round.
		if f.Verdict != VerdictMinor && !handedOff && f.Held != DispSettled {
			return true
		}
	}
	return false
}

// mergeUnknown: GitHub computes the merge state lazily after a push, so
// UNKNOWN is transient (PR-T7); it only delays a verdict, and only for as
// long as CI may take on the same head.
func (d *step) mergeUnknown() bool {
	return d.pr.MergeState == forge.MergeUnknown && d.o.Now.Sub(d.s.HeadSeenAt) < d.c.CIWaitMax
}

// convergenceFailure is PR-T6.
func (d *step) convergenceFailure() string {
	s, c := d.s, d.c
	if c.DiffMultiplier > 0 && s.InitialDiffLines > 0 && float64(s.LoopDiffLines) > c.DiffMultiplier*float64(s.InitialDiffLines) {
		return fmt.Sprintf("the loop changed %d lines, more than %g× the PR's %d lines at start", s.LoopDiffLines, c.DiffMultiplier, s.InitialDiffLines)
	}
	if c.MaxStructuralRounds > 0 && s.ConsecutiveStructural >= c.MaxStructuralRounds {
		msg := fmt.Sprintf("%d consecutive rounds had structural findings", s.ConsecutiveStructural)
		if n := d.unclearRounds(s.ConsecutiveStructural); n > 0 {
			msg += fmt.Sprintf(" (%d of them with unclear classification, counted as structural: PR-G4)", n)
		}
		return msg
	}
	return ""
}

// guards are the time guards, last in PR-T7's order: the wall clock
// (PR-T5) and the idle timeout (PR-T3: a yield, only after a round that was
// not structural).
func (d *step) guards() (Reason, string) {
	s, c, now := d.s, d.c, d.o.Now
	if c.MaxWallClock > 0 && now.Sub(s.StartedAt) > c.MaxWallClock {
		return ReasonCapExhausted, fmt.Sprintf("the run passed its wall clock of %s", c.MaxWallClock)
	}
	if msg := d.costBound(); msg != "" {
		return ReasonCapExhausted, msg
	}
	if c.IdleTimeout > 0 && s.ConsecutiveStructural == 0 && now.Sub(s.LastActivityAt) > c.IdleTimeout {
		return ReasonIdleTimeout, fmt.Sprintf("no comment or review for %s; yielding to a human (not a verified success)", c.IdleTimeout)
	}
	return "", ""
}

// waitUntil is a wait that ends no later than deadline, when a window or
// bound Decide knows of runs out.
func (d *step) waitUntil(reason string, deadline time.Time) {
	d.wait(reason)
	if after := deadline.Sub(d.o.Now); after > 0 {
		d.acts[len(d.acts)-1].After = after
	}
}

// again is a wait for nothing but a fresh observation: the world needs no
// event to move on (a round that starts on the next read, GitHub still
// computing the merge state). It is bounded by Reobserve, so a loop whose
// polls are far apart (converge serve, woken by webhooks) does not sit on
// it until the next poll.
func (d *step) again(reason string) {
	d.waitUntil(reason, d.o.Now.Add(d.c.Reobserve))
}

func (d *step) wait(reason string) {
	d.acts = append(d.acts, Action{Kind: ActWait, Key: roundKey(d.s.Round, "wait"), Round: d.s.Round, Reason: reason})
}

// end makes the terminal. Its side effects replace whatever this step had
// decided before: a terminal supersedes the work it interrupts.
func (d *step) end(reason Reason, msg string, proof *Proof) {
	if red := ciRed(d.pr, d.c); red != "" && reason != ReasonTwoStable && !strings.Contains(msg, red) {
		// PR-V5: whatever ended the run, red CI on the head is said.
		msg += "; " + red
	}
	t := &Terminal{Reason: reason, ExitCode: ExitCode(reason), Message: msg, Proof: proof, Usage: UsageOf(d.s)}
	if proof != nil {
		proof.Usage = t.Usage
	}
	var keep []Action
	for _, a := range d.acts {
		// The local review's summary belongs on the PR whatever the
		// verdict (PR-S4), and so does a recap whose verdict ends the run
		// (PR-G2: HAND-OFF escalates with the recap), with its replies on
		// the threads it leaves open.
		if (a.Kind == ActComment && (a.Reason == summaryReason || a.Reason == recapReason)) ||
			(a.Kind == ActReply && a.Reason == recapReason) {
			keep = append(keep, a)
		}
	}
	d.acts = append(keep, terminalActions(t, d.pr, d.c)...)
	if reason == ReasonStoppedByHuman && d.o.StopRequested && d.s.Phase != PhaseDone {
		// A signal or `converge stop`, not the PR's stop label: the same
		// command resumes the run where it stood (Reopens).
		d.s.StoppedPhase = d.s.Phase
	}
	d.s.Phase, d.s.Terminal, d.term = PhaseDone, t, t
}

// round is the record of the current round, created when missing.
func (d *step) round() *RoundRecord {
	s := &d.s
	if n := len(s.Rounds); n == 0 || s.Rounds[n-1].N != s.Round {
		s.Rounds = append(s.Rounds, RoundRecord{N: s.Round, HeadSHA: d.head, StartedAt: d.o.Now})
	}
	return &s.Rounds[len(s.Rounds)-1]
}

func roundKey(round int, what string) string {
	return fmt.Sprintf("round-%d/%s", round, what)
}

// clone copies every slice so Decide never writes into its caller's state.
func (s State) clone() State {
	s.Request.SeenReviews = slices.Clone(s.Request.SeenReviews)
	s.Kept = slices.Clone(s.Kept)
	s.Threads = slices.Clone(s.Threads)
	s.Rounds = slices.Clone(s.Rounds)
	s.LocalReviews = slices.Clone(s.LocalReviews)
	s.PriorResolved = slices.Clone(s.PriorResolved)
	s.Classified = slices.Clone(s.Classified)
	s.Retractions = slices.Clone(s.Retractions)
	for i := range s.Rounds {
		s.Rounds[i].Findings = slices.Clone(s.Rounds[i].Findings)
		s.Rounds[i].Hunks = slices.Clone(s.Rounds[i].Hunks)
		s.Rounds[i].Notes = slices.Clone(s.Rounds[i].Notes)
	}
	return s
}
