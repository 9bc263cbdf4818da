package agent

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// What every orchestrator of implementer agents shares (the PR loop's
// fixers, a plan's tasks): the retry of a run that could not run (AG-T4),
// the extensions of a run that ended partial (AG-T1), and the implementer
// status protocol with its model escalation ladder (AG-T2, AG-E1).

// CriticalPrefix marks a critical concern (AG-T2): a DONE or
// DONE_WITH_CONCERNS record with a concern that starts with it (after
// spaces, in any letter case) is BLOCKED, with that concern as its reason.
// The source document has the orchestrator stop a task as BLOCKED on a
// critical concern; the agent is the one who can tell, so it marks it.
// converge's own concerns (a stop at the budget, a non-zero exit) never
// start with it.
const CriticalPrefix = "critical:"

// The attempts a run gets when it could not run (AG-T4: retried once).
const runAttempts = 2

// Runner runs tasks on one agent by the rules every caller shares. The
// zero Reset and Logf do nothing.
type Runner struct {
	Agent Agent
	// Reset puts the work tree back where the task started, before a run
	// is retried (AG-T4) or a task re-dispatched (AG-T2): a new run never
	// sees what a failed or abandoned one left. Extensions (AG-T1) keep
	// the tree, as they continue the same run.
	Reset func(ctx context.Context) error
	// Logf reports retries, extensions and re-dispatches as they happen.
	Logf func(format string, args ...any)
	// Settled, when set, ends a dispatch at a record not done that it
	// accepts, without more context or a stronger model: the caller acts
	// on it itself (a plan splits a task its implementer found too large).
	Settled func(rec StatusRecord) bool
}

func (r Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

func (r Runner) reset(ctx context.Context) error {
	if r.Reset == nil {
		return nil
	}
	return r.Reset(ctx)
}

// Run runs t once, and once more from a reset tree when the agent could
// not run: an error, no valid status record, or a stop at the budget
// without one (AG-T4). A second failure is returned as a *RunFailure, and
// so is a first one that another run cannot mend (RunFailure.Retryable:
// the CLI's credentials failed, or its model endpoint stayed down for the
// whole retry bound); a cancelled ctx as its error, the agent not blamed.
// A result's Usage is what every attempt consumed: a failed attempt's
// tokens are paid for too.
func (r Runner) Run(ctx context.Context, t Task) (Result, error) {
	name := r.Agent.Name()
	var (
		fail  *RunFailure
		spent Usage
	)
	for attempt := 1; attempt <= runAttempts; attempt++ {
		if attempt > 1 {
			if err := r.reset(ctx); err != nil {
				return Result{}, err
			}
		}
		res, err := r.Agent.Run(ctx, t)
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("agent %s: %w", name, ctx.Err())
		}
		spent.AddRun(res.Usage)
		if fail = FailureOf(name, res, err); fail == nil {
			res.Usage = spent
			return res, nil
		}
		r.logf("agent %s could not run (attempt %d of %d): %s", name, attempt, runAttempts, fail.What)
		if !fail.Retryable() {
			break
		}
	}
	// The failed attempts were paid for too: their usage comes back with
	// the failure.
	return Result{Usage: spent}, fail
}

// RunExtended is Run, then Run again on the tree the run left while its
// record earns an extension (AG-T1: partial with a concrete next action,
// at most MaxExtensions times). The result is the last run's, with the
// usage of all of them; n is the extensions granted.
func (r Runner) RunExtended(ctx context.Context, t Task) (res Result, n int, err error) {
	res, err = r.Run(ctx, t)
	usage := res.Usage
	for err == nil {
		next, ok := t.Extended(res.Record)
		if !ok {
			break
		}
		r.logf("agent %s stopped partway (%s); extending by %s (extension %d of %d)",
			r.Agent.Name(), text.Clip(res.Record.NextAction, 120), next.Budget, next.Extension, MaxExtensions)
		t = next
		res, err = r.Run(ctx, t)
		usage.Add(res.Usage)
	}
	res.Usage = usage
	return res, t.Extension, err
}

// Attempt is one dispatch of a task (AG-T2, AG-E1): a run with its
// extensions, on one model.
type Attempt struct {
	Model      string // the task's model; "" is the backend's own
	Context    bool   // the task carried the context added after NEEDS_CONTEXT
	Status     string // the implementer status it counts as (JudgeRecord)
	Reason     string // why it was not done; empty for DONE
	Extensions int    // AG-T1 extensions the run had
	Usage      Usage
}

// Dispatched is the end of a dispatch: the last attempt's run, the
// status the task ends with, and every attempt, for reports.
type Dispatched struct {
	// Result is the last attempt's run. A task ending BLOCKED on a
	// critical concern has its record and complete outcomes turned
	// blocked; otherwise the outcomes are the backend's, so a run that
	// addressed some findings of its task keeps them.
	Result Result
	// Status is DONE, DONE_WITH_CONCERNS or BLOCKED; a record that ended
	// partial after its extensions is BLOCKED too, its next action the
	// reason (AG-T1: the caller narrows the input).
	Status string
	// Reason says why the task is BLOCKED.
	Reason string
	// Concerns are the last attempt's, recorded whatever the status.
	Concerns []string
	Attempts []Attempt
	// Usage is what every attempt consumed.
	Usage Usage
}

// Done reports whether the task ended DONE or DONE_WITH_CONCERNS.
func (d Dispatched) Done() bool { return d.Status == ImplDone || d.Status == ImplDoneWithConcerns }

// Retries is how often the task was re-dispatched after its first
// attempt: with more context, with a stronger model.
func (d Dispatched) Retries() int { return max(0, len(d.Attempts)-1) }

// JudgeRecord is the implementer status a valid record counts as (AG-T2)
// and, when that is not DONE, why. The record's implementer_status when
// it has one, else its status: complete is DONE (DONE_WITH_CONCERNS with
// concerns), blocked is BLOCKED. A critical concern (CriticalPrefix)
// makes any record BLOCKED. A partial record is "" with its next action:
// the time-box ran out, which no status of AG-T2 says (AG-T1).
func JudgeRecord(rec StatusRecord) (status, reason string) {
	if c, ok := CriticalConcern(rec.Concerns); ok {
		return ImplBlocked, c
	}
	status = rec.ImplementerStatus
	if status == "" {
		switch rec.Status {
		case StatusComplete:
			status = ImplDone
			if len(rec.Concerns) > 0 {
				status = ImplDoneWithConcerns
			}
		case StatusBlocked:
			status = ImplBlocked
		default:
			return "", NotDoneReason(rec)
		}
	}
	if status == ImplDone || status == ImplDoneWithConcerns {
		return status, ""
	}
	return status, NotDoneReason(rec)
}

// CriticalConcern is the first concern marked critical (CriticalPrefix).
func CriticalConcern(concerns []string) (string, bool) {
	for _, c := range concerns {
		t := strings.TrimSpace(c)
		if len(t) >= len(CriticalPrefix) && strings.EqualFold(t[:len(CriticalPrefix)], CriticalPrefix) {
			return t, true
		}
	}
	return "", false
}

// NotDoneReason words why rec is not done for a hand-off a human can act
// on: its reason, else its next action, else its summary — never empty.
func NotDoneReason(rec StatusRecord) string {
	for _, s := range []string{rec.Reason, rec.NextAction, rec.Summary} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return fmt.Sprintf("the agent reported %s without a reason", cmp.Or(rec.ImplementerStatus, string(rec.Status), "no status"))
}

// step is what an orchestrator does after an attempt (AG-T2, AG-E1).
type step int

const (
	stepStop     step = iota // the task ends with the last attempt's status
	stepContext              // re-dispatch on the same model with more context
	stepEscalate             // re-dispatch on the next model of the ladder
)

// nextStep decides what follows an attempt that the record judged
// status (JudgeRecord), given whether the task already had added context,
// whether the caller has some to add, and how many models of the ladder
// are left above the current one. It is the source document's
// orchestrator, with the agent telling a missing context (NEEDS_CONTEXT)
// from a task beyond it (BLOCKED), as converge cannot evaluate a blocker
// itself:
//
//   - DONE, DONE_WITH_CONCERNS, a critical concern, a partial run: stop.
//   - The first NEEDS_CONTEXT, when there is context to add: the same model
//     again with it, once.
//   - Any other BLOCKED or NEEDS_CONTEXT: the next model of the ladder.
//   - No model left: stop; the last failure is the task's BLOCKED.
func nextStep(status string, critical, hadContext, haveContext bool, modelsLeft int) step {
	switch {
	case critical, status != ImplBlocked && status != ImplNeedsContext:
		return stepStop
	case status == ImplNeedsContext && !hadContext && haveContext:
		return stepContext
	case modelsLeft > 0:
		return stepEscalate
	}
	return stepStop
}

// Dispatch runs t as an implementer task by the status protocol (AG-T2)
// and the model escalation ladder (AG-E1): each attempt is RunExtended on
// one model, and its record decides what follows (see nextStep). ladder
// lists the agent's models, the default first; nil or empty means the
// backend's one configured model. more, called once after the first
// NEEDS_CONTEXT with its record, the tree already reset, returns the
// context to add (Task.Context, quoted as data); nil or "" means there is
// none, and the task climbs the ladder instead. Every re-dispatch starts
// from a reset tree.
//
// The error is an agent that could not run even on its retry
// (*RunFailure, AG-T4) or a cancelled ctx: no status of the task.
func (r Runner) Dispatch(ctx context.Context, t Task, ladder []string, more func(rec StatusRecord) string) (Dispatched, error) {
	if len(ladder) == 0 {
		ladder = []string{t.Model}
	}
	var d Dispatched
	rung := 0
	t.Model = ladder[0]
	for {
		res, ext, err := r.RunExtended(ctx, t)
		d.Usage.Add(res.Usage)
		if err != nil {
			return d, err
		}
		status, reason := JudgeRecord(res.Record)
		d.Attempts = append(d.Attempts, Attempt{Model: t.Model, Context: t.Context != "",
			Status: cmp.Or(status, ImplBlocked), Reason: reason, Extensions: ext, Usage: res.Usage})
		d.Result, d.Status, d.Reason, d.Concerns = res, status, reason, res.Record.Concerns
		if !d.Done() {
			// Whatever the last failure was, the task ends BLOCKED (AG-E1).
			d.Status = ImplBlocked
			if r.Settled != nil && r.Settled(res.Record) {
				return d, nil
			}
		}

		var extra string
		haveContext, isReset := false, false
		if status == ImplNeedsContext && t.Context == "" && more != nil {
			// The context describes the tree the task starts from, not
			// what this attempt left in it.
			if err := r.reset(ctx); err != nil {
				return d, err
			}
			isReset = true
			extra = strings.TrimSpace(more(res.Record))
			haveContext = extra != ""
		}
		critical, isCritical := CriticalConcern(res.Record.Concerns)
		switch nextStep(status, isCritical, t.Context != "", haveContext, len(ladder)-1-rung) {
		case stepContext:
			r.logf("agent %s needs context (%s); dispatching it again with more context", r.Agent.Name(), text.Clip(reason, 120))
			t.Context = extra
		case stepEscalate:
			rung++
			r.logf("agent %s answered %s (%s); escalating from model %s to %s",
				r.Agent.Name(), status, text.Clip(reason, 120), modelName(t.Model), modelName(ladder[rung]))
			t.Model = ladder[rung]
		default:
			if isCritical {
				d.Result = blockAll(res, t.Findings, critical)
			}
			return d, nil
		}
		if isReset {
			continue
		}
		if err := r.reset(ctx); err != nil {
			return d, err
		}
	}
}

func modelName(m string) string {
	if m == "" {
		return "(the backend's default)"
	}
	return m
}

// blockAll turns a run that reported its work done into a blocked one,
// for a critical concern: no finding counts as addressed.
func blockAll(res Result, findings []Finding, reason string) Result {
	res.Record.Status, res.Record.ImplementerStatus, res.Record.Reason = StatusBlocked, ImplBlocked, reason
	out := make([]FindingOutcome, 0, len(res.Outcomes))
	for _, o := range res.Outcomes {
		if o.Status == StatusComplete {
			o.Status, o.Reason = StatusBlocked, reason
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		out = OutcomesFor(findings, res.Record)
	}
	res.Outcomes = out
	return res
}
