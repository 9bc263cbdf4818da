package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// reviewAttempts: a reviewer that could not run, or whose answer could
// not be read, is tried once more (AG-T4).
const reviewAttempts = 2

// contextBytes bounds the file contents a re-dispatch quotes.
const contextBytes = 32 << 10

// Tickets is the part of the store a run's dispatches live in: one
// ticket per dispatch, claimed once.
type Tickets interface {
	CreateTicket(ctx context.Context, t store.Ticket) (store.Ticket, bool, error)
	ClaimTicket(ctx context.Context, id, owner string, pid int) (holder string, ok bool, err error)
	FinishTicket(ctx context.Context, id, owner, status string, result []byte) error
	GetTicket(ctx context.Context, id string) (store.Ticket, error)
}

var _ Tickets = (*store.Store)(nil)

// Deps are what Observe and Act work with, in one struct.
type Deps struct {
	Tickets   Tickets
	Workspace Workspace
	// Agent builds the implementer agent name, for a task's dispatch;
	// the model of each run is its Task.Model (AG-E1).
	Agent func(name string) (agent.Agent, error)
	// Reviewer is the task reviewer.
	Reviewer agent.Agent
	// Judge judges an implementer's concerns and splits a task too large
	// for one run (Config.Judge names it; the CLI's is the reviewer). Nil:
	// concerns are judged by the rule, and nothing is split.
	Judge agent.Agent
	// AgentEnv is the scrubbed environment of agents (AG-B1).
	AgentEnv []string
	Journal  engine.Journal[State]
	Reporter engine.Reporter
	// PID is this process's id: dispatches are claimed in a name that
	// holds it.
	PID int
	// PoolDir holds the worktrees of parallel dispatches (pool.Options.Dir):
	// the caller's own directory for this run, so that what a killed
	// converge left there can be found and removed (pool.Sweep).
	PoolDir string
}

// stopPoll is how often a stop request is looked for while an agent runs.
const stopPoll = 200 * time.Millisecond

// Loop is the plan executor of one run, as the engine drives it.
type Loop struct {
	Deps
	RunID string

	// stopRequested is the engine's (Options), also watched while an
	// agent runs, so that a stop does not wait for the agent to end.
	stopRequested func(context.Context) bool
}

var (
	_ engine.Loop[State, Observation, Action, ActResult] = (*Loop)(nil)
	_ engine.Action                                      = Action{}
)

// NewLoop binds the loop to one run.
func NewLoop(runID string, d Deps) *Loop {
	return &Loop{Deps: d, RunID: runID}
}

// Run drives the run from st to its terminal. The error is a fault that
// ended the run (its failed state persisted), or ctx's when it was
// cancelled (the run stays resumable).
func (l *Loop) Run(ctx context.Context, st State, opt engine.Options) (State, error) {
	if opt.Reporter == nil {
		opt.Reporter = l.Reporter
	}
	l.stopRequested = opt.StopRequested
	final, err := engine.Run[State, Observation, Action, ActResult](ctx, l, l.Journal, st, opt)
	if t := final.Terminal; t != nil {
		l.report(engine.Event{Kind: "terminal", Message: string(t.Status) + ": " + t.Message, Data: t})
	}
	return final, err
}

// Decide is the pure step (engine.Loop).
func (l *Loop) Decide(st State, obs Observation) (State, []Action, bool) { return Decide(st, obs) }

// Observe reads HEAD, the tickets of the dispatches in flight, and what
// the acts since the last step reported (engine.Loop).
func (l *Loop) Observe(ctx context.Context, st State, in engine.Input[ActResult]) (Observation, error) {
	obs := Observation{Now: in.Now, StopRequested: in.StopRequested, Tickets: map[string]TicketView{}}
	for _, r := range in.Results {
		if r.Review != nil {
			obs.Reviews = append(obs.Reviews, *r.Review)
		}
		if r.Kept != "" {
			obs.Kept = append(obs.Kept, r.Kept)
		}
		if r.Judged != nil {
			obs.Judged = append(obs.Judged, *r.Judged)
		}
		if r.Split != nil {
			obs.Splits = append(obs.Splits, *r.Split)
		}
	}
	var err error
	if obs.Head, err = l.Workspace.Head(ctx); err != nil {
		return Observation{}, err
	}
	for _, t := range st.Tasks {
		cur := t.current()
		if t.Phase != PhaseRunning || cur == nil {
			continue
		}
		tk, err := l.Tickets.GetTicket(ctx, cur.Ticket)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return Observation{}, err
		}
		v := TicketView{Status: tk.Status}
		if tk.Status == store.TicketDone && len(tk.Result) > 0 {
			var rep Report
			if err := json.Unmarshal(tk.Result, &rep); err != nil {
				rep = Report{Failure: "the ticket's report does not decode: " + err.Error()}
			}
			v.Report = &rep
		}
		obs.Tickets[cur.Ticket] = v
	}
	return obs, nil
}

// Act performs one action (engine.Loop). Each is idempotent: a ticket is
// claimed once, a review and an unwind can run again.
func (l *Loop) Act(ctx context.Context, st State, obs Observation, a Action) (ActResult, error) {
	switch a.Kind {
	case ActDispatch:
		return ActResult{}, l.dispatch(ctx, st, a.Jobs)
	case ActReview:
		wctx, stopped, end := l.stoppable(ctx)
		defer end()
		r, err := l.review(wctx, st, a)
		if stopped() && ctx.Err() == nil {
			// The next step ends the run; the task's commits come off the
			// branch unreviewed.
			return ActResult{}, nil
		}
		if err != nil {
			return ActResult{}, err
		}
		return ActResult{Review: &ReviewDone{Task: a.Task, Review: r}}, nil
	case ActJudge, ActSplit:
		wctx, stopped, end := l.stoppable(ctx)
		defer end()
		var res ActResult
		var err error
		if a.Kind == ActJudge {
			var jd JudgeDone
			jd, err = l.judgeConcerns(wctx, st, a)
			res.Judged = &jd
		} else {
			var sd SplitDone
			sd, err = l.splitTask(wctx, st, a)
			res.Split = &sd
		}
		if stopped() && ctx.Err() == nil {
			return ActResult{}, nil
		}
		if err != nil {
			return ActResult{}, err
		}
		return res, nil
	case ActReset:
		if err := l.Workspace.Reset(ctx, a.Head); err != nil {
			return ActResult{}, err
		}
		l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("the work tree is put back at %s: what the dispatches in progress left uncommitted is dropped", text.ShortSHA(a.Head))})
		return ActResult{}, nil
	case ActUnwind:
		how, err := l.Workspace.Unwind(ctx, a.Base, a.Head, a.Paths, a.Ref, TaskRef(l.RunID, a.Task), fmt.Sprintf("converge plan: take task %s off the branch\n\nIt ended BLOCKED; its work is kept at %s.", a.Task, a.Ref))
		if err != nil {
			return ActResult{}, err
		}
		l.report(engine.Event{Kind: "unwind", Message: fmt.Sprintf("task %s: its commits are taken off the branch (%s) and kept at %s", a.Task, how, a.Ref)})
		return ActResult{Kept: a.Task}, nil
	}
	return ActResult{}, fmt.Errorf("unknown action %q", a.Kind)
}

// claimed is a job whose ticket this process holds.
type claimed struct {
	Job
	task  *Task
	owner string
}

// claim creates and claims the jobs' tickets. A ticket someone already
// claimed is not run again: the next observation sees it interrupted.
func (l *Loop) claim(ctx context.Context, st State, jobs []Job) ([]claimed, error) {
	var out []claimed
	for _, j := range jobs {
		d := j.Dispatch
		task := st.Config.Plan.Task(j.Task)
		if task == nil {
			return nil, fmt.Errorf("dispatch of unknown task %q", j.Task)
		}
		if _, _, err := l.Tickets.CreateTicket(ctx, store.Ticket{ID: d.Ticket, RunID: l.RunID, N: d.N}); err != nil {
			return nil, err
		}
		owner := fmt.Sprintf("%s/implementer-%d", d.Ticket, l.PID)
		holder, ok, err := l.Tickets.ClaimTicket(ctx, d.Ticket, owner, l.PID)
		if err != nil {
			return nil, err
		}
		if !ok {
			l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("task %s: %s is already claimed by %s; it is not run again", j.Task, d.Ticket, holder)})
			continue
		}
		l.report(engine.Event{Kind: "dispatch", Message: fmt.Sprintf("task %s: %s (ticket %s, agent %s)", j.Task, dispatchWords(d.Kind), d.Ticket, d.Agent)})
		out = append(out, claimed{Job: j, task: task, owner: owner})
	}
	return out, nil
}

// dispatch runs a batch of implementer dispatches, each under its
// ticket, and commits each DONE task's change on the branch as its own
// commit (converge commits it if the agent did not, AG-T2). One job runs
// in the repository's work tree, reset to where it starts; more run at
// once through the worktree pool (AG-P1), each in a worktree of its own,
// their changes combined and then committed task by task.
//
// A stop request (PR-G5) stops the agents at once: their tickets end
// interrupted, the tree goes back to where the batch started, and the
// next step ends the run.
func (l *Loop) dispatch(ctx context.Context, st State, jobs []Job) error {
	wctx, stopped, end := l.stoppable(ctx)
	defer end()
	if stopped() {
		return nil
	}
	cs, err := l.claim(ctx, st, jobs)
	if err != nil || len(cs) == 0 {
		return err
	}
	if err := l.dropUnrecorded(ctx, st, cs); err != nil {
		return err
	}
	if len(cs) == 1 {
		// It starts from the branch as this step's earlier actions left
		// it: an unwind before it may have moved HEAD since Decide read it.
		c := cs[0]
		from, err := l.Workspace.Head(ctx)
		if err != nil {
			return err
		}
		c.Dispatch.From = from
		if err := l.Workspace.Reset(ctx, from); err != nil {
			return err
		}
		reset := func(ctx context.Context) error { return l.Workspace.Reset(ctx, from) }
		rep, err := l.implement(wctx, st, c.task, c.Job, l.Workspace.Dir(), reset)
		fatal := cannotRun(err)
		if fatal != nil {
			err = nil
		}
		if err != nil && stopped() && ctx.Err() == nil {
			return l.abandon(ctx, cs, from)
		}
		if err != nil {
			// Cancelled (a signal): the ticket stays claimed, and a
			// resumed run dispatches the task again.
			return err
		}
		if !done(rep) {
			if err := reset(ctx); err != nil {
				return err
			}
		}
		if err := l.record(ctx, c, rep, from, nil); err != nil {
			return err
		}
		if fatal != nil {
			return fatal
		}
		return nil
	}
	return l.pooled(ctx, wctx, stopped, st, cs)
}

// dropUnrecorded takes off the branch the commit of a task dispatched
// again that a converge killed between committing the task's change and
// recording it left at HEAD: the task runs again from its parent, so its
// change lands once (REL-2). Such a commit names the task in its trailer
// and is not the task's recorded head. When commits were made on top of
// it since, taking it off would rewrite them and running the task again
// would land its change twice: the run ends, failed, saying so (fail
// closed): a human puts the branch right, and the run resumes.
func (l *Loop) dropUnrecorded(ctx context.Context, st State, cs []claimed) error {
	for _, c := range cs {
		if c.Dispatch.Kind != DispatchAgain {
			continue
		}
		var ts *TaskState
		if i := slices.IndexFunc(st.Tasks, func(t TaskState) bool { return t.ID == c.task.ID }); i >= 0 {
			ts = &st.Tasks[i]
		}
		// Where the first of the interrupted dispatches before this one
		// started: a commit any of them made is above it, even when a
		// converge that stopped for a human dispatched it again since.
		from := ""
		if ts != nil {
			for i := len(ts.Dispatches) - 2; i >= 0 && ts.Dispatches[i].Outcome == OutcomeInterrupted; i-- {
				from = ts.Dispatches[i].From
			}
		}
		tc, ok, err := l.Workspace.TaskCommit(ctx, TaskRef(l.RunID, c.task.ID), from)
		if err != nil {
			return err
		}
		if !ok || (ts != nil && ts.Head == tc.SHA) {
			continue
		}
		if tc.Above > 0 {
			return &HumanNeeded{Why: fmt.Sprintf("task %s: %s is its change, committed by a converge killed before it recorded it, and %d commit(s) were made on top of it since; "+
				"converge neither runs the task again (its change would land twice) nor rewrites those commits: take %s off the branch (git rebase --onto %s %s)",
				c.task.ID, text.ShortSHA(tc.SHA), tc.Above, text.ShortSHA(tc.SHA), text.ShortSHA(tc.Parent), text.ShortSHA(tc.SHA))}
		}
		if err := l.Workspace.Reset(ctx, tc.Parent); err != nil {
			return err
		}
		l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("task %s: %s at HEAD is its change, committed by a converge killed before it recorded it; it is taken off before the task runs again", c.task.ID, text.ShortSHA(tc.SHA))})
		// Only the last commit can be one: each is recorded before the next.
		return nil
	}
	return nil
}

// abandon ends the claimed dispatches of a batch a stop request cut
// short: their tickets end interrupted, never handed out again, and the
// tree goes back to head, where the batch started.
func (l *Loop) abandon(ctx context.Context, cs []claimed, head string) error {
	if err := l.Workspace.Reset(ctx, head); err != nil {
		return err
	}
	for _, c := range cs {
		if err := l.Tickets.FinishTicket(ctx, c.Dispatch.Ticket, c.owner, store.TicketInterrupted, nil); err != nil {
			return err
		}
	}
	l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("stop requested: %d dispatch(es) stopped before they ended; the work tree is back at %s", len(cs), text.ShortSHA(head))})
	return nil
}

// stoppable returns ctx, cancelled as soon as a stop is requested from
// outside the process (checked now, then every stopPoll), and whether
// that happened; end stops the watch.
func (l *Loop) stoppable(ctx context.Context) (wctx context.Context, stopped func() bool, end func()) {
	wctx, cancel := context.WithCancel(ctx)
	var hit atomic.Bool
	check := func() bool {
		if l.stopRequested(ctx) {
			hit.Store(true)
			cancel()
			return true
		}
		return false
	}
	if l.stopRequested == nil || check() {
		return wctx, hit.Load, cancel
	}
	go func() {
		t := time.NewTicker(stopPoll)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if check() {
					return
				}
			}
		}
	}()
	return wctx, hit.Load, cancel
}

// pooled runs the jobs through the worktree pool, under wctx. The
// branch's HEAD is where they all start: a job whose converge died is
// dispatched again from there, and whatever that converge left
// uncommitted is dropped. The worktrees live in PoolDir.
func (l *Loop) pooled(ctx, wctx context.Context, stopped func() bool, st State, cs []claimed) error {
	head, err := l.Workspace.Head(ctx)
	if err != nil {
		return err
	}
	if err := l.Workspace.Reset(ctx, head); err != nil {
		return err
	}
	tasks := make([]pool.Task, len(cs))
	for i, c := range cs {
		tasks[i] = pool.Task{ID: c.Dispatch.Ticket, Files: c.task.Files}
	}
	byTicket := func(id string) claimed {
		for _, c := range cs {
			if c.Dispatch.Ticket == id {
				return c
			}
		}
		panic("pool task " + id + " is no job of the batch")
	}
	fn := func(ctx context.Context, pt pool.Task, tree *pool.Tree) (Report, error) {
		c := byTicket(pt.ID)
		c.Dispatch.From = head
		rep, err := l.implement(ctx, st, c.task, c.Job, tree.Dir, tree.Reset)
		if err != nil {
			return rep, err
		}
		if !done(rep) {
			// Its change is not taken into the combined tree.
			return rep, tree.Reset(ctx)
		}
		return rep, nil
	}
	results, err := pool.Run(wctx, l.Workspace.Repo(), tasks, fn, pool.Options{
		Max: len(cs),
		Dir: l.PoolDir,
		Logf: func(format string, args ...any) {
			l.report(engine.Event{Kind: "note", Message: fmt.Sprintf(format, args...)})
		},
	})
	if err != nil && stopped() && ctx.Err() == nil {
		return l.abandon(ctx, cs, head)
	}
	if err != nil {
		return err
	}
	// Each task's change becomes its own commit, in task order; the
	// changes of the tasks after it stay out of it.
	var fatal *agent.RunFailure
	for i, r := range results {
		c, rep := cs[i], r.Value
		if f := cannotRun(r.Err); f != nil && fatal == nil {
			fatal = f
		}
		if r.Err != nil && rep.Failure == "" {
			rep.Failure, rep.Implementer = fmt.Sprintf("its change could not be taken: %v", r.Err), TaskBlocked
		}
		var later []string
		for _, x := range results[i+1:] {
			later = append(later, x.Files...)
		}
		from, err := l.Workspace.Head(ctx)
		if err != nil {
			return err
		}
		if err := l.record(ctx, c, rep, from, later); err != nil {
			return err
		}
	}
	if fatal != nil {
		return fatal
	}
	return nil
}

// cannotRun is err's agent failure that another run cannot mend (its
// credentials, its endpoint: agent.RunFailure.Retryable), nil for any
// other: the run ends errored on it, every dispatch of the batch
// recorded first.
func cannotRun(err error) *agent.RunFailure {
	var fail *agent.RunFailure
	if errors.As(err, &fail) && !fail.Retryable() {
		return fail
	}
	return nil
}

// record commits a DONE task's change (all of the tree's, but exclude)
// with its trailer on top of what the agent committed itself, and stores
// the dispatch's report in its ticket: from is where the dispatch's
// change starts.
func (l *Loop) record(ctx context.Context, c claimed, rep Report, from string, exclude []string) error {
	var err error
	rep.From, rep.Head = from, from
	if done(rep) {
		msg := fmt.Sprintf("converge plan: task %s", c.task.ID)
		if s := strings.TrimSpace(rep.Summary); s != "" {
			msg += "\n\n" + s
		}
		if rep.Head, err = l.Workspace.Commit(ctx, TaskRef(l.RunID, c.task.ID), msg, exclude); err != nil {
			return err
		}
	}
	if rep.Changed, err = l.Workspace.Changed(ctx, rep.From, rep.Head); err != nil {
		return err
	}
	rep.Outside = outside(rep.Changed, c.task.Files)
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return l.Tickets.FinishTicket(ctx, c.Dispatch.Ticket, c.owner, store.TicketDone, b)
}

func done(rep Report) bool {
	return rep.Failure == "" && (rep.Implementer == TaskDone || rep.Implementer == TaskDoneWithConcerns)
}

// implement runs the implementer by the status protocol
// (agent.Runner.Dispatch: a run that could not run retried once, AG-T4;
// extensions, AG-T1; more context once after NEEDS_CONTEXT, then the
// plan's stronger models, AG-T2, AG-E1), every re-run from a tree reset
// to where the dispatch started. An agent that still cannot run is the
// report's Failure; one whose CLI's credentials failed or whose endpoint
// stayed down is also the error (cannotRun), which ends the run.
func (l *Loop) implement(ctx context.Context, st State, task *Task, j Job, dir string, reset func(context.Context) error) (Report, error) {
	d := j.Dispatch
	rep := Report{Agent: d.Agent, From: d.From}
	start := time.Now()
	defer func() { rep.Duration = time.Since(start) }()
	a, err := l.Agent(d.Agent)
	if err != nil {
		rep.Failure, rep.Implementer = fmt.Sprintf("agent %s: %v", d.Agent, err), TaskBlocked
		return rep, nil
	}
	in := ImplementInput{Task: task, Dispatch: d, Workdir: dir}
	r := agent.Runner{
		Agent: prompted{Agent: a, render: func(t agent.Task) string { return RenderImplementPrompt(t, in) }},
		Reset: reset,
		Logf: func(format string, args ...any) {
			l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("task %s: ", task.ID) + fmt.Sprintf(format, args...)})
		},
		// A task too large for one run is split, not escalated.
		Settled: tooLargeRecord,
	}
	t := agent.Task{Kind: TaskKindImplement, RunID: d.Ticket, Round: d.N, Workdir: dir, Budget: st.Config.AgentBudget, Env: l.AgentEnv}
	for i, is := range d.Issues {
		t.Findings = append(t.Findings, agent.Finding{ID: fmt.Sprintf("issue-%d", i+1), Path: is.File, EndLine: is.Line, Body: is.Summary, Source: "review (" + is.Severity + ")"})
	}
	ladder := st.Config.Plan.Ladder(task)
	if len(ladder) == 1 && ladder[0] == "" {
		ladder = nil
	}
	more := func(rec agent.StatusRecord) string {
		// Exactly what it asked for, read from the tree as the dispatch
		// started (the runner reset it).
		asked := agent.NotDoneReason(rec)
		if na := strings.TrimSpace(rec.NextAction); na != "" && na != asked {
			asked += " " + na
		}
		return AnswerContext(AnswerInput{State: st, Task: task, Asked: asked, Dir: dir, Budget: contextBytes})
	}
	res, err := r.Dispatch(ctx, t, ladder, more)
	rep.Usage, rep.CostUSD = res.Usage, res.Usage.CostUSD
	for _, at := range res.Attempts {
		rep.Attempts = append(rep.Attempts, Attempt{Model: at.Model, Context: at.Context, Status: at.Status, Reason: at.Reason, Extensions: at.Extensions})
	}
	var fail *agent.RunFailure
	switch {
	case ctx.Err() != nil:
		return rep, fmt.Errorf("agent %s: %w", a.Name(), ctx.Err())
	case errors.As(err, &fail):
		rep.Failure, rep.Implementer = fail.Error(), TaskBlocked
		if !fail.Retryable() {
			// No other task would fare better: the run ends on it.
			return rep, fail
		}
		return rep, nil
	case err != nil:
		return rep, err
	}
	rec := res.Result.Record
	rep.Status, rep.Summary, rep.NextAction = string(rec.Status), rec.Summary, rec.NextAction
	rep.Implementer, rep.Reason, rep.Concerns, rep.Claimed = res.Status, res.Reason, res.Concerns, rec.FilesChanged
	l.report(engine.Event{Kind: "report", Message: fmt.Sprintf("task %s: agent %s ended %s after %d attempt(s): %s", task.ID, a.Name(), res.Status, len(res.Attempts), text.Clip(text.OneLine(firstNonEmpty(res.Reason, rec.Summary)), 160))})
	return rep, nil
}

// prompted renders a task's prompt from the task as each run gets it,
// so the model and the context the status protocol sets reach it.
type prompted struct {
	agent.Agent
	render func(agent.Task) string
}

func (p prompted) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	t.Prompt = p.render(t)
	return p.Agent.Run(ctx, t)
}

// review runs the reviewer on the task's diff base..head (PLAN-1): it
// gets the task and the diff, not the implementer's report. It is tried
// once more when it could not run or its answer could not be read; then
// the review is not valid, which approves nothing.
func (l *Loop) review(ctx context.Context, st State, a Action) (Review, error) {
	task := st.Config.Plan.Task(a.Task)
	r := Review{N: a.N, Base: a.Base, Head: a.Head, Agent: l.Reviewer.Name(), Issues: []Issue{}}
	diff, err := l.Workspace.Diff(ctx, a.Base, a.Head, a.Paths)
	if err != nil {
		return r, err
	}
	t := agent.Task{Kind: TaskKindReview, RunID: TaskRef(l.RunID, a.Task) + fmt.Sprintf(".review.%d", a.N), Round: a.N, Workdir: l.Workspace.Dir(), Budget: st.Config.AgentBudget, Env: l.AgentEnv, Diff: diff, BaseRef: a.Base, HeadSHA: a.Head}
	t.Prompt = RenderReviewPrompt(t, ReviewInput{TaskID: task.ID, Prompt: task.Prompt, Files: task.Files, Base: a.Base, Head: a.Head, Diff: diff, Workdir: l.Workspace.Dir()})
	l.report(engine.Event{Kind: "review", Message: fmt.Sprintf("task %s: review %d by %s of %s..%s", a.Task, a.N, l.Reviewer.Name(), text.ShortSHA(a.Base), text.ShortSHA(a.Head))})
	for attempt := 1; attempt <= reviewAttempts; attempt++ {
		res, err := l.Reviewer.Run(ctx, t)
		if ctx.Err() != nil {
			return r, fmt.Errorf("reviewer %s: %w", l.Reviewer.Name(), ctx.Err())
		}
		r.Usage.AddRun(res.Usage)
		r.CostUSD = r.Usage.CostUSD
		if fail := agent.FailureOf(l.Reviewer.Name(), res, err); fail != nil {
			r.Note = fail.Error()
			if !fail.Retryable() {
				// Its credentials or its endpoint: the run ends on it.
				return r, fail
			}
			continue
		}
		got, perr := ParseReview(res.Output)
		if perr != nil {
			r.Note = perr.Error()
			continue
		}
		got.N, got.Base, got.Head, got.Agent, got.CostUSD, got.Usage, got.Note = r.N, r.Base, r.Head, r.Agent, r.CostUSD, r.Usage, ""
		r = got
		break
	}
	words := "approved"
	switch {
	case !r.Valid:
		words = "no valid answer: " + r.Note
	case !r.Passed():
		words = "not approved: " + issueList(openIssues(r))
	case len(r.Issues) > 0:
		words = "passed with minor issues: " + issueList(r.Issues)
	}
	l.report(engine.Event{Kind: "review", Message: fmt.Sprintf("task %s: review %d: %s", a.Task, a.N, text.Clip(words, 300))})
	return r, nil
}

// Stepped reports the concerns judged and the tasks that ended or were
// split (engine.Loop): the decision log.
func (l *Loop) Stepped(prev, next State, obs Observation) bool {
	for _, n := range next.Tasks {
		i := slices.IndexFunc(prev.Tasks, func(t TaskState) bool { return t.ID == n.ID })
		if i < 0 {
			continue
		}
		p := prev.Tasks[i]
		for _, v := range n.Judged[min(len(p.Judged), len(n.Judged)):] {
			l.report(engine.Event{Kind: "concern", Message: fmt.Sprintf("task %s: concern judged %s by %s: %s — %s", n.ID, v.Verdict, v.By, text.Clip(v.Concern, 200), text.Clip(firstNonEmpty(v.Reason, "no reason given"), 200))})
		}
		if p.Phase == n.Phase || !n.Phase.ended() {
			continue
		}
		msg := fmt.Sprintf("task %s: %s", n.ID, n.Status)
		switch {
		case n.Phase == PhaseNotApproved:
			msg += ": " + notApprovedNote(n)
		case n.Phase == PhaseSplit:
			msg += fmt.Sprintf(": too large for one run (%s); its parts run in its place: %s", text.Clip(n.TooLarge, 200), strings.Join(n.SplitInto, ", "))
		case n.BlockReason != "":
			msg += ": " + n.BlockReason
		case n.Head != "":
			msg += " at " + text.ShortSHA(n.Head)
		}
		l.report(engine.Event{Kind: "task", Message: msg})
	}
	return false
}

// judgeConcerns has the judge give its verdict on each concern of a
// task, with the task's diff (the source: the orchestrator evaluates a
// concern about correctness or scope before the review). A judge that
// could not run or whose answer could not be read is tried once more;
// then the rule judges (RuleVerdict, fail closed), saying why.
func (l *Loop) judgeConcerns(ctx context.Context, st State, a Action) (JudgeDone, error) {
	jd := JudgeDone{Task: a.Task, N: a.N}
	if l.Judge == nil {
		jd.Verdicts, jd.Note = ruleVerdicts(a.Concerns), "no judge: the rule judged"
		return jd, nil
	}
	task := st.Config.Plan.Task(a.Task)
	diff, err := l.Workspace.Diff(ctx, a.Base, a.Head, a.Paths)
	if err != nil {
		return jd, err
	}
	t := agent.Task{Kind: agent.TaskKindJudge, RunID: TaskRef(l.RunID, a.Task) + fmt.Sprintf(".concerns.%d", a.N), Round: a.N, Workdir: l.Workspace.Dir(), Budget: st.Config.AgentBudget, Env: l.AgentEnv, Diff: diff, BaseRef: a.Base, HeadSHA: a.Head}
	t.Prompt = RenderConcernPrompt(t, ConcernInput{TaskID: task.ID, Prompt: task.Prompt, Files: task.Files, Base: a.Base, Head: a.Head, Diff: diff, Workdir: l.Workspace.Dir(), Concerns: a.Concerns})
	l.report(engine.Event{Kind: "judge", Message: fmt.Sprintf("task %s: %d concern(s) judged by %s", a.Task, len(a.Concerns), l.Judge.Name())})
	by := "judge " + l.Judge.Name()
	note := ""
	for attempt := 1; attempt <= reviewAttempts; attempt++ {
		res, err := l.Judge.Run(ctx, t)
		if ctx.Err() != nil {
			return jd, fmt.Errorf("judge %s: %w", l.Judge.Name(), ctx.Err())
		}
		jd.Usage.AddRun(res.Usage)
		jd.CostUSD = jd.Usage.CostUSD
		if fail := agent.FailureOf(l.Judge.Name(), res, err); fail != nil {
			note = fail.Error()
			if !fail.Retryable() {
				return jd, fail
			}
			continue
		}
		vs, perr := ParseConcernJudgment(res.Output, a.Concerns, by)
		if perr != nil {
			note = perr.Error()
			continue
		}
		jd.Verdicts = vs
		return jd, nil
	}
	jd.Verdicts = ruleVerdicts(a.Concerns)
	jd.Note = "the judge gave no valid answer (" + note + "): the rule judged"
	for i := range jd.Verdicts {
		jd.Verdicts[i].Reason += "; " + jd.Note
	}
	l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("task %s: %s", a.Task, text.Clip(jd.Note, 300))})
	return jd, nil
}

// splitTask has the judge split a task its implementer found too large
// into parts. A judge that could not run or whose answer could not be
// read is tried once more; then there is no split (the task is BLOCKED).
func (l *Loop) splitTask(ctx context.Context, st State, a Action) (SplitDone, error) {
	sd := SplitDone{Task: a.Task}
	if l.Judge == nil {
		sd.Note = "the run has no judge to split it"
		return sd, nil
	}
	sd.Agent = l.Judge.Name()
	task := st.Config.Plan.Task(a.Task)
	t := agent.Task{Kind: agent.TaskKindJudge, RunID: TaskRef(l.RunID, a.Task) + ".split", Round: 1, Workdir: l.Workspace.Dir(), Budget: st.Config.AgentBudget, Env: l.AgentEnv}
	t.Prompt = RenderSplitPrompt(t, SplitInput{Task: task, PlanContext: st.Config.Plan.Context, Reason: a.Reason, Workdir: l.Workspace.Dir()})
	l.report(engine.Event{Kind: "split", Message: fmt.Sprintf("task %s: too large for one run (%s); %s splits it", a.Task, text.Clip(a.Reason, 200), l.Judge.Name())})
	for attempt := 1; attempt <= reviewAttempts; attempt++ {
		res, err := l.Judge.Run(ctx, t)
		if ctx.Err() != nil {
			return sd, fmt.Errorf("judge %s: %w", l.Judge.Name(), ctx.Err())
		}
		sd.Usage.AddRun(res.Usage)
		sd.CostUSD = sd.Usage.CostUSD
		if fail := agent.FailureOf(l.Judge.Name(), res, err); fail != nil {
			sd.Note = fail.Error()
			if !fail.Retryable() {
				return sd, fail
			}
			continue
		}
		parts, perr := ParseSplit(res.Output, task)
		if perr != nil {
			sd.Note = perr.Error()
			continue
		}
		sd.Parts, sd.Note = parts, ""
		return sd, nil
	}
	return sd, nil
}

// HumanNeeded is an error the run cannot get past without a human, who
// can put the branch right: the run is left unfinished, so the same
// command resumes it.
type HumanNeeded struct{ Why string }

func (e *HumanNeeded) Error() string { return e.Why }

// Fail ends the run failed on a fault (engine.Loop). A *HumanNeeded cause
// leaves the state as it was: unfinished, resumable.
func (l *Loop) Fail(st State, obs Observation, cause error) (State, []Action) {
	var hn *HumanNeeded
	if errors.As(cause, &hn) {
		return st, nil
	}
	next := st.clone()
	at := obs.Now
	if at.IsZero() {
		at = lastSeen(st)
	}
	next.Terminal = &Terminal{Status: StatusFailed, ExitCode: StatusFailed.ExitCode(), Message: cause.Error(), At: at}
	if agent.KindOf(cause) == agent.FailAuth {
		// An agent CLI's credentials failed: IF-1's exit 6, not 1.
		next.Terminal.ExitCode = exitcode.Auth
	}
	return next, nil
}

func (l *Loop) report(e engine.Event) {
	if l.Reporter != nil {
		l.Reporter.Report(e)
	}
}

// outside lists the changed paths no entry of files covers.
func outside(changed, files []string) []string {
	if len(files) == 0 {
		return nil
	}
	var out []string
	for _, c := range changed {
		if !slices.ContainsFunc(files, func(f string) bool { return Intersect([]string{f}, []string{c}) }) {
			out = append(out, c)
		}
	}
	return out
}
