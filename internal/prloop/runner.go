package prloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// DefaultFaultBudget is how long a run rides out forge faults.
const DefaultFaultBudget = 10 * time.Minute

// Clock is the engine's time source; tests inject a fake one.
type Clock interface {
	Now() time.Time
	// After waits d; it is the only way the engine waits.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time                         { return time.Now() }
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

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

// Journal persists the run; every method is called before the risky step
// it guards (state before acting, the action before it runs).
type Journal interface {
	SaveState(ctx context.Context, s State) error
	// BeginAction records an action about to run; done is true when an
	// earlier attempt with the same key finished, so it must not repeat.
	BeginAction(ctx context.Context, round int, a Action) (done bool, err error)
	FinishAction(ctx context.Context, a Action, outcome string, result any) error
}

// Event is one progress report (UX-1): printed as a line or NDJSON.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // observe, round, review, fix, reply, resolve, label, status, wait, terminal, note
	Round   int       `json:"round,omitempty"`
	Message string    `json:"message"`
	Data    any       `json:"data,omitempty"`
}

// Reporter receives progress events.
type Reporter interface{ Report(Event) }

// ReporterFunc adapts a function.
type ReporterFunc func(Event)

func (f ReporterFunc) Report(e Event) { f(e) }

// Runner is the local engine: observe → Decide → persist → act, owning
// waiting and back-off; step code never sleeps.
type Runner struct {
	Forge     forge.Forge
	Workspace Workspace
	Journal   Journal
	Reporter  Reporter
	Clock     Clock
	Config    Config

	PollMin time.Duration // first wait between polls (PR-S2: 60 s)
	PollMax time.Duration // back-off cap (600 s)
	// Wake, when set, ends a wait early (webhooks in server mode, the
	// in-process emulator in the demo). The engine re-reads the world on
	// wake; it never trusts what the event carried.
	Wake <-chan struct{}
	// Stop, when closed or signalled, ends the run cleanly at the next step.
	Stop <-chan struct{}
	// StopRequested, when set, is asked every step whether a stop was
	// requested from outside the process (`converge stop RUN`).
	StopRequested func(ctx context.Context) bool

	// FaultBudget is how long transient forge faults may persist before
	// the run ends errored (REL-1); zero means DefaultFaultBudget.
	FaultBudget time.Duration

	perms map[string]forge.Permission // per-run permission cache (SEC-1)
	// review is the local review running beside the forge poll (PR-S4);
	// its result joins the next observation.
	review *pendingReview
	wg     sync.WaitGroup
}

// pendingReview is one local review in flight.
type pendingReview struct {
	a    Action
	done chan struct{}
	res  LocalReviewResult
	err  error
}

// Run drives one PR until a terminal. It returns the terminal; an error is
// returned only for faults that end the run (the state is persisted first).
func (r *Runner) Run(ctx context.Context, ref forge.PRRef, st State) (*Terminal, error) {
	if r.Clock == nil {
		r.Clock = SystemClock{}
	}
	if r.PollMin <= 0 {
		r.PollMin = 60 * time.Second
	}
	if r.PollMax < r.PollMin {
		r.PollMax = 10 * r.PollMin
	}
	r.perms = map[string]forge.Permission{}
	// A local review still running when the run ends is stopped, and
	// waited for, before the caller may remove its worktree.
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		r.wg.Wait()
		r.review = nil
	}()
	if r.Config.Self == "" {
		// Markers are believed only from converge's own identity.
		self, err := r.Forge.Viewer(ctx)
		if err != nil {
			return nil, fmt.Errorf("identify token: %w", err)
		}
		r.Config.Self = self
	}
	wait := r.PollMin
	var (
		result  *ActResult
		lastObs Observation
		// faultSince is when the current streak of transient forge faults
		// began; zero when the last step reached the forge (REL-1).
		faultSince time.Time
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if res, err := r.collectReview(ctx); err != nil {
			return nil, r.fail(ctx, st, lastObs, err)
		} else if res != nil {
			result = mergeResult(result, res)
		}
		obs, err := r.observe(ctx, ref, st, result)
		if err != nil {
			// The previous act's result is kept for the next observation.
			if r.rideOut(ctx, err, &faultSince, &wait) {
				continue
			}
			return nil, r.fail(ctx, st, lastObs, fmt.Errorf("observe: %w", err))
		}
		lastObs = obs
		prevPhase := st.Phase
		next, actions, term := Decide(st, obs, r.Config)
		if err := r.Journal.SaveState(ctx, next); err != nil {
			return nil, fmt.Errorf("persist state: %w", err)
		}
		if next.Round != st.Round {
			r.report(Event{Kind: "round", Round: next.Round, Message: fmt.Sprintf("round %d on %s", next.Round, text.ShortSHA(obs.PR.HeadSHA))})
		}
		st = next
		result = nil
		waited, faulted := false, false
		for _, a := range actions {
			if a.Kind == ActWait {
				if term != nil {
					continue
				}
				if prevPhase != st.Phase {
					wait = r.PollMin
				}
				r.report(Event{Kind: "wait", Round: st.Round, Message: a.Reason})
				d := wait
				if a.After > 0 && a.After < d {
					// Decide knows a deadline before the back-off ends.
					d = a.After
				}
				if err := r.sleep(ctx, d); err != nil {
					return nil, err
				}
				wait = min(wait*2, r.PollMax)
				waited = true
				continue
			}
			res, err := r.act(ctx, obs.PR, st.Round, a)
			if res != nil {
				result = mergeResult(result, res)
			}
			if err != nil {
				// A write the forge failed transiently: re-observe and let
				// Decide ask again for what the forge does not show; every
				// write is keyed by what the forge shows (REL-1, REL-2).
				if r.rideOut(ctx, err, &faultSince, &wait) {
					faulted = true
					break
				}
				return nil, r.fail(ctx, st, obs, err)
			}
		}
		if faulted {
			continue
		}
		faultSince = time.Time{}
		if !waited {
			wait = r.PollMin
		}
		if term != nil {
			r.report(Event{Kind: "terminal", Round: st.Round, Message: string(term.Reason) + ": " + term.Message, Data: term})
			return term, nil
		}
	}
}

// rideOut waits out a transient forge fault (an outage, a rate limit)
// with the engine's back-off, for as long as the run's fault budget
// allows; it reports false for any other error, or once the streak has
// lasted longer than the budget: then the fault persisted (REL-1).
func (r *Runner) rideOut(ctx context.Context, err error, since *time.Time, wait *time.Duration) bool {
	switch forge.KindOf(err) {
	case forge.KindUnreachable, forge.KindRateLimited:
	default:
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	budget := r.FaultBudget
	if budget <= 0 {
		budget = DefaultFaultBudget
	}
	now := r.Clock.Now()
	if since.IsZero() {
		*since = now
	}
	if now.Sub(*since) > budget {
		return false
	}
	r.report(Event{Kind: "note", Message: fmt.Sprintf("forge fault (%v); observing again in %s (fault budget %s, %s spent)", err, *wait, budget, now.Sub(*since).Round(time.Second))})
	if r.sleep(ctx, *wait) != nil {
		return false
	}
	*wait = min(*wait*2, r.PollMax)
	return true
}

// fail ends the run errored (PR-T8): the terminal state is persisted, and
// while the forge still answers, the needs-attention label and a failed
// verdict are applied best effort. The original error is returned so the
// caller's exit code says what went wrong (auth, unreachable, ...).
func (r *Runner) fail(ctx context.Context, st State, obs Observation, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	next, actions, term := Fail(st, obs, ReasonErrored, cause.Error())
	if err := r.Journal.SaveState(ctx, next); err != nil {
		return errors.Join(cause, fmt.Errorf("persist errored state: %w", err))
	}
	switch forge.KindOf(cause) {
	case forge.KindAuth, forge.KindUnreachable, forge.KindRateLimited:
		// The forge cannot take the label now; the state says errored.
	default:
		if obs.PR != nil {
			for _, a := range actions {
				if _, err := r.act(ctx, obs.PR, next.Round, a); err != nil {
					break
				}
			}
		}
	}
	r.report(Event{Kind: "terminal", Round: next.Round, Message: string(term.Reason) + ": " + term.Message, Data: term})
	return cause
}

// startReview starts the local review of a in the background. A review
// of the same key already running is not started twice; one of another
// key is finished first, and its result returned.
func (r *Runner) startReview(ctx context.Context, pr *forge.PullRequest, round int, a Action) (*ActResult, error) {
	var res *ActResult
	if p := r.review; p != nil {
		if p.a.Key == a.Key {
			return nil, nil
		}
		var err error
		if res, err = r.awaitReview(ctx); err != nil {
			return nil, err
		}
	}
	p := &pendingReview{a: a, done: make(chan struct{})}
	r.review = p
	r.report(Event{Kind: "review", Round: round, Message: "local multi-angle review of " + text.ShortSHA(a.SHA) + " started"})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(p.done)
		p.res, p.err = r.Workspace.LocalReview(ctx, pr, round)
	}()
	return res, nil
}

// collectReview returns the local review's result once it finished, and
// journals it; an agent that could not run ends the run (AG-T4).
func (r *Runner) collectReview(ctx context.Context) (*ActResult, error) {
	p := r.review
	if p == nil {
		return nil, nil
	}
	select {
	case <-p.done:
	default:
		return nil, nil
	}
	r.review = nil
	if p.err != nil {
		_ = r.Journal.FinishAction(ctx, p.a, "failed", p.err.Error())
		return nil, fmt.Errorf("%s: %w", p.a.Kind, p.err)
	}
	if err := r.Journal.FinishAction(ctx, p.a, "ok", p.res.Angles); err != nil {
		return nil, fmt.Errorf("journal %s: %w", p.a.Key, err)
	}
	r.report(Event{Kind: "review", Round: p.a.Round, Message: localReviewLine(p.res), Data: p.res.Angles})
	return &ActResult{LocalReview: &p.res}, nil
}

// awaitReview waits for a running local review to finish and collects it.
func (r *Runner) awaitReview(ctx context.Context) (*ActResult, error) {
	if r.review == nil {
		return nil, nil
	}
	select {
	case <-r.review.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.collectReview(ctx)
}

// reviewDone is the running review's done channel; nil (never ready)
// when none runs.
func (r *Runner) reviewDone() <-chan struct{} {
	if r.review == nil {
		return nil
	}
	return r.review.done
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
	if r.LocalReview != nil {
		into.LocalReview = r.LocalReview
	}
	return into
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.Clock.After(d):
	case <-r.Wake:
	case <-r.Stop:
	case <-r.reviewDone():
	}
	return nil
}

func (r *Runner) stopRequested(ctx context.Context) bool {
	if r.StopRequested != nil && r.StopRequested(ctx) {
		return true
	}
	if r.Stop == nil {
		return false
	}
	select {
	case <-r.Stop:
		return true
	default:
		return false
	}
}

// observe reads the world whole: the PR, and only while a requested bot
// review has not started, its issue events (PR-O1). A forge that lists no
// issue events (no forge.IssueEventer) leaves EventsRead false: Decide
// then waits for the review itself.
func (r *Runner) observe(ctx context.Context, ref forge.PRRef, st State, result *ActResult) (Observation, error) {
	pr, err := r.Forge.Observe(ctx, ref)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{Now: r.Clock.Now(), PR: pr, Result: result, StopRequested: r.stopRequested(ctx)}
	if ev, ok := r.Forge.(forge.IssueEventer); ok && st.WantsEvents() && r.Config.Bot != nil {
		evs, err := ev.IssueEvents(ctx, ref)
		if err != nil {
			return Observation{}, fmt.Errorf("issue events: %w", err)
		}
		obs.EventsRead = true
		for _, e := range evs {
			if e.Event == r.Config.Bot.StartedEvent() && e.ID > obs.BotStartedMax {
				obs.BotStartedMax = e.ID
			}
		}
	}
	if st.StartedAt.IsZero() && pr.State == forge.StateOpen {
		lines, err := r.Workspace.Prepare(ctx, pr)
		if err != nil {
			return Observation{}, fmt.Errorf("prepare workspace: %w", err)
		}
		obs.BaseDiffLines = lines
	}
	obs.Permissions, err = r.permissions(ctx, ref, pr)
	if err != nil {
		return Observation{}, err
	}
	return obs, nil
}

// permissions looks up, once per run, the permission of every author of an
// unresolved thread (SEC-1). Bots on the allowlist need no lookup.
func (r *Runner) permissions(ctx context.Context, ref forge.PRRef, pr *forge.PullRequest) (map[string]forge.Permission, error) {
	bots := map[string]bool{}
	for _, b := range r.Config.TrustedBots {
		bots[strings.ToLower(b)] = true
	}
	var logins []string
	want := func(login string) {
		l := strings.ToLower(login)
		if l == "" || bots[l] || strings.EqualFold(l, r.Config.Self) {
			return
		}
		if _, ok := r.perms[l]; !ok && !slices.Contains(logins, l) {
			logins = append(logins, l)
		}
	}
	for _, t := range pr.Threads {
		if len(t.Comments) == 0 {
			continue
		}
		// Resolved threads too: PR-T12 reopens a trusted one whose
		// addressing commit was dropped.
		want(t.Comments[0].Author)
	}
	// PR-T13: top-level comments and reviews of humans.
	for _, ic := range pr.IssueComments {
		want(ic.Author)
	}
	for _, rv := range pr.Reviews {
		switch rv.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			want(rv.Author)
		}
	}
	sort.Strings(logins)
	for _, l := range logins {
		if _, ok := r.perms[l]; ok {
			continue
		}
		p, err := r.Forge.Permission(ctx, ref, l)
		if err != nil {
			if forge.KindOf(err) == forge.KindNotFound {
				p = forge.PermNone
			} else {
				return nil, fmt.Errorf("permission of %s: %w", l, err)
			}
		}
		r.perms[l] = p
	}
	out := make(map[string]forge.Permission, len(r.perms))
	for k, v := range r.perms {
		out[k] = v
	}
	return out, nil
}

// act runs one action once: the journal refuses a key that already finished,
// and the forge's own state (markers, labels, resolved flags) is what Decide
// checked before asking.
func (r *Runner) act(ctx context.Context, pr *forge.PullRequest, round int, a Action) (*ActResult, error) {
	done, err := r.Journal.BeginAction(ctx, round, a)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", a.Key, err)
	}
	// A fix is asked for again only when Decide saw neither its result
	// nor its pushed commit, so it did not land: run it. Every other
	// finished action is not repeated.
	if done && a.Kind != ActFix && a.Kind != ActLocalReview {
		return nil, nil
	}
	var (
		res     *ActResult
		outcome = "ok"
		detail  any
	)
	switch a.Kind {
	case ActRequestReview:
		err = r.Forge.RequestReviews(ctx, pr, nil, []string{r.Config.Bot.RequestLogin()})
		switch {
		case err == nil:
			r.report(Event{Kind: "review", Round: round, Message: "requested copilot review"})
		case refusal(err):
			// Copilot is not available here: single-iteration mode (PR-M3).
			res = &ActResult{RequestRefused: true, RefusedReason: err.Error()}
			outcome, err = "refused", nil
			r.report(Event{Kind: "review", Round: round, Message: "copilot review refused; single-iteration mode"})
		case transient(err):
			// Never a refusal: Decide asks again after the back-off.
			r.report(Event{Kind: "review", Round: round, Message: "review request failed, will retry: " + err.Error()})
			res = &ActResult{RequestFailed: true}
			outcome, detail, err = "failed", err.Error(), nil
		}
	case ActLocalReview:
		// It runs beside the forge poll (PR-S4); its result and its
		// journal entry come with a later observation (collectReview).
		return r.startReview(ctx, pr, round, a)
	case ActComment:
		_, err = r.Forge.CreateIssueComment(ctx, pr.Ref, a.Body)
		if err != nil && a.Reason == summaryReason {
			// A failed summary post is logged, never fatal (PR-S4).
			r.report(Event{Kind: "note", Round: round, Message: "could not post the local review summary: " + err.Error()})
			outcome, detail, err = "failed", err.Error(), nil
		} else if err == nil {
			r.report(Event{Kind: "comment", Round: round, Message: "commented on the pull request (" + a.Reason + ")"})
		}
	case ActUnresolve:
		err = r.Forge.UnresolveThread(ctx, pr.Ref, a.ThreadID)
		if err == nil {
			r.report(Event{Kind: "resolve", Round: round, Message: "reopened " + a.ThreadID + ": " + a.Reason})
		}
	case ActFix:
		// The fix and the local review share the worktree: a review still
		// running finishes first, and its result is kept.
		if res, err = r.awaitReview(ctx); err != nil {
			return nil, err
		}
		r.report(Event{Kind: "fix", Round: round, Message: fmt.Sprintf("fixing %d finding(s)", len(a.Findings))})
		var fr FixResult
		fr, err = r.Workspace.Fix(ctx, pr, round, a.Findings)
		if err == nil {
			res = mergeResult(res, &ActResult{Fix: &fr})
			detail = fr
			msg := fmt.Sprintf("%d addressed, %d blocked", len(fr.Addressed), len(fr.Blocked))
			if fr.CommitSHA != "" {
				msg += ", pushed " + text.ShortSHA(fr.CommitSHA)
			}
			r.report(Event{Kind: "fix", Round: round, Message: msg, Data: fr})
		}
	case ActReply:
		_, err = r.Forge.ReplyToThread(ctx, pr.Ref, a.ThreadID, a.Body)
		if err == nil {
			r.report(Event{Kind: "reply", Round: round, Message: "replied to " + a.ThreadID})
		}
	case ActResolve:
		err = r.Forge.ResolveThread(ctx, pr.Ref, a.ThreadID)
		if err == nil {
			r.report(Event{Kind: "resolve", Round: round, Message: "resolved " + a.ThreadID})
		}
	case ActAddLabel:
		err = r.Forge.AddLabels(ctx, pr.Ref, a.Label)
	case ActRemoveLabel:
		err = r.Forge.RemoveLabel(ctx, pr.Ref, a.Label)
		if forge.KindOf(err) == forge.KindNotFound {
			err = nil
		}
	case ActSetStatus:
		err = r.Forge.SetCommitStatus(ctx, pr.Ref, a.SHA, forge.CommitStatus{
			State: a.State, Context: StatusContext, Description: text.Clip(a.Reason, 140),
		})
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if err != nil {
		_ = r.Journal.FinishAction(ctx, a, "failed", err.Error())
		return nil, fmt.Errorf("%s: %w", a.Kind, err)
	}
	if outcome == "failed" {
		// Recorded as failed so the same key may run again.
		_ = r.Journal.FinishAction(ctx, a, outcome, detail)
		return res, nil
	}
	if err := r.Journal.FinishAction(ctx, a, outcome, detail); err != nil {
		return nil, fmt.Errorf("journal %s: %w", a.Key, err)
	}
	return res, nil
}

// refusal is a definite "Copilot cannot review here" (PR-M3): the forge
// refused the request as invalid (the bot unknown, Copilot not enabled).
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

func (r *Runner) report(e Event) {
	if r.Reporter == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = r.Clock.Now()
	}
	r.Reporter.Report(e)
}

// MarshalState is how the engine stores State.
func MarshalState(s State) ([]byte, error) { return json.Marshal(s) }

// UnmarshalState reads a stored State.
func UnmarshalState(b []byte) (State, error) {
	var s State
	if len(b) == 0 {
		return s, errors.New("empty state")
	}
	err := json.Unmarshal(b, &s)
	return s, err
}
