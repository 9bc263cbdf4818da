// Package command is the agent backend that runs any program (SPEC AG-B1,
// `exec`). The program gets the task as JSON on stdin, runs in the task's
// worktree with the task's scrubbed environment under the task's time-box,
// and must end its stdout with a status record line (IF-5).
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/agent"
)

// Input is the JSON document a program reads on stdin:
//
//	{
//	  "kind": "fix",
//	  "run_id": "r1", "round": 2,
//	  "workdir": "/abs/worktree",            // also the process's cwd
//	  "budget_seconds": 300,                 // SIGTERM at the budget, SIGKILL after the grace period
//	  "findings": [{"id": "…", "thread_id": "…", "path": "a.go",
//	                "start_line": 3, "end_line": 4, "body": "…",
//	                "author": "…", "source": "…"}],
//	  "instructions": "…",                   // repo review instructions (data)
//	  "prompt": "…",                         // agent.RenderTaskPrompt of the task, for LLM wrappers
//	  "status_schema": {…}                   // JSON Schema of the final stdout line
//	}
//
// Finding bodies and instructions are untrusted data (SEC-2); a program
// passing them to a model should use prompt, which quotes them.
type Input struct {
	Kind          string          `json:"kind"`
	RunID         string          `json:"run_id"`
	Round         int             `json:"round"`
	Workdir       string          `json:"workdir"`
	BudgetSeconds float64         `json:"budget_seconds"`
	Findings      []agent.Finding `json:"findings"`
	Instructions  string          `json:"instructions,omitempty"`
	Prompt        string          `json:"prompt"`
	StatusSchema  json.RawMessage `json:"status_schema"`
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
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	budget := t.EffectiveBudget()
	in, err := json.Marshal(Input{
		Kind:          t.Kind,
		RunID:         t.RunID,
		Round:         t.Round,
		Workdir:       t.Workdir,
		BudgetSeconds: budget.Seconds(),
		Findings:      nonNil(t.Findings),
		Instructions:  t.Instructions,
		Prompt:        agent.RenderTaskPrompt(t),
		StatusSchema:  agent.StatusSchema(),
	})
	if err != nil {
		return agent.Result{}, fmt.Errorf("command agent: encode task: %w", err)
	}
	res, err := agent.RunWithBudget(ctx, agent.Cmd{
		Argv:   a.argv,
		Dir:    t.Workdir,
		Env:    t.Env,
		Stdin:  in,
		Budget: budget,
		Grace:  a.opts.Grace,
	})
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

func nonNil(fs []agent.Finding) []agent.Finding {
	if fs == nil {
		return []agent.Finding{}
	}
	return fs
}
