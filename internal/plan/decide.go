package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// Decide is the pure step of the plan executor: no IO, no clock (time is
// obs.Now), no map iteration. It returns the next state, the actions to
// take, and whether the run ended (next.Terminal is set).
//
// Each step reads the outcome of every dispatch in flight from its
// ticket. A dispatch runs the implementer status protocol whole (AG-T2,
// AG-E1: more context once, then stronger models; agent.Runner.Dispatch)
// and ends DONE, DONE_WITH_CONCERNS or BLOCKED: a done task goes to
// review; a BLOCKED one (a concern marked critical included) ends so. A
// review with an important or critical issue sends the task back to its
// implementer, at most MaxFixIterations times; minor issues are recorded
// (PLAN-1). A blocked task's commits are taken off the branch, its
// dependents are SKIPPED, the rest keeps going. Then it starts the tasks
// that are ready (AG-P1): dependencies DONE, earlier barriers passed,
// earlier tasks of a sequential group ended, no file in common with a
// task in progress, at most Config.Parallel in progress.
func Decide(st State, obs Observation) (State, []Action, bool) {
	next := st.clone()
	if next.Terminal != nil {
		return next, nil, true
	}
	if next.StartedAt.IsZero() {
		next.StartedAt, next.StartHead = obs.Now, obs.Head
	}
	d := &decider{st: &next, obs: obs, plan: &next.Config.Plan}
	if obs.StopRequested {
		return d.stop()
	}
	for i := range next.Tasks {
		switch t := &next.Tasks[i]; t.Phase {
		case PhaseRunning:
			d.running(t)
		case PhaseReview:
			d.reviewing(t)
		}
	}
	d.unwinds()
	d.skip()
	if len(d.unwind) == 0 {
		d.startReady()
	}
	if acts := d.actions(); len(acts) > 0 {
		return next, acts, false
	}
	d.stuck()
	return d.finish()
}

// decider holds one step's working state.
type decider struct {
	st   *State
	obs  Observation
	plan *Plan

	unwind  []Action
	reviews []Action
	batch   []Job
}

func (d *decider) actions() []Action {
	acts := append(slices.Clone(d.unwind), d.reviews...)
	if len(d.batch) > 0 {
		acts = append(acts, Action{Kind: ActDispatch, Jobs: d.batch})
	}
	return acts
}

func (d *decider) task(t *TaskState) *Task { return d.plan.Task(t.ID) }

// running reads the outcome of the task's dispatch in flight.
func (d *decider) running(t *TaskState) {
	cur := t.current()
	tv, ok := d.obs.Tickets[cur.Ticket]
	if !ok || tv.Status == store.TicketOpen {
		// Never claimed: handing it out now repeats nothing.
		d.batch = append(d.batch, Job{Task: t.ID, Dispatch: *cur, Base: t.Base})
		return
	}
	if tv.Status != store.TicketDone {
		// Claimed by a converge that is gone (killed mid-task): that
		// ticket is never handed out again; the task is dispatched anew
		// from where the dispatch started, and the tree is reset there.
		cur.Outcome = OutcomeInterrupted
		nd := d.dispatch(t, DispatchAgain)
		nd.Issues = cur.Issues
		d.batch[len(d.batch)-1].Dispatch = *nd
		return
	}
	rep := tv.Report
	if rep == nil {
		rep = &Report{Failure: "the ticket holds no report"}
	}
	cur.Report = rep
	d.st.CostUSD += rep.CostUSD
	d.st.Usage.Add(rep.Usage)
	if rep.Failure != "" {
		cur.Outcome = TaskBlocked
		d.block(t, rep.Failure, true)
		return
	}
	cur.Outcome = rep.Implementer
	for _, c := range rep.Changed {
		if !slices.Contains(t.Changed, c) {
			t.Changed = append(t.Changed, c)
		}
	}
	slices.Sort(t.Changed)
	for _, c := range rep.Concerns {
		addConcern(t, c)
	}
	if len(rep.Outside) > 0 {
		addConcern(t, "changed files outside its declared files: "+strings.Join(rep.Outside, ", "))
	}
	if rep.Implementer == TaskDone || rep.Implementer == TaskDoneWithConcerns {
		t.Head = rep.Head
		t.Phase = PhaseReview
		d.review(t)
		return
	}
	d.block(t, blockReason(rep), false)
}

// blockReason says why a dispatch ended BLOCKED: a concern the
// implementer marked critical, or the last attempt's reason after the
// models it tried (AG-E1).
func blockReason(rep *Report) string {
	if c, ok := agent.CriticalConcern(rep.Concerns); ok {
		return "the implementer marked a concern critical: " + c
	}
	why := fmt.Sprintf("%s after %d attempt(s)", TaskBlocked, len(rep.Attempts))
	if m := models(rep.Attempts); len(m) > 1 {
		why += ", models " + strings.Join(m, " → ")
	}
	return why + ": " + firstNonEmpty(rep.Reason, rep.NextAction, rep.Summary, "no reason given")
}

// models lists the models attempts ran on, in order, each once in a row;
// nil when none was named.
func models(as []Attempt) []string {
	var out []string
	for _, a := range as {
		if len(out) == 0 || out[len(out)-1] != a.Model {
			out = append(out, a.Model)
		}
	}
	if len(out) == 1 && out[0] == "" {
		return nil
	}
	return out
}

// dispatch queues a new dispatch of t. It starts from the branch's HEAD
// as it is: a fix lands on top of what other tasks committed since the
// task's commit, never below it.
func (d *decider) dispatch(t *TaskState, kind DispatchKind) *Dispatch {
	d.st.Seq++
	nd := Dispatch{
		N:      d.st.Seq,
		Ticket: TicketID(d.st.RunID, t.ID, d.st.Seq),
		Kind:   kind,
		Agent:  firstNonEmpty(d.task(t).Agent, d.st.Config.Agent),
		From:   d.obs.Head,
	}
	t.Dispatches = append(t.Dispatches, nd)
	t.Phase = PhaseRunning
	d.batch = append(d.batch, Job{Task: t.ID, Dispatch: nd, Base: t.Base})
	return &t.Dispatches[len(t.Dispatches)-1]
}

func (d *decider) review(t *TaskState) {
	var paths []string
	if files := d.task(t).Files; len(files) > 0 {
		// Tasks in progress at once never share a file: the task's files
		// and what it changed are its part of base..head.
		paths = slices.Clone(files)
		for _, c := range t.Changed {
			if !slices.Contains(paths, c) {
				paths = append(paths, c)
			}
		}
		slices.Sort(paths)
	}
	d.reviews = append(d.reviews, Action{Kind: ActReview, Task: t.ID, N: len(t.Reviews) + 1, Base: t.Base, Head: t.Head, Paths: paths})
}

// reviewing reads the review of the task's commit (PLAN-1).
func (d *decider) reviewing(t *TaskState) {
	n := len(t.Reviews) + 1
	var r *Review
	for i := range d.obs.Reviews {
		if rd := d.obs.Reviews[i]; rd.Task == t.ID && rd.Review.N == n {
			r = &rd.Review
			break
		}
	}
	if r == nil {
		d.review(t)
		return
	}
	t.Reviews = append(t.Reviews, *r)
	d.st.CostUSD += r.CostUSD
	d.st.Usage.Add(r.Usage)
	switch {
	case r.Passed():
		t.Phase, t.Status, t.EndedAt = PhaseDone, TaskDone, d.obs.Now
		if len(t.Concerns) > 0 {
			t.Status = TaskDoneWithConcerns
		}
		return
	case !r.Valid:
		// Fail closed: an answer that cannot be read approves nothing.
		d.block(t, "no valid review: "+r.Note, false)
		return
	}
	open := openIssues(*r)
	if t.Fixes >= MaxFixIterations {
		d.block(t, fmt.Sprintf("the review did not approve after %d fix-review iterations; open issues: %s", t.Fixes, issueList(open)), false)
		return
	}
	t.Fixes++
	d.dispatch(t, DispatchFix).Issues = open
	d.batch[len(d.batch)-1].Dispatch.Issues = open
}

// openIssues are the issues a fix must address: the important and
// critical ones, or, for a refusal without any, the refusal itself.
func openIssues(r Review) []Issue {
	var open []Issue
	for _, i := range r.Issues {
		if i.Blocking() {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		open = []Issue{{Severity: "important", Summary: "the reviewer did not approve: " + firstNonEmpty(r.Summary, "no reason given")}}
	}
	return open
}

// block ends t BLOCKED; work it committed is taken off the branch.
func (d *decider) block(t *TaskState, reason string, failed bool) {
	t.Phase, t.Status, t.EndedAt = PhaseBlocked, TaskBlocked, d.obs.Now
	t.BlockReason, t.Failed = text.Clip(text.OneLine(reason), 600), failed
	if t.Head != "" && t.Head != t.Base {
		t.Kept = "refs/converge/plan/" + d.st.RunID + "/" + t.ID
	}
}

// unwinds asks for, or records, the unwinding of blocked tasks' commits.
func (d *decider) unwinds() {
	for i := range d.st.Tasks {
		t := &d.st.Tasks[i]
		if t.Kept == "" || t.Undone {
			continue
		}
		if slices.Contains(d.obs.Kept, t.ID) {
			t.Undone = true
			continue
		}
		d.unwind = append(d.unwind, Action{Kind: ActUnwind, Task: t.ID, Base: t.Base, Head: t.Head, Ref: t.Kept, Paths: t.Changed})
	}
}

// skip marks SKIPPED every pending task with a dependency that was
// blocked or skipped; the rest of its group keeps going (AG-P1).
func (d *decider) skip() {
	for changed := true; changed; {
		changed = false
		for i := range d.st.Tasks {
			t := &d.st.Tasks[i]
			if t.Phase != PhasePending {
				continue
			}
			for _, dep := range d.task(t).DependsOn {
				ds := d.state(dep)
				if ds.Phase == PhaseBlocked || ds.Phase == PhaseSkipped {
					t.Phase, t.Status, t.EndedAt = PhaseSkipped, TaskSkipped, d.obs.Now
					t.BlockReason = fmt.Sprintf("depends on %s, which is %s", dep, ds.Status)
					changed = true
					break
				}
			}
		}
	}
}

func (d *decider) state(id string) *TaskState {
	for i := range d.st.Tasks {
		if d.st.Tasks[i].ID == id {
			return &d.st.Tasks[i]
		}
	}
	return nil
}

// startReady starts ready tasks in plan order (AG-P1).
func (d *decider) startReady() {
	var active []*Task
	for i := range d.st.Tasks {
		if p := d.st.Tasks[i].Phase; p == PhaseRunning || p == PhaseReview {
			active = append(active, d.task(&d.st.Tasks[i]))
		}
	}
	limit := max(d.st.Config.Parallel, 1)
	for i := range d.st.Tasks {
		t := &d.st.Tasks[i]
		if len(active) >= limit {
			return
		}
		if t.Phase != PhasePending || !d.ready(t) {
			continue
		}
		task := d.task(t)
		if slices.ContainsFunc(active, func(a *Task) bool { return Intersect(a.Files, task.Files) }) {
			// Tasks on intersecting files never run at once.
			continue
		}
		t.Base = d.obs.Head
		d.dispatch(t, DispatchFirst)
		active = append(active, task)
	}
}

// ready reports whether a pending task may start: its dependencies are
// DONE, every earlier group behind a barrier has ended, and in a
// sequential group every task listed before it has ended.
func (d *decider) ready(t *TaskState) bool {
	task := d.task(t)
	for _, dep := range task.DependsOn {
		if d.state(dep).Phase != PhaseDone {
			return false
		}
	}
	for g := 0; g < task.Group; g++ {
		if d.plan.Groups[g].Barrier && !d.groupEnded(g) {
			return false
		}
	}
	grp := d.plan.Groups[task.Group]
	if !grp.Parallel {
		for _, id := range grp.Tasks {
			if id == t.ID {
				break
			}
			if !d.state(id).Phase.ended() {
				return false
			}
		}
	}
	return true
}

func (d *decider) groupEnded(g int) bool {
	for _, id := range d.plan.Groups[g].Tasks {
		if !d.state(id).Phase.ended() {
			return false
		}
	}
	return true
}

// stuck skips pending tasks that nothing can start any more; a valid
// plan never gets here, and a run never ends with a task in limbo.
func (d *decider) stuck() {
	for i := range d.st.Tasks {
		if t := &d.st.Tasks[i]; t.Phase == PhasePending {
			t.Phase, t.Status, t.EndedAt = PhaseSkipped, TaskSkipped, d.obs.Now
			t.BlockReason = "it never became ready to run"
		}
	}
}

// finish ends the run once every task has ended.
func (d *decider) finish() (State, []Action, bool) {
	var done, blocked, skipped, failed []string
	for _, t := range d.st.Tasks {
		switch {
		case t.Failed:
			failed = append(failed, t.ID)
		case t.Phase == PhaseDone:
			done = append(done, t.ID)
		case t.Phase == PhaseBlocked:
			blocked = append(blocked, t.ID)
		default:
			skipped = append(skipped, t.ID)
		}
	}
	n := len(d.st.Tasks)
	msg := fmt.Sprintf("%d of %d task(s) done and approved by review", len(done), n)
	status := StatusComplete
	if len(blocked)+len(skipped)+len(failed) > 0 {
		status = StatusBlocked
		if len(blocked) > 0 {
			msg += "; blocked: " + strings.Join(blocked, ", ")
		}
		if len(skipped) > 0 {
			msg += "; skipped: " + strings.Join(skipped, ", ")
		}
	}
	if len(failed) > 0 {
		// An agent that cannot run is an error of the run (AG-T4).
		status = StatusFailed
		msg += "; an agent could not run for: " + strings.Join(failed, ", ")
	}
	d.st.Terminal = &Terminal{Status: status, ExitCode: status.ExitCode(), Message: msg, At: d.obs.Now}
	return *d.st, nil, true
}

// stop ends the run at a stop request: tasks in progress are BLOCKED
// (their unreviewed commits taken off the branch), pending ones SKIPPED.
// With a dispatch out, the tree first goes back to HEAD: a converge
// killed while it ran left its change there, uncommitted.
func (d *decider) stop() (State, []Action, bool) {
	var acts []Action
	for i := range d.st.Tasks {
		t := &d.st.Tasks[i]
		if t.Phase == PhaseRunning && len(acts) == 0 {
			acts = append(acts, Action{Kind: ActReset, Head: d.obs.Head})
		}
		switch t.Phase {
		case PhaseRunning, PhaseReview:
			if cur := t.current(); cur != nil && cur.Outcome == "" {
				cur.Outcome = OutcomeInterrupted
			}
			d.block(t, "stopped by a human before it finished", false)
		case PhasePending:
			t.Phase, t.Status, t.EndedAt = PhaseSkipped, TaskSkipped, d.obs.Now
			t.BlockReason = "the run was stopped by a human"
		}
	}
	d.unwinds()
	d.st.Terminal = &Terminal{Status: StatusBlocked, ExitCode: StatusBlocked.ExitCode(), Message: "stopped by a human (converge stop, or a signal); tasks in progress were not finished", At: d.obs.Now}
	return *d.st, append(acts, d.unwind...), true
}

func addConcern(t *TaskState, c string) {
	c = text.Clip(text.OneLine(c), 500)
	if c != "" && !slices.Contains(t.Concerns, c) {
		t.Concerns = append(t.Concerns, c)
	}
}

func issueList(is []Issue) string {
	var parts []string
	for _, i := range is {
		s := i.Severity + ": " + text.OneLine(i.Summary)
		if i.File != "" {
			s += " (" + i.File + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if s := strings.TrimSpace(x); s != "" {
			return s
		}
	}
	return ""
}
