package prloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/text"
)

// DefaultFaultBudget is how long a run rides out forge faults.
const DefaultFaultBudget = engine.DefaultFaultBudget

// Recapper is a workspace that can hold PR-G2's recap gate: ask a judge
// for the verdict, and revert the drifted rounds' commits in one commit.
type Recapper interface {
	Recap(ctx context.Context, in recap.Input) (recap.Verdict, error)
	Revert(ctx context.Context, pr *forge.PullRequest, round int, commits []string, rounds []int) (FixResult, error)
}

// Workspace is the local side of the loop: a clone of the PR's repository
// and the fix round (agents, build/test, commit, push).
type Workspace interface {
	// Prepare makes the clone ready and returns base...head added+deleted
	// lines of the PR as it is now.
	Prepare(ctx context.Context, pr *forge.PullRequest) (baseDiffLines int, err error)
	// Fix runs the round's fixers on the PR's head, builds and tests, and
	// commits and pushes at most one commit carrying the round trailer.
	Fix(ctx context.Context, pr *forge.PullRequest, round int, findings []Finding) (FixResult, error)
	// LocalReview runs the multi-angle review of base...head (PR-S4) as
	// separate agent runs, cached per head. An agent that cannot run is a
	// *agent.RunFailure (AG-T4).
	LocalReview(ctx context.Context, pr *forge.PullRequest, round int) (LocalReviewResult, error)
}

// Releaser is a Workspace that can give back its worktree while the loop
// waits (engine.Parker): the next step that needs the files makes it
// again at the PR's head, so an idle loop holds no checkout on disk.
type Releaser interface {
	ReleaseWorktree(ctx context.Context) error
}

// Journal persists the run: the state before every act, and each action
// before it runs, so a crash never repeats one that finished (REL-2).
type Journal interface {
	engine.Journal[State]
	// BeginAction records an action about to run; done is true when an
	// earlier attempt with the same key finished, so it must not repeat.
	BeginAction(ctx context.Context, a engine.ActionRecord) (done bool, err error)
	FinishAction(ctx context.Context, key string, failed bool, result any) error
}

// Deps are what the PR loop's Observe and Act activities work with, kept
// in one struct as Temporal's samples keep an activity's dependencies.
type Deps struct {
	Forge     forge.Forge
	Workspace Workspace
	Journal   Journal
	Reporter  engine.Reporter
	Config    Config
	// DryRun writes nothing (PR-M1): no review request, comment, commit,
	// push, reply, resolve, label or status. Each write is reported as
	// what it would have been, and the run ends at the first step that
	// plans a change (or a terminal).
	DryRun bool
	// DisposeOnly replies to and resolves the open threads once, fixing
	// nothing, and ends (PR-M2).
	DisposeOnly bool
	// ClassifyJudge decides the comments the classifier's heuristic leaves
	// borderline (PR-S5); nil: they are structural.
	ClassifyJudge *classify.Judge
}

// Loop is the PR review loop as the engine runs it: the pure Decide and
// the Observe and Act activities of one pull request.
type Loop struct {
	Deps
	Ref forge.PRRef

	// self is converge's login: Config.Self, else the token's viewer,
	// read once; Observe hands it to Decide in Observation.Self.
	self  string
	perms map[string]forge.Permission // per-run permission cache (SEC-1)
	// behind caches the forge's compare by base..head: the count for two
	// commits never changes, and sync_base asks on every observation.
	behind map[string]int
	// classes is the last observation's Classes: a comment is classified
	// once, when first observed (classes.go).
	classes Classes
	// review is the local review running beside the forge poll (PR-S4);
	// its result joins the next observation.
	review *pendingReview
	wg     sync.WaitGroup
	// plan is the step's actions, batch its batched replies and resolves
	// (batch_io.go).
	plan  []Action
	batch *threadBatch
	// last is the PR the last observation read (LastObserved).
	last *forge.PullRequest
}

var (
	_ engine.Loop[State, Observation, Action, *ActResult] = (*Loop)(nil)
	_ engine.Background                                   = (*Loop)(nil)
	_ engine.Parker                                       = (*Loop)(nil)
	_ engine.Action                                       = Action{}
)

// NewLoop binds the PR loop to one pull request.
func NewLoop(ref forge.PRRef, d Deps) *Loop {
	if d.ClassifyJudge != nil && d.ClassifyJudge.Agent != nil {
		d.Config.ClassifyJudge = true
	}
	return &Loop{Deps: d, Ref: ref, perms: map[string]forge.Permission{}, behind: map[string]int{}}
}

// pendingReview is one local review in flight.
type pendingReview struct {
	a    Action
	done chan struct{}
	res  LocalReviewResult
	err  error
}

// Run drives the PR from st until a terminal on the engine; the returned
// terminal is nil only with an error.
func (l *Loop) Run(ctx context.Context, st State, opt engine.Options) (*Terminal, error) {
	if opt.Transient == nil {
		opt.Transient = Transient
	}
	if opt.Reporter == nil {
		opt.Reporter = l.Reporter
	}
	final, err := engine.Run[State, Observation, Action, *ActResult](ctx, l, l.Journal, st, opt)
	if final.Terminal != nil {
		l.report(engine.Event{Kind: "terminal", Round: final.Round, Message: string(final.Terminal.Reason) + ": " + final.Terminal.Message, Data: final.Terminal})
	}
	if err != nil {
		return nil, err
	}
	return final.Terminal, nil
}

// Transient reports a forge fault worth riding out (REL-1): an outage or
// a rate limit, not a refusal.
func Transient(err error) bool {
	if headMoved(err) {
		return true
	}
	switch forge.KindOf(err) {
	case forge.KindUnreachable, forge.KindRateLimited:
		return true
	}
	return false
}

// Wait is the engine's view of a wait action (engine.Action).
func (a Action) Wait() (time.Duration, bool) { return a.After, a.Kind == ActWait }

// Event is how the engine reports a wait (UX-1).
func (a Action) Event() engine.Event {
	return engine.Event{Kind: "wait", Round: a.Round, Message: a.Reason}
}

// Decide is the pure step (engine.Loop); the step's plan is kept for
// batching its writes (batch_io.go).
func (l *Loop) Decide(st State, obs Observation) (State, []Action, bool) {
	next, actions, done := l.decide(st, obs)
	l.planned(actions)
	return next, actions, done
}

func (l *Loop) decide(st State, obs Observation) (State, []Action, bool) {
	return Step(st, obs, l.Config, Mode{DryRun: l.DryRun, DisposeOnly: l.DisposeOnly}) // step.go
}

// dryRun ends a --dry-run at the first step that plans a change, or at a
// terminal: the actions of that step are reported, not done (PR-M1). The
// steps before only read: observing, the local review, waiting for it.
func dryRun(next State, actions []Action, term *Terminal) (State, []Action, bool) {
	changes := 0
	for _, a := range actions {
		switch a.Kind {
		case ActFix, ActReply, ActResolve, ActUnresolve, ActComment, ActRequestReview, ActRecap, ActRevert, ActCleanup, ActSyncBase:
			changes++
		}
	}
	if term == nil && changes == 0 {
		return next, actions, false
	}
	msg := fmt.Sprintf("dry run: %d change(s) planned, none made", changes)
	if term != nil {
		msg += fmt.Sprintf("; the loop would end %s: %s", term.Reason, term.Message)
	}
	next.Phase = PhaseDone
	next.Terminal = &Terminal{Reason: ReasonDryRun, ExitCode: ExitCode(ReasonDryRun), Message: msg}
	return next, actions, true
}

// dryAct reports what a write would have been (PR-M1).
func (l *Loop) dryAct(round int, a Action) {
	var msg string
	switch a.Kind {
	case ActFix:
		var b strings.Builder
		fmt.Fprintf(&b, "would fix %d finding(s), build, test, commit and push one commit:", len(a.Findings))
		for _, f := range a.Findings {
			fmt.Fprintf(&b, "\n    - [%s] %s:%d %s (%s)", f.Verdict, f.Path, f.EndLine, text.Clip(f.Summary, 100), f.Source)
		}
		msg = b.String()
	case ActReply:
		msg = fmt.Sprintf("would reply to %s: %s", a.ThreadID, text.Clip(a.Body, 200))
	case ActRecap:
		msg = "would ask the recap judge for a verdict (the judge runs; nothing is written)"
	case ActRevert:
		msg = fmt.Sprintf("would revert rounds %v in one commit and push it", a.RevertRounds)
	case ActResolve:
		msg = "would resolve " + a.ThreadID
	case ActCleanup:
		msg = "would reply to and resolve outdated thread " + a.ThreadID + " (cleanup after success)"
	case ActSyncBase:
		msg = "would merge the base into the branch (" + a.Reason + "), run the tests and push the merge commit"
	case ActUnresolve:
		msg = "would reopen " + a.ThreadID + ": " + a.Reason
	case ActComment:
		msg = "would comment on the pull request (" + a.Reason + "):\n" + a.Body
	case ActRequestReview:
		msg = "would request " + botName(l.Config) + "'s review"
	case ActAddLabel:
		msg = "would add label " + a.Label
	case ActRemoveLabel:
		msg = "would remove label " + a.Label
	case ActSetStatus:
		msg = fmt.Sprintf("would set status %s on %s: %s", a.State, text.ShortSHA(a.SHA), a.Reason)
	default:
		msg = "would " + string(a.Kind)
	}
	l.report(engine.Event{Kind: "dry-run", Round: round, Message: msg})
}

// Stepped reports a new round, and restarts the back-off on a new phase.
func (l *Loop) Stepped(prev, next State, obs Observation) bool {
	if next.Round != prev.Round {
		head := ""
		if obs.PR != nil {
			head = obs.PR.HeadSHA
		}
		l.report(engine.Event{Kind: "round", Round: next.Round, Message: fmt.Sprintf("round %d on %s", next.Round, text.ShortSHA(head))})
	}
	return prev.Phase != next.Phase
}

// Fail ends the run errored (PR-T8). While the forge still answers, the
// needs-attention label and a failed verdict are applied best effort.
// An agent that could not run is named, with its CLI's words, in the
// terminal and in a comment beside the label (AG-T4); what the failed
// runs consumed still counts.
func (l *Loop) Fail(st State, obs Observation, cause error) (State, []Action) {
	st = st.clone()
	var spent *spentError
	if errors.As(cause, &spent) {
		st.addUsage(spent.round, spent.usage)
	}
	t := &Terminal{Reason: ReasonErrored, ExitCode: ExitCode(ReasonErrored), Message: redactKeys(cause.Error()), AgentFailure: AgentFailureOf(cause)}
	if agent.KindOf(cause) == agent.FailAuth {
		// An agent's credentials refused: the stored terminal says what
		// the process exits with (IF-1).
		t.ExitCode = exitcode.Auth
	}
	next, actions, _ := failWith(st, obs, t, l.Config)
	switch forge.KindOf(cause) {
	case forge.KindAuth, forge.KindUnreachable, forge.KindRateLimited:
		// The forge cannot take the label now; the state says errored.
		return next, nil
	}
	if obs.PR == nil {
		return next, nil
	}
	return next, actions
}

// Wake is ready when the local review finished (engine.Background).
func (l *Loop) Wake() <-chan struct{} { return l.reviewDone() }

// Drain waits for a local review still running (engine.Background).
func (l *Loop) Drain() {
	l.wg.Wait()
	l.review = nil
}

// Park gives back the workspace's worktree before the engine waits
// (engine.Parker), unless the local review is working in it beside the
// poll: then the loop is not idle.
func (l *Loop) Park(ctx context.Context) {
	r, ok := l.Workspace.(Releaser)
	if !ok || l.review != nil {
		return
	}
	if err := r.ReleaseWorktree(ctx); err != nil {
		l.report(engine.Event{Kind: "note", Message: "could not release the worktree while waiting: " + err.Error()})
	}
}

// startReview starts the local review of a in the background. A review
// of the same key already running is not started twice; one of another
// key is finished first, and its result returned.
func (l *Loop) startReview(ctx context.Context, pr *forge.PullRequest, round int, a Action) (*ActResult, error) {
	var res *ActResult
	if p := l.review; p != nil {
		if p.a.Key == a.Key {
			return nil, nil
		}
		var err error
		if res, err = l.awaitReview(ctx); err != nil {
			return nil, err
		}
	}
	p := &pendingReview{a: a, done: make(chan struct{})}
	l.review = p
	l.report(engine.Event{Kind: "review", Round: round, Message: "local multi-angle review of " + text.ShortSHA(a.SHA) + " started"})
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(p.done)
		p.res, p.err = l.localReview(ctx, pr, round, a)
	}()
	return res, nil
}

// collectReview returns the local review's result once it finished, and
// journals it; an agent that could not run ends the run (AG-T4).
func (l *Loop) collectReview(ctx context.Context) (*ActResult, error) {
	p := l.review
	if p == nil {
		return nil, nil
	}
	select {
	case <-p.done:
	default:
		return nil, nil
	}
	l.review = nil
	if p.err != nil {
		_ = l.Journal.FinishAction(ctx, p.a.Key, true, p.err.Error())
		return nil, fmt.Errorf("%s: %w", p.a.Kind, p.err)
	}
	if err := l.Journal.FinishAction(ctx, p.a.Key, false, p.res.Angles); err != nil {
		return nil, fmt.Errorf("journal %s: %w", p.a.Key, err)
	}
	l.report(engine.Event{Kind: "review", Round: p.a.Round, Message: localReviewLine(p.res), Data: p.res.Angles})
	return &ActResult{LocalReview: &p.res}, nil
}

// awaitReview waits for a running local review to finish and collects it.
func (l *Loop) awaitReview(ctx context.Context) (*ActResult, error) {
	if l.review == nil {
		return nil, nil
	}
	select {
	case <-l.review.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.collectReview(ctx)
}

// reviewDone is the running review's done channel; nil (never ready)
// when none runs.
func (l *Loop) reviewDone() <-chan struct{} {
	if l.review == nil {
		return nil
	}
	return l.review.done
}

func mergeResult(into, r *ActResult) *ActResult {
	if into == nil {
		return r
	}
	if r.RequestRefused {
		into.RequestRefused, into.RefusedReason = true, r.RefusedReason
	}
	if r.Fix != nil {
		into.Fix = r.Fix
	}
	if r.RequestFailed {
		into.RequestFailed = true
	}
	into.Requested = into.Requested || r.Requested
	if r.LocalReview != nil {
		into.LocalReview = r.LocalReview
	}
	if r.Recap != nil {
		into.Recap = r.Recap
	}
	if r.Revert != nil {
		into.Revert = r.Revert
	}
	if r.Classify != nil {
		into.Classify = r.Classify
	}
	return into
}

// Observe reads the world whole (engine.Loop): the PR, and only while a requested bot
// review has not started, its issue events (PR-O1). A forge that lists no
// issue events (no forge.IssueEventer) leaves EventsRead false: Decide
// then waits for the review itself.
func (l *Loop) Observe(ctx context.Context, st State, in engine.Input[*ActResult]) (Observation, error) {
	if l.self == "" {
		// Markers are believed only from converge's own identity; the
		// observation carries it to Decide (Observation.Self).
		l.self = l.Config.Self
	}
	if l.self == "" {
		self, err := l.Forge.Viewer(ctx)
		if err != nil {
			return Observation{}, fmt.Errorf("identify token: %w", err)
		}
		l.self = self
	}
	var result *ActResult
	for _, r := range in.Results {
		if r != nil {
			result = mergeResult(result, r)
		}
	}
	// A local review that finished beside the poll joins this
	// observation; an agent that could not run ends the run (AG-T4).
	res, err := l.collectReview(ctx)
	if err != nil {
		return Observation{}, err
	}
	if res != nil {
		result = mergeResult(result, res)
	}
	obs, err := l.observeWhole(ctx, st, in, result) // probe_io.go
	if err == nil && obs.PR != nil {
		l.last = obs.PR
	}
	return obs, err
}

// LastObserved is the pull request as the run's last observation read it
// (nil before the first): the facts the run's verdict was decided on. A
// watch after the run compares the PR with these, not with a later read
// that may already hold news the verdict never saw (PR-T14).
func (l *Loop) LastObserved() *forge.PullRequest { return l.last }

// observeWorld reads the forge for one observation.
func (l *Loop) observeWorld(ctx context.Context, st State, in engine.Input[*ActResult], result *ActResult) (Observation, error) {
	ref := l.Ref
	pr, err := l.Forge.Observe(ctx, ref)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{Now: in.Now, PR: pr, Result: result, StopRequested: in.StopRequested, Self: l.self}
	// Issue events are read only while a requested bot review has not
	// started (PR-O1), and while the stop label is on: who put it there
	// decides whether it counts (PR-G5).
	wantStart := st.WantsEvents() && l.Config.Bot != nil
	if ev, ok := l.Forge.(forge.IssueEventer); ok && (wantStart || hasLabel(pr, LabelStop)) {
		evs, err := ev.IssueEvents(ctx, ref)
		if err != nil {
			return Observation{}, fmt.Errorf("issue events: %w", err)
		}
		obs.StopLabelBy = stopLabelBy(evs)
		if wantStart {
			obs.EventsRead = true
			for _, e := range evs {
				if e.Event == l.Config.Bot.StartedEvent() && e.ID > obs.BotStartedMax {
					obs.BotStartedMax = e.ID
				}
			}
		}
	}
	if obs.BaseBehind, err = l.baseBehind(ctx, pr); err != nil {
		return Observation{}, err
	}
	if st.StartedAt.IsZero() && pr.State == forge.StateOpen && !l.DisposeOnly {
		lines, err := l.Workspace.Prepare(ctx, pr)
		if err != nil {
			return Observation{}, fmt.Errorf("prepare workspace: %w", err)
		}
		obs.BaseDiffLines = lines
	}
	obs.Permissions, err = l.permissions(ctx, ref, pr, obs.StopLabelBy)
	if err != nil {
		return Observation{}, err
	}
	obs.Classes = ClassifyObserved(st, obs, l.Config, l.classes)
	l.classes = obs.Classes
	return obs, nil
}

// baseBehind counts, with sync_base on, the base commits an open PR's
// head lacks when the merge state does not already tell: GitHub says
// BEHIND only under a protection rule requiring branches to be up to date
// (PR-S14). A forge that cannot compare proves nothing: 0.
func (l *Loop) baseBehind(ctx context.Context, pr *forge.PullRequest) (int, error) {
	cmp, ok := l.Forge.(forge.BaseComparer)
	if !ok || !l.Config.SyncBase || pr.State != forge.StateOpen || pr.BaseSHA == "" || pr.HeadSHA == "" {
		return 0, nil
	}
	switch pr.MergeState {
	case forge.MergeDirty, forge.MergeBehind, forge.MergeUnknown:
		return 0, nil
	}
	key := syncKey(pr.HeadSHA, pr.BaseSHA)
	if n, ok := l.behind[key]; ok {
		return n, nil
	}
	n, err := cmp.CommitsBehind(ctx, l.Ref, pr.BaseSHA, pr.HeadSHA)
	if err != nil {
		return 0, fmt.Errorf("compare the head with the base: %w", err)
	}
	l.behind[key] = n
	return n, nil
}

// permissions looks up, once per run, the permission of every author of an
// unresolved thread (SEC-1). Bots on the allowlist need no lookup.
func (l *Loop) permissions(ctx context.Context, ref forge.PRRef, pr *forge.PullRequest, also ...string) (map[string]forge.Permission, error) {
	bots := map[string]bool{}
	for _, b := range l.Config.TrustedBots {
		bots[strings.ToLower(b)] = true
	}
	var logins []string
	want := func(login string) {
		lo := strings.ToLower(login)
		if lo == "" || bots[lo] || strings.EqualFold(lo, l.self) {
			return
		}
		if _, ok := l.perms[lo]; !ok && !slices.Contains(logins, lo) {
			logins = append(logins, lo)
		}
	}
	for _, t := range pr.Threads {
		if len(t.Comments) == 0 {
			continue
		}
		// Resolved threads too: PR-T12 reopens a trusted one whose
		// addressing commit was dropped.
		want(t.Comments[0].Author)
		// PR-V6: whoever spoke after the first comment may reopen the
		// work on the thread, if trusted.
		for _, cm := range t.Comments[1:] {
			want(cm.Author)
		}
	}
	// PR-T13: top-level comments and reviews of humans.
	for _, ic := range pr.IssueComments {
		want(ic.Author)
	}
	for _, a := range also {
		want(a)
	}
	for _, rv := range pr.Reviews {
		switch rv.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			want(rv.Author)
		}
	}
	sort.Strings(logins)
	for _, lo := range logins {
		if _, ok := l.perms[lo]; ok {
			continue
		}
		p, err := l.Forge.Permission(ctx, ref, lo)
		if err != nil {
			if forge.KindOf(err) == forge.KindNotFound {
				p = forge.PermNone
			} else {
				return nil, fmt.Errorf("permission of %s: %w", lo, err)
			}
		}
		l.perms[lo] = p
	}
	out := make(map[string]forge.Permission, len(l.perms))
	for k, v := range l.perms {
		out[k] = v
	}
	return out, nil
}

// Act runs one action once (engine.Loop): the journal refuses a key that already finished,
// and the forge's own state (markers, labels, resolved flags) is what Decide
// checked before asking.
func (l *Loop) Act(ctx context.Context, st State, obs Observation, a Action) (*ActResult, error) {
	pr, round := obs.PR, st.Round
	if pr == nil {
		return nil, fmt.Errorf("%s: no pull request observed", a.Kind)
	}
	if l.DryRun && a.Kind != ActLocalReview && a.Kind != ActClassify {
		// Nothing is written, nor journalled as done.
		l.dryAct(round, a)
		return nil, nil
	}
	if ok, err := l.batched(ctx, round, pr, a); ok {
		return nil, err // done with the step's other replies and resolves (batch_io.go)
	}
	done, err := l.Journal.BeginAction(ctx, record(round, a))
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", a.Key, err)
	}
	// A fix is asked for again only when Decide saw neither its result
	// nor its pushed commit, so it did not land: run it. Every other
	// finished action is not repeated.
	if done && a.Kind != ActFix && a.Kind != ActLocalReview && a.Kind != ActClassify {
		return nil, nil
	}
	var (
		res     *ActResult
		outcome = "ok"
		detail  any
	)
	switch a.Kind {
	case ActRequestReview:
		err = l.Forge.RequestReviews(ctx, pr, nil, []string{l.Config.Bot.RequestLogin()})
		switch {
		case err == nil:
			res = &ActResult{Requested: true}
			l.report(engine.Event{Kind: "review", Round: round, Message: "requested " + botName(l.Config) + " review"})
		case refusal(err):
			// The bot is not available here (Copilot not enabled on
			// GitHub): single-iteration mode (PR-M3).
			res = &ActResult{RequestRefused: true, RefusedReason: err.Error()}
			outcome, err = "refused", nil
			l.report(engine.Event{Kind: "review", Round: round, Message: botName(l.Config) + " review refused; single-iteration mode"})
		case transient(err):
			// Never a refusal: Decide asks again after the back-off.
			l.report(engine.Event{Kind: "review", Round: round, Message: "review request failed, will retry: " + err.Error()})
			res = &ActResult{RequestFailed: true}
			outcome, detail, err = "failed", err.Error(), nil
		}
	case ActLocalReview:
		// It runs beside the forge poll (PR-S4); its result and its
		// journal entry come with a later observation (collectReview).
		return l.startReview(ctx, pr, round, a)
	case ActComment:
		_, err = l.Forge.CreateIssueComment(ctx, pr.Ref, fitBody(a.Body, MaxBodyChars))
		if err != nil && a.Reason == summaryReason {
			// A failed summary post is logged, never fatal (PR-S4).
			l.report(engine.Event{Kind: "note", Round: round, Message: "could not post the local review summary: " + err.Error()})
			outcome, detail, err = "failed", err.Error(), nil
		} else if err == nil {
			l.report(engine.Event{Kind: "comment", Round: round, Message: "commented on the pull request (" + a.Reason + ")"})
		}
	case ActUnresolve:
		err = l.Forge.UnresolveThread(ctx, pr.Ref, a.ThreadID)
		if err == nil {
			l.report(engine.Event{Kind: "resolve", Round: round, Message: "reopened " + a.ThreadID + ": " + a.Reason})
		}
	case ActFix:
		guardPush(l, st)
		// The fix and the local review share the worktree: a review still
		// running finishes first, and its result is kept.
		if res, err = l.awaitReview(ctx); err != nil {
			return nil, err
		}
		l.report(engine.Event{Kind: "fix", Round: round, Message: fmt.Sprintf("fixing %d finding(s)", len(a.Findings))})
		var fr FixResult
		if mw, ok := l.Workspace.(MemoryWorkspace); ok {
			mw.SetReviewMemory(a.Memory) // review_memory: rides on this fix's commit only
		}
		if pc, ok := l.Workspace.(PushChecker); ok {
			// PR-S8 before the push (pushcheck.go).
			fr, err = pc.FixChecked(ctx, pr, round, a.Findings, NewPushCheck(st))
		} else {
			fr, err = l.Workspace.Fix(ctx, pr, round, a.Findings)
		}
		if err != nil && fr.Usage.Reported() {
			// A fix that failed was paid for: its usage goes with the
			// error to the errored terminal.
			err = &spentError{err: err, round: round, usage: fr.Usage}
		}
		if err == nil {
			res = mergeResult(res, &ActResult{Fix: &fr})
			detail = fr
			msg := fmt.Sprintf("%d addressed, %d blocked", len(fr.Addressed), len(fr.Blocked))
			if fr.CommitSHA != "" {
				msg += ", pushed " + text.ShortSHA(fr.CommitSHA)
			}
			l.report(engine.Event{Kind: "fix", Round: round, Message: msg, Data: fr})
		}
	case ActRecap:
		// PR-G2: the judge is an agent; a workspace without one (or a
		// judge that cannot answer) is a HAND-OFF, fail-closed.
		v := recap.Verdict{Decision: recap.HandOff, Reason: "no usable recap verdict: no recap judge is configured (--judge-agent)", Why: "no recap judge"}
		in := recap.Input{}
		if a.Recap != nil {
			in = *a.Recap
			l.recapScope(ctx, pr, &in) // the base diff and the PR's files (recapgate.go)
		}
		if rc, ok := l.Workspace.(Recapper); ok && a.Recap != nil {
			if v, err = rc.Recap(ctx, in); err != nil {
				break
			}
		}
		res = &ActResult{Recap: &RecapResult{Count: in.RoundCount, Input: in, Verdict: v}}
		detail = v
		l.report(engine.Event{Kind: "recap", Round: round, Message: fmt.Sprintf("recap after %d rounds: %s: %s", in.RoundCount, v.Decision, text.OneLine(v.Reason)), Data: v})
	case ActRevert:
		rc, ok := l.Workspace.(Recapper)
		if !ok {
			err = fmt.Errorf("revert: the workspace cannot revert commits")
			break
		}
		guardPush(l, st)
		var fr FixResult
		if fr, err = rc.Revert(ctx, pr, round, a.Reverts, a.RevertRounds); err == nil {
			res, detail = &ActResult{Revert: &fr}, fr
			l.report(engine.Event{Kind: "fix", Round: round, Message: fmt.Sprintf("reverted rounds %v in %s (tests passed: %v)", a.RevertRounds, text.ShortSHA(fr.CommitSHA), fr.TestsPassed)})
		}
	case ActReply:
		_, err = l.Forge.ReplyToThread(ctx, pr.Ref, a.ThreadID, fitBody(a.Body, MaxBodyChars))
		if err == nil {
			l.report(engine.Event{Kind: "reply", Round: round, Message: "replied to " + a.ThreadID})
		}
	case ActResolve:
		err = l.Forge.ResolveThread(ctx, pr.Ref, a.ThreadID)
		if err == nil {
			l.report(engine.Event{Kind: "resolve", Round: round, Message: "resolved " + a.ThreadID})
		}
	case ActCleanup:
		outcome, detail = l.cleanup(ctx, pr, round, a)
	case ActClassify:
		if res, err = l.classify(ctx, pr, round, a); err == nil {
			detail = res.Classify.Answer
		}
	case ActSyncBase:
		guardPush(l, st)
		var fr FixResult
		if fr, err = l.syncBase(ctx, pr, round, a.Reason); err == nil {
			res, detail = &ActResult{Fix: &fr}, fr
		}
	case ActAddLabel:
		if err = l.headStill(ctx, pr, a); err == nil {
			err = l.Forge.AddLabels(ctx, pr.Ref, a.Label)
		}
	case ActRemoveLabel:
		err = l.Forge.RemoveLabel(ctx, pr.Ref, a.Label)
		if forge.KindOf(err) == forge.KindNotFound {
			err = nil
		}
	case ActSetStatus:
		err = l.publishVerdict(ctx, st, pr, a) // PR-T10: a check run where the forge can
		if err != nil && a.State == forge.StatusPending && Transient(err) {
			// Only a sign the head is being worked on: a forge fault on it
			// must not hold back the round's review request after it,
			// which the state already counts as asked (REL-1).
			l.report(engine.Event{Kind: "note", Round: round, Message: "pending status not set: " + err.Error()})
			outcome, detail, err = "failed", err.Error(), nil
		}
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if err != nil {
		_ = l.Journal.FinishAction(ctx, a.Key, true, err.Error())
		return nil, fmt.Errorf("%s: %w", a.Kind, err)
	}
	if outcome == "failed" {
		// Recorded as failed so the same key may run again.
		_ = l.Journal.FinishAction(ctx, a.Key, true, detail)
		return res, nil
	}
	if err := l.Journal.FinishAction(ctx, a.Key, false, detail); err != nil {
		return nil, fmt.Errorf("journal %s: %w", a.Key, err)
	}
	return res, nil
}

// refusal is a definite "the review bot cannot review here" (PR-M3): the
// forge refused the request as invalid (the bot unknown, or not enabled:
// Copilot on GitHub).
// Nothing else is: a missing PR is an error, a fault is transient.
func refusal(err error) bool {
	return forge.KindOf(err) == forge.KindInvalid
}

// transient faults on the review request are retried by Decide; auth
// failures and the like end the run.
func transient(err error) bool {
	switch forge.KindOf(err) {
	case forge.KindUnreachable, forge.KindRateLimited, forge.KindOther:
		return !errors.Is(err, context.Canceled)
	}
	return false
}

func localReviewLine(lr LocalReviewResult) string {
	structural, minor := 0, 0
	for _, f := range lr.Findings {
		if f.Verdict == VerdictMinor {
			minor++
		} else {
			structural++
		}
	}
	msg := fmt.Sprintf("local review of %s: %d angle(s), %d structural, %d minor", text.ShortSHA(lr.Head), len(lr.Angles), structural, minor)
	if lr.Degraded {
		msg += ", degraded (an angle could not be parsed)"
	}
	if lr.Cached {
		msg += " (cached)"
	}
	return msg
}

// record is an action's entry in the run's action journal.
func record(round int, a Action) engine.ActionRecord {
	return engine.ActionRecord{Key: a.Key, Round: round, Kind: string(a.Kind), Target: a.ThreadID + a.Label + a.SHA}
}

func (l *Loop) report(e engine.Event) {
	if l.Reporter != nil {
		l.Reporter.Report(e)
	}
}

// spentError is an act's error with what its agents consumed before it.
type spentError struct {
	err   error
	round int
	usage agent.Usage
}

func (e *spentError) Error() string { return e.err.Error() }
func (e *spentError) Unwrap() error { return e.err }

// addUsage adds u to round n's record, when the state has one.
func (s *State) addUsage(n int, u agent.Usage) {
	for i := range s.Rounds {
		if s.Rounds[i].N == n {
			s.Rounds[i].Usage.Add(u)
			return
		}
	}
}

// AwaitBackground waits for a local review still running and hands back
// its result, nil when none runs: the Temporal engine's act activity
// holds the review, since the next observation may run on another worker.
func (l *Loop) AwaitBackground(ctx context.Context) (*ActResult, error) {
	return l.awaitReview(ctx)
}
