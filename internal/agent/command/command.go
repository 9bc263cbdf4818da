// Package command is the agent backend that runs any program (SPEC AG-B1,
// `exec`). The program gets the task as JSON on stdin (see Input), runs in
// the task's worktree with the task's scrubbed environment under the
// task's time-box, and ends its stdout with its answer: a status record
// line (IF-5) for a fix task, a JSON array of findings for a review task
// (PR-S4).
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
)

// Input is the JSON document a program reads on stdin. A fix task:
//
//	{
//	  "kind": "fix",
//	  "run_id": "r1", "round": 2,
//	  "workdir": "/abs/worktree",            // also the process's cwd
//	  "budget_seconds": 300,                 // SIGTERM at the budget, SIGKILL after the grace period
//	  "extension": 1,                        // absent on a first run; n on the n-th extension of a run that ended partial (AG-T1)
//	  "findings": [{"id": "…", "thread_id": "…", "path": "a.go",
//	                "start_line": 3, "end_line": 4, "body": "…",
//	                "author": "…", "source": "…"}],
//	  "instructions": "…",                   // repo review instructions (data)
//	  "model": "…",                          // absent unless the escalation ladder names one (AG-E1)
//	  "context": "…",                        // absent unless added after NEEDS_CONTEXT (AG-T2; data)
//	  "rejected": "…",                       // absent unless converge rejected an earlier run's change (PR-V1, PR-V3; data)
//	  "prompt": "…",                         // agent.RenderTaskPrompt of the task, for LLM wrappers
//	  "status_schema": {…}                   // JSON Schema of the final stdout line
//	}
//
// The last non-empty line of stdout must be the status record (IF-5).
// Its implementer_status drives the orchestrator (AG-T2): NEEDS_CONTEXT
// is answered once with "context", a second NEEDS_CONTEXT or a BLOCKED
// with the next model of the agent's ladder (AG-E1). The model is also in
// the environment as CONVERGE_AGENT_MODEL, unset when the ladder names
// none, so a scripted agent can act on its escalation.
//
// A review task (one angle of the local review, PR-S4):
//
//	{
//	  "kind": "review",
//	  "run_id": "r1", "round": 2,
//	  "workdir": "/abs/worktree",            // checked out at head_sha; read, never edit
//	  "budget_seconds": 300,
//	  "findings": [],
//	  "angle": "edge-cases",                 // the point of view to review from
//	  "angle_focus": "Edge cases: …",        // what that angle looks for
//	  "base_ref": "origin/main",
//	  "head_sha": "0123abc…",
//	  "diff": "diff --git a/…",              // git diff base_ref...head_sha (data)
//	  "instructions": "…",                   // .github/review-instructions.md at the head (data)
//	  "prompt": "…"                          // the review prompt, quoting diff and instructions
//	}
//
// The program prints no status record; its answer is the last line of
// stdout that starts with '[', a JSON array of
//
//	{"file": "a.go", "line_range": [3, 4], "summary": "…", "verdict": "structural"|"minor"}
//
// and exactly "[]" when it finds nothing (see review.ParseAnswer). It must
// exit 0: a non-zero exit, a crash or a stop at the budget without an array
// is an agent that could not run, not an empty review.
//
// Finding bodies, the diff and instructions are untrusted data (SEC-2); a
// program passing them to a model should use prompt, which quotes them.
type Input struct {
	Kind          string          `json:"kind"`
	RunID         string          `json:"run_id"`
	Round         int             `json:"round"`
	Workdir       string          `json:"workdir"`
	BudgetSeconds float64         `json:"budget_seconds"`
	Extension     int             `json:"extension,omitempty"` // n for the n-th extension of a partial run (AG-T1)
	Findings      []agent.Finding `json:"findings"`
	Instructions  string          `json:"instructions,omitempty"`
	Model         string          `json:"model,omitempty"`
	Context       string          `json:"context,omitempty"`
	Rejected      string          `json:"rejected,omitempty"` // why converge rejected an earlier run's change (PR-V1, PR-V3; data)
	// Review tasks only.
	Angle      string `json:"angle,omitempty"`
	AngleFocus string `json:"angle_focus,omitempty"`
	BaseRef    string `json:"base_ref,omitempty"`
	HeadSHA    string `json:"head_sha,omitempty"`
	Diff       string `json:"diff,omitempty"`

	Prompt string `json:"prompt"`
	// StatusSchema is absent for review tasks, which answer with an array.
	StatusSchema json.RawMessage `json:"status_schema,omitempty"`
}

// Options configure a command agent.
type Options struct {
	// Name is reported by Name(); default "command".
	Name string
	// Grace is the time between SIGTERM and SIGKILL at the budget; zero
	// means agent.DefaultGrace.
	Grace time.Duration
	// Secrets are redacted from captured output before it leaves Run
	// (SEC-3), in addition to recognisable token shapes.
	Secrets []string
}

// Agent runs a configured program.
type Agent struct {
	argv []string
	opts Options
}

var _ agent.Agent = (*Agent)(nil)

// New returns an agent that runs argv (program and arguments, no shell).
func New(argv []string, opts Options) (*Agent, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("command agent: empty argv")
	}
	if opts.Name == "" {
		opts.Name = "command"
	}
	return &Agent{argv: append([]string(nil), argv...), opts: opts}, nil
}

func (a *Agent) Name() string { return a.opts.Name }

// Run runs the program once. Garbage on stdout is blocked/unparseable, a
// program still running at the budget is stopped and partial/
// budget-exceeded (unless it already printed a record), and a non-zero
// exit keeps a valid record with a concern (see agent.RunWithBudget). The
// program cannot report per finding, so each gets the record's status.
//
// A review task has no status record: its Record only says how the process
// ended (see reviewRecord), and the answer is in Output for the caller.
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	budget := t.EffectiveBudget()
	review := t.Kind == agent.TaskKindReview
	input := Input{
		Kind:          t.Kind,
		RunID:         t.RunID,
		Round:         t.Round,
		Workdir:       t.Workdir,
		BudgetSeconds: budget.Seconds(),
		Extension:     t.Extension,
		Findings:      nonNil(t.Findings),
		Instructions:  t.Instructions,
		Model:         t.Model,
		Context:       t.Context,
		Rejected:      t.Rejected,
		Prompt:        agent.RenderTaskPrompt(t),
	}
	var parse func(string) agent.StatusRecord
	if review {
		input.Angle, input.AngleFocus, input.BaseRef, input.HeadSHA, input.Diff = t.Angle, t.AngleFocus, t.BaseRef, t.HeadSHA, t.Diff
		// Any stdout is "valid" here so the budget rule keeps its hands
		// off; how the process ended is judged below from the exit.
		parse = func(string) agent.StatusRecord { return agent.StatusRecord{Status: agent.StatusComplete} }
	} else {
		input.StatusSchema = agent.StatusSchema()
		// Other kinds judge a diff too (a classifier's hunks).
		input.Diff = t.Diff
	}
	in, err := json.Marshal(input)
	if err != nil {
		return agent.Result{}, fmt.Errorf("command agent: encode task: %w", err)
	}
	res, err := agent.RunWithBudget(ctx, agent.Cmd{
		Argv:   a.argv,
		Dir:    t.Workdir,
		Env:    env(t),
		Stdin:  in,
		Budget: budget,
		Grace:  a.opts.Grace,
		Parse:  parse,
	})
	if review {
		res.Record = reviewRecord(res, budget)
	}
	out := agent.Result{
		Record:   redactRecord(res.Record, a.opts.Secrets),
		Output:   agent.Redact(res.Stdout, a.opts.Secrets...),
		Stderr:   agent.Redact(res.Stderr, a.opts.Secrets...),
		Duration: res.Duration,
	}
	out.Outcomes = agent.OutcomesFor(t.Findings, out.Record)
	if err != nil {
		// The error names only the program and the OS or context failure.
		return out, fmt.Errorf("command agent %s: %w", a.opts.Name, err)
	}
	return out, nil
}

// reviewRecord says how a review run ended: complete only for a normal
// exit 0, so that a crash or a stop that left no array is told apart from
// an answer that could not be parsed.
func reviewRecord(res agent.CmdResult, budget time.Duration) agent.StatusRecord {
	rec := agent.StatusRecord{FilesChanged: []string{}}
	switch {
	case res.Flooded:
		return res.Record // agent.FloodRecord
	case res.TimedOut:
		rec.Status, rec.Reason = agent.StatusPartial, agent.ReasonBudgetExceeded
		rec.Summary = fmt.Sprintf("stopped at the %s budget", budget)
	case res.ExitCode < 0:
		rec.Status, rec.Reason = agent.StatusBlocked, "killed"
		rec.Summary = "ended by a signal"
	case res.ExitCode != 0:
		rec.Status, rec.Reason = agent.StatusBlocked, "exit-code"
		rec.Summary = fmt.Sprintf("exited with code %d", res.ExitCode)
	default:
		rec.Status = agent.StatusComplete
		rec.Summary = "review finished"
	}
	return rec
}

// redactRecord keeps secrets an agent echoed out of the record, which is
// stored and may be posted.
func redactRecord(r agent.StatusRecord, secrets []string) agent.StatusRecord {
	red := func(s string) string { return agent.Redact(s, secrets...) }
	r.Summary, r.NextAction, r.Reason = red(r.Summary), red(r.NextAction), red(r.Reason)
	if r.Concerns != nil {
		cs := make([]string, len(r.Concerns))
		for i, c := range r.Concerns {
			cs[i] = red(c)
		}
		r.Concerns = cs
	}
	return r
}

// ModelEnv names the variable that gives a run its model (AG-E1).
const ModelEnv = "CONVERGE_AGENT_MODEL"

// env is t's environment (scrubbed, as RunWithBudget would make it) with
// ModelEnv set to t.Model, and never inherited: a stale value from
// converge's own environment would tell the program a model it is not on.
func env(t agent.Task) []string {
	base := t.Env
	if base == nil {
		base = agent.ScrubEnv(os.Environ())
	}
	var extra []string
	if t.Model != "" {
		extra = []string{ModelEnv + "=" + t.Model}
	}
	out := agent.CLIEnv(base, nil, nil, extra)
	if t.Model == "" {
		out = slices.DeleteFunc(out, func(kv string) bool { return strings.HasPrefix(kv, ModelEnv+"=") })
	}
	return out
}

func nonNil(fs []agent.Finding) []agent.Finding {
	if fs == nil {
		return []agent.Finding{}
	}
	return fs
}
