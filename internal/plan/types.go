package plan

import (
	"fmt"
	"slices"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/exitcode"
)

// Kind is the run kind of a plan run in the store.
const Kind = "plan"

// TrailerKey is the trailer of a task's commit: Converge-Task:
// <run>.task.<id> (IF-4).
const TrailerKey = "Converge-Task"

// MaxFixIterations is how many times a task goes back to its implementer
// with a review's issues; a task still not approved after them is
// NOT_APPROVED: its open issues are recorded and the run goes on (PLAN-1).
const MaxFixIterations = 2

// Status is how a plan run ended.
type Status string

const (
	// StatusComplete: every task is DONE or DONE_WITH_CONCERNS.
	StatusComplete Status = "complete"
	// StatusBlocked: some task is BLOCKED (and its dependents SKIPPED)
	// or NOT_APPROVED, or a human stopped the run; the rest ran.
	StatusBlocked Status = "blocked"
	// StatusFailed: an agent could not run (AG-T4), or a fault ended the
	// run.
	StatusFailed Status = "failed"
)

// OutcomeInterrupted is the outcome of a dispatch whose converge died
// (or was stopped) while it ran.
const OutcomeInterrupted = "interrupted"

// ExitCode is the status's IF-1 exit code.
func (s Status) ExitCode() exitcode.Code { return exitcode.For(exitcode.Plan, string(s)) }

// Implementer statuses of a task in the report (AG-T2), SKIPPED for a
// task whose dependency did not finish, NOT_APPROVED for a task the
// review did not approve after MaxFixIterations (its commits stay on the
// branch, its open issues recorded; never counted done), and SPLIT for a
// task its implementer found too large, done by its parts instead.
const (
	TaskDone             = "DONE"
	TaskDoneWithConcerns = "DONE_WITH_CONCERNS"
	TaskNeedsContext     = "NEEDS_CONTEXT"
	TaskBlocked          = "BLOCKED"
	TaskSkipped          = "SKIPPED"
	TaskNotApproved      = "NOT_APPROVED"
	TaskSplit            = "SPLIT"
)

// Phase is where a task stands in the run.
type Phase string

const (
	PhasePending Phase = "pending"
	// PhaseRunning: a dispatch is out; its outcome is read from its
	// ticket.
	PhaseRunning Phase = "running"
	// PhaseReview: its commit waits for the review.
	PhaseReview Phase = "review"
	// PhaseJudge: its commit waits for the judgment of the concerns its
	// implementer reported, before the review.
	PhaseJudge Phase = "judge"
	// PhaseSplitting: its implementer found it too large; it waits for
	// its parts.
	PhaseSplitting Phase = "splitting"
	PhaseDone      Phase = "done"
	PhaseBlocked   Phase = "blocked"
	PhaseSkipped   Phase = "skipped"
	// PhaseNotApproved: ended without the review's approval; its commits
	// stay on the branch.
	PhaseNotApproved Phase = "not-approved"
	// PhaseSplit: ended by being split; its parts are tasks of their own.
	PhaseSplit Phase = "split"
)

// ended reports whether a task will not run again.
func (p Phase) ended() bool {
	switch p {
	case PhaseDone, PhaseBlocked, PhaseSkipped, PhaseNotApproved, PhaseSplit:
		return true
	}
	return false
}

// active reports whether a task is in progress: a dispatch, a judgment,
// a review or a split is out for it.
func (p Phase) active() bool {
	return p == PhaseRunning || p == PhaseReview || p == PhaseJudge || p == PhaseSplitting
}

// DispatchKind says why an implementer was dispatched. A dispatch runs
// the status protocol whole (agent.Runner.Dispatch): its re-dispatches
// with more context and with stronger models (AG-T2, AG-E1) are its
// attempts.
type DispatchKind string

const (
	// DispatchFirst is the task's first dispatch.
	DispatchFirst DispatchKind = "first"
	// DispatchFix sends a review's issues back to the implementer.
	DispatchFix DispatchKind = "fix"
	// DispatchAgain hands out again a dispatch whose converge died while
	// it ran; it is no retry of the task.
	DispatchAgain DispatchKind = "again"
)

// Issue is one point of a review (PLAN-1).
type Issue struct {
	Severity string `json:"severity"` // critical, important, minor
	Summary  string `json:"summary"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
}

// Blocking reports whether the issue sends the task back: important and
// critical ones do, minor ones are recorded.
func (i Issue) Blocking() bool { return i.Severity != "minor" }

// Attempt is one run of a dispatch on one model (AG-T2, AG-E1).
type Attempt struct {
	Model string `json:"model,omitempty"`
	// Context: it carried the context added after NEEDS_CONTEXT.
	Context    bool   `json:"context,omitempty"`
	Status     string `json:"status"`
	Reason     string `json:"reason,omitempty"`
	Extensions int    `json:"extensions,omitempty"`
}

// Report is what one implementer dispatch reported and did; it is stored
// in the dispatch's ticket.
type Report struct {
	Agent string `json:"agent"`
	// Status is the last attempt's IF-5 status; Implementer the status
	// the dispatch ended with: DONE, DONE_WITH_CONCERNS or BLOCKED.
	Status      string    `json:"status"`
	Implementer string    `json:"implementer"`
	Attempts    []Attempt `json:"attempts,omitempty"`
	Summary     string    `json:"summary,omitempty"`
	NextAction  string    `json:"next_action,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Concerns    []string  `json:"concerns,omitempty"`
	Claimed     []string  `json:"files_claimed,omitempty"`
	// Failure: the agent could not run (AG-T4), after its retry.
	Failure string `json:"failure,omitempty"`
	// From is the commit the dispatch started from, Head the commit after
	// it: a new commit for a DONE task (converge commits it if the agent
	// did not), From otherwise (the change is undone).
	From string `json:"from"`
	Head string `json:"head"`
	// Changed are the paths the dispatch's commits changed: From..Head.
	Changed []string `json:"changed,omitempty"`
	// Outside are changed paths outside the task's declared files.
	Outside  []string      `json:"outside,omitempty"`
	CostUSD  float64       `json:"cost_usd,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// Usage is what every attempt of the dispatch reported consuming.
	Usage agent.Usage `json:"usage,omitzero"`
}

// Dispatch is one implementer run of a task: ticket <run>.task.<id>.NN.
type Dispatch struct {
	N      int          `json:"n"`
	Ticket string       `json:"ticket"`
	Kind   DispatchKind `json:"kind"`
	Agent  string       `json:"agent"`
	// From is the commit it starts from: the branch's HEAD when it was
	// dispatched.
	From string `json:"from"`
	// Issues are the review's open issues a fix is asked to address.
	Issues []Issue `json:"issues,omitempty"`
	// Outcome is "" while in flight, then the implementer status, or
	// OutcomeInterrupted.
	Outcome string  `json:"outcome,omitempty"`
	Report  *Report `json:"report,omitempty"`
}

// Review is one combined spec and quality review of a task's diff.
type Review struct {
	N    int    `json:"n"`
	Base string `json:"base"`
	Head string `json:"head"`
	// Valid: the reviewer's answer was read by its schema; an invalid
	// answer is never an approval (fail closed).
	Valid    bool    `json:"valid"`
	Approved bool    `json:"approved"`
	Issues   []Issue `json:"issues"`
	Summary  string  `json:"summary,omitempty"`
	// Note says why an answer was not valid.
	Note    string  `json:"note,omitempty"`
	Agent   string  `json:"agent,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Usage is what the reviewer's runs reported consuming.
	Usage agent.Usage `json:"usage,omitzero"`
}

// Passed reports whether the review lets the task finish: a valid answer
// with no important or critical issue, that approved or found only
// minor ones.
func (r Review) Passed() bool {
	if !r.Valid {
		return false
	}
	for _, i := range r.Issues {
		if i.Blocking() {
			return false
		}
	}
	return r.Approved || len(r.Issues) > 0
}

// TaskState is a task as the run tracks it.
type TaskState struct {
	ID    string `json:"id"`
	Phase Phase  `json:"phase"`
	// Status is the task's status for the report once it ended: DONE,
	// DONE_WITH_CONCERNS, BLOCKED or SKIPPED.
	Status string `json:"status,omitempty"`
	// Base is HEAD when the task started; Head its commit.
	Base       string     `json:"base,omitempty"`
	Head       string     `json:"head,omitempty"`
	Dispatches []Dispatch `json:"dispatches"`
	Reviews    []Review   `json:"reviews"`
	// Fixes counts the fix-review iterations (at most MaxFixIterations).
	Fixes    int      `json:"fixes"`
	Concerns []string `json:"concerns,omitempty"`
	// Judged are the orchestrator's verdicts on the concerns its
	// implementer reported (DONE_WITH_CONCERNS), in order; Judgments
	// counts the judgments asked for.
	Judged    []ConcernVerdict `json:"judged,omitempty"`
	Judgments int              `json:"judgments,omitempty"`
	// OpenIssues are the last review's open issues of a NOT_APPROVED task.
	OpenIssues []Issue `json:"open_issues,omitempty"`
	// Usage is what the judge's runs on the task (judgments, a split)
	// reported consuming.
	Usage agent.Usage `json:"usage,omitzero"`
	// TooLarge is why its implementer found it too large, once it did;
	// SplitInto are its parts once it was split.
	TooLarge    string   `json:"too_large,omitempty"`
	SplitInto   []string `json:"split_into,omitempty"`
	BlockReason string   `json:"block_reason,omitempty"`
	// Failed: the task is blocked because an agent could not run.
	Failed  bool     `json:"failed,omitempty"`
	Changed []string `json:"changed,omitempty"`
	// Kept is the ref that keeps the work of a task blocked after it
	// committed, taken off the branch; Undone once HEAD is back at Base.
	Kept    string    `json:"kept,omitempty"`
	Undone  bool      `json:"undone,omitempty"`
	EndedAt time.Time `json:"ended_at,omitzero"`
}

// current is the task's last dispatch, or nil.
func (t *TaskState) current() *Dispatch {
	if len(t.Dispatches) == 0 {
		return nil
	}
	return &t.Dispatches[len(t.Dispatches)-1]
}

// Config is a run's frozen input.
type Config struct {
	Plan     Plan   `json:"plan"`
	PlanFile string `json:"plan_file"`
	// Agent and Reviewer name the implementer and reviewer agents.
	Agent    string `json:"agent"`
	Reviewer string `json:"reviewer"`
	// Parallel is how many tasks may be in progress at once: 1 while
	// tasks run in the repository's own work tree.
	Parallel int `json:"parallel"`
	// AgentBudget time-boxes each agent run (AG-T1).
	AgentBudget time.Duration `json:"agent_budget,omitempty"`
	// Judge names the agent that judges an implementer's concerns and
	// splits a task too large for one run (the reviewer, read-only);
	// "" means none: concerns are judged by the fail-closed rule
	// (RuleVerdict) and a task too large is BLOCKED.
	Judge string `json:"judge,omitempty"`
}

// Terminal is how the run ended.
type Terminal struct {
	Status   Status        `json:"status"`
	ExitCode exitcode.Code `json:"exit_code"`
	Message  string        `json:"message"`
	At       time.Time     `json:"at"`
}

// State is a run's persisted state.
type State struct {
	RunID     string      `json:"run_id"`
	Config    Config      `json:"config"`
	StartedAt time.Time   `json:"started_at,omitzero"`
	StartHead string      `json:"start_head,omitempty"`
	Tasks     []TaskState `json:"tasks"`
	// Seq numbers the dispatches, for their tickets.
	Seq     int     `json:"seq"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Usage is what the run's implementers and reviewers reported
	// consuming (PR-M5).
	Usage    agent.Usage `json:"usage,omitzero"`
	Terminal *Terminal   `json:"terminal,omitempty"`
}

// NewState is the state a new run starts from: every task pending.
func NewState(runID string, cfg Config) State {
	st := State{RunID: runID, Config: cfg, Tasks: []TaskState{}}
	for _, t := range cfg.Plan.Tasks {
		st.Tasks = append(st.Tasks, TaskState{ID: t.ID, Phase: PhasePending, Dispatches: []Dispatch{}, Reviews: []Review{}})
	}
	return st
}

// TicketID names dispatch n of task id in run.
func TicketID(run, id string, n int) string { return fmt.Sprintf("%s.task.%s.%02d", run, id, n) }

// TaskRef names a task in trailers and refs: <run>.task.<id>.
func TaskRef(run, id string) string { return run + ".task." + id }

// Resumable reports whether a stored state can go on.
func Resumable(s State) bool { return s.Terminal == nil && s.RunID != "" }

// StatusOf is the run's status in the store.
func StatusOf(s State) string {
	if s.Terminal != nil {
		return string(s.Terminal.Status)
	}
	return "running"
}

func (s State) clone() State {
	n := s
	n.Tasks = make([]TaskState, len(s.Tasks))
	for i, t := range s.Tasks {
		t.Dispatches = slices.Clone(t.Dispatches)
		t.Reviews = slices.Clone(t.Reviews)
		t.Concerns = slices.Clone(t.Concerns)
		t.Judged = slices.Clone(t.Judged)
		t.OpenIssues = slices.Clone(t.OpenIssues)
		t.SplitInto = slices.Clone(t.SplitInto)
		n.Tasks[i] = t
	}
	return n
}

// Observation is what Observe read of the world.
type Observation struct {
	Now  time.Time
	Head string
	// Tickets are the in-flight dispatches' tickets as the store holds
	// them, by ticket id; absent when never created.
	Tickets map[string]TicketView
	// Reviews are the reviews the acts since the last step ran.
	Reviews []ReviewDone
	// Kept are the blocked tasks whose work the acts took off the branch.
	Kept []string
	// Judged are the concern judgments, Splits the splits, the acts since
	// the last step ran.
	Judged        []JudgeDone
	Splits        []SplitDone
	StopRequested bool
}

// TicketView is a ticket as Decide needs it.
type TicketView struct {
	Status string  // store.Ticket* statuses
	Report *Report // the stored report of a finished ticket
}

// ReviewDone is a review an act ran.
type ReviewDone struct {
	Task   string `json:"task"`
	Review Review `json:"review"`
}

// ActKind names an action.
type ActKind string

const (
	// ActDispatch runs a batch of implementer dispatches: each creates and
	// claims its ticket, resets the tree to From, runs the agent, commits
	// a DONE change (or undoes any other) and stores its report.
	ActDispatch ActKind = "dispatch"
	// ActReview runs the reviewer on a task's diff Base..Head.
	ActReview ActKind = "review"
	// ActUnwind takes a blocked task's commit off the branch, keeping it
	// at a ref.
	ActUnwind ActKind = "unwind"
	// ActReset puts the work tree back at Head, dropping what a dispatch
	// a stop cut short left uncommitted (its converge may be gone).
	ActReset ActKind = "reset"
	// ActJudge has the judge give its verdict on each of Concerns, with
	// the task's diff Base..Head.
	ActJudge ActKind = "judge"
	// ActSplit has the judge split a task too large for one run into
	// parts (Reason: why its implementer found it too large).
	ActSplit ActKind = "split"
)

// Job is one dispatch of a batch.
type Job struct {
	Task     string   `json:"task"`
	Dispatch Dispatch `json:"dispatch"`
	// Base is the task's base commit, for the paths it changed.
	Base string `json:"base"`
}

// Action is one thing Decide asks Act to do.
type Action struct {
	Kind ActKind
	Jobs []Job // ActDispatch
	Task string
	// Review: N, Base and Head of the review; Unwind: Base to go back
	// to, Head to keep at Ref; Reset: Head to put the tree back at.
	N          int
	Base, Head string
	Ref        string
	// Paths limit a review's diff to the task's files and what it
	// changed (other tasks may have committed in between); an unwind
	// restores them.
	Paths []string
	// Concerns are what a judgment judges; Reason why a task to split is
	// too large.
	Concerns []string
	Reason   string
}

// Wait: the plan executor never waits; every step acts or ends.
func (a Action) Wait() (time.Duration, bool) { return 0, false }

// ActResult is what one act reports to the next observation.
type ActResult struct {
	Review *ReviewDone
	Kept   string
	Judged *JudgeDone
	Split  *SplitDone
}
