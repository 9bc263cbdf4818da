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
// AG-E1: more context once, exactly what was asked, then stronger
// models; agent.Runner.Dispatch) and ends DONE, DONE_WITH_CONCERNS or
// BLOCKED. A done task with concerns has each judged first (the judge, or
// the fail-closed RuleVerdict): a critical one stops it BLOCKED, others
// are recorded. Then it goes to review; a BLOCKED one (a concern marked
// critical included) ends so, unless its implementer found it too large
// (TooLargePrefix): then the judge splits it into parts that run in its
// place, once. A review with an important or critical issue sends the
// task back to its implementer, at most MaxFixIterations times; minor
// issues are recorded (PLAN-1); a task still not approved after them is
// NOT_APPROVED: its open issues are recorded, its commits stay on the
// branch, and the run goes on, its dependents too (with a concern saying
// so). A blocked task's commits are taken off the branch, its dependents
// are SKIPPED, the rest keeps going. Then it starts the tasks that are
// ready (AG-P1): dependencies ended DONE or NOT_APPROVED, earlier
// barriers passed, earlier tasks of a sequential group ended, no file in
// common with a task in progress, at most Config.Parallel in progress.
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
		case PhaseJudge:
			d.judging(t)
		case PhaseSplitting:
			d.splitting(t)
		}
	}
	d.addTasks()
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

	unwind []Action
	// reviews are the read-only agent acts: reviews, judgments, splits.
	reviews []Action
	batch   []Job
	// added are the parts this step's splits add.
	added []addedTasks
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
	var judge []string
	for _, c := range rep.Concerns {
		if c = clipConcern(c); c != "" && !slices.ContainsFunc(t.Judged, func(v ConcernVerdict) bool { return v.Concern == c }) && !slices.Contains(judge, c) {
			judge = append(judge, c)
		}
		addConcern(t, c)
	}
	if len(rep.Outside) > 0 {
		addConcern(t, "changed files outside its declared files: "+strings.Join(rep.Outside, ", "))
	}
	if rep.Implementer == TaskDone || rep.Implementer == TaskDoneWithConcerns {
		t.Head = rep.Head
		if len(judge) > 0 {
			d.judge(t, judge)
			return
		}
		t.Phase = PhaseReview
		d.review(t)
		return
	}
	if why, ok := TooLarge(rep.Reason); ok && rep.Failure == "" {
		d.tooLarge(t, cur, why)
		return
	}
	d.block(t, blockReason(rep), false)
}

// judge has the implementer's concerns judged before the review (the
// source: the orchestrator reads each concern and evaluates it): by the
// judge when the run has one, else by the fail-closed rule at once.
func (d *decider) judge(t *TaskState, concerns []string) {
	t.Judgments++
	t.Phase = PhaseJudge
	if d.st.Config.Judge == "" {
		d.judged(t, ruleVerdicts(concerns))
		return
	}
	a := d.reviewAction(t, ActJudge)
	a.N, a.Concerns = t.Judgments, concerns
	d.reviews = append(d.reviews, a)
}

// judging reads the judgment of the task's concerns.
func (d *decider) judging(t *TaskState) {
	var jd *JudgeDone
	for i := range d.obs.Judged {
		if j := d.obs.Judged[i]; j.Task == t.ID && j.N == t.Judgments {
			jd = &j
			break
		}
	}
	if jd == nil {
		// Asked again after a restart: the answer never reached the state.
		t.Judgments--
		d.judge(t, d.unjudged(t))
		return
	}
	d.st.CostUSD += jd.CostUSD
	d.st.Usage.Add(jd.Usage)
	t.Usage.Add(jd.Usage)
	d.judged(t, jd.Verdicts)
}

// unjudged are the task's concerns from its implementer that no verdict
// covers yet: what a judgment in flight was asked about.
func (d *decider) unjudged(t *TaskState) []string {
	var out []string
	if cur := t.current(); cur != nil && cur.Report != nil {
		for _, c := range cur.Report.Concerns {
			if c = clipConcern(c); c != "" && !slices.ContainsFunc(t.Judged, func(v ConcernVerdict) bool { return v.Concern == c }) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// judged applies verdicts: a critical concern stops the task BLOCKED (its
// commits taken off the branch), any other is recorded and the task goes
// to its review.
func (d *decider) judged(t *TaskState, verdicts []ConcernVerdict) {
	t.Judged = append(t.Judged, verdicts...)
	for _, v := range verdicts {
		if v.Verdict == VerdictCritical {
			d.block(t, fmt.Sprintf("the orchestrator judged a concern critical (%s): %s — %s", v.By, v.Concern, firstNonEmpty(v.Reason, "no reason given")), false)
			return
		}
	}
	t.Phase = PhaseReview
	d.review(t)
}

// tooLarge acts on an implementer that found its task too large for one
// run: a task that has no commit yet and is no part of another is split
// by the judge; otherwise, or without a judge, it is BLOCKED (a part is
// never split again: the splitting is bounded).
func (d *decider) tooLarge(t *TaskState, cur *Dispatch, why string) {
	t.TooLarge = why
	task := d.task(t)
	switch {
	case task.SplitFrom != "":
		d.block(t, fmt.Sprintf("too large for one run even as part of %s, and a part is never split again: %s", task.SplitFrom, why), false)
	case cur.Kind == DispatchFix || (t.Head != "" && t.Head != t.Base):
		d.block(t, "too large for one run, found while fixing its review's issues; a task is split only before its first commit: "+why, false)
	case d.st.Config.Judge == "":
		d.block(t, "too large for one run, and the run has no judge to split it: "+why, false)
	default:
		t.Phase = PhaseSplitting
		d.reviews = append(d.reviews, Action{Kind: ActSplit, Task: t.ID, Reason: why})
	}
}

// splitting reads the split of a task too large for one run.
func (d *decider) splitting(t *TaskState) {
	var sd *SplitDone
	for i := range d.obs.Splits {
		if s := d.obs.Splits[i]; s.Task == t.ID {
			sd = &s
			break
		}
	}
	if sd == nil {
		d.reviews = append(d.reviews, Action{Kind: ActSplit, Task: t.ID, Reason: t.TooLarge})
		return
	}
	d.st.CostUSD += sd.CostUSD
	d.st.Usage.Add(sd.Usage)
	t.Usage.Add(sd.Usage)
	if len(sd.Parts) < MinParts {
		// Fail closed: no valid split runs nothing of it.
		d.block(t, fmt.Sprintf("too large for one run (%s), and it could not be split: %s", t.TooLarge, firstNonEmpty(sd.Note, "no parts")), false)
		return
	}
	d.split(t, sd.Parts)
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
	d.reviews = append(d.reviews, d.reviewAction(t, ActReview))
}

// reviewAction is an act on the task's diff Base..Head (a review, a
// judgment of concerns), limited to its paths.
func (d *decider) reviewAction(t *TaskState, kind ActKind) Action {
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
	return Action{Kind: kind, Task: t.ID, N: len(t.Reviews) + 1, Base: t.Base, Head: t.Head, Paths: paths}
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
		d.notApproved(t, open)
		return
	}
	t.Fixes++
	d.dispatch(t, DispatchFix).Issues = open
	d.batch[len(d.batch)-1].Dispatch.Issues = open
}

// notApproved ends a task the review did not approve after
// MaxFixIterations as the source says: its open issues are recorded and
// the run goes on. Its commits stay on the branch (the work is kept for
// a human to finish, as the report says, not thrown away), and its
// dependents run on top of it, each with a concern saying so; it is never
// counted done, and the run does not end complete (fail closed).
func (d *decider) notApproved(t *TaskState, open []Issue) {
	t.Phase, t.Status, t.EndedAt = PhaseNotApproved, TaskNotApproved, d.obs.Now
	t.OpenIssues = open
}

// notApprovedNote says what a NOT_APPROVED task left.
func notApprovedNote(t TaskState) string {
	return fmt.Sprintf("not approved after %d fix-review iterations; its commits stay on the branch at %s; open issues: %s", t.Fixes, text.ShortSHA(t.Head), issueList(t.OpenIssues))
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
		if d.st.Tasks[i].Phase.active() {
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
		for _, dep := range task.DependsOn {
			if ds := d.state(dep); ds.Phase == PhaseNotApproved {
				addConcern(t, fmt.Sprintf("it builds on %s, which the review did not approve (%d open issue(s), in %s's entry)", dep, len(ds.OpenIssues), dep))
			}
		}
		d.dispatch(t, DispatchFirst)
		active = append(active, task)
	}
}

// ready reports whether a pending task may start: its dependencies
// ended DONE or NOT_APPROVED (whose commits are on the branch), every
// earlier group behind a barrier has ended, and in a sequential group
// every task listed before it has ended.
func (d *decider) ready(t *TaskState) bool {
	task := d.task(t)
	for _, dep := range task.DependsOn {
		if p := d.state(dep).Phase; p != PhaseDone && p != PhaseNotApproved {
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
	var done, blocked, skipped, failed, unapproved, split []string
	for _, t := range d.st.Tasks {
		switch {
		case t.Failed:
			failed = append(failed, t.ID)
		case t.Phase == PhaseDone:
			done = append(done, t.ID)
		case t.Phase == PhaseBlocked:
			blocked = append(blocked, t.ID)
		case t.Phase == PhaseNotApproved:
			unapproved = append(unapproved, t.ID)
		case t.Phase == PhaseSplit:
			split = append(split, t.ID+" into "+strings.Join(t.SplitInto, ", "))
		default:
			skipped = append(skipped, t.ID)
		}
	}
	// A task split is done by its parts, counted in its place.
	n := len(d.st.Tasks) - len(split)
	msg := fmt.Sprintf("%d of %d task(s) done and approved by review", len(done), n)
	if len(split) > 0 {
		msg += "; split: " + strings.Join(split, "; ")
	}
	status := StatusComplete
	if len(blocked)+len(skipped)+len(failed)+len(unapproved) > 0 {
		status = StatusBlocked
		if len(unapproved) > 0 {
			msg += fmt.Sprintf("; not approved after %d fix-review iterations (commits on the branch, open issues in the report): %s", MaxFixIterations, strings.Join(unapproved, ", "))
		}
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
		case PhaseRunning, PhaseReview, PhaseJudge, PhaseSplitting:
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
	c = clipConcern(c)
	if c != "" && !slices.Contains(t.Concerns, c) {
		t.Concerns = append(t.Concerns, c)
	}
}

// clipConcern is a concern as the state keeps it: one line, bounded.
func clipConcern(c string) string { return text.Clip(text.OneLine(c), 500) }

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
