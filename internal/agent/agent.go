// Package agent holds what every coding-agent backend shares: the Agent
// interface, the task an agent is handed, the status record it must end with
// (SPEC IF-5, AG-T3), the time-box and extension rule (AG-T1), and the
// safety helpers that keep review text and secrets where they belong
// (SEC-2, SEC-3, AG-B1).
//
// Backends live in sub-packages (suggest, command, …) and never import the
// loops that drive them.
package agent

import (
	"context"
	"strings"
	"time"
)

// DefaultBudget is the time-box of one agent run when a Task names none
// (AG-T1).
const DefaultBudget = 5 * time.Minute

// TaskKindFix asks an agent to fix review findings in Task.Workdir.
const TaskKindFix = "fix"

// TaskKindReview asks an agent to review Task.Diff from one angle
// (PR-S4). Its final message is a JSON array of findings, not a status
// record: see package review.
const TaskKindReview = "review"

// Finding is one review point an agent is asked to fix. Body, Path and
// Author come from the forge and are untrusted DATA, never instructions
// (SEC-2): prompts quote them with RenderTaskPrompt.
type Finding struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id,omitempty"`
	Path     string `json:"path,omitempty"`
	// StartLine..EndLine is the 1-based inclusive range the finding is
	// about; StartLine 0 means the single line EndLine, EndLine 0 means the
	// whole file (or no file at all when Path is empty).
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
	Body      string `json:"body"`
	Author    string `json:"author,omitempty"`
	// Source says where the finding came from (a reviewer bot, the local
	// review, a human), for reports; agents must not treat it as authority.
	Source string `json:"source,omitempty"`
	// Outdated: the code under the thread changed since the review.
	// StartLine..EndLine is then the thread's current position (0 when the
	// forge has none), and OrigStart..OrigEnd the lines the reviewer saw at
	// OriginalCommit: a suggestion may replace only those lines, and only
	// where they still stand unchanged (PR-S9).
	Outdated       bool   `json:"outdated,omitempty"`
	OrigStart      int    `json:"orig_start,omitempty"`
	OrigEnd        int    `json:"orig_end,omitempty"`
	OriginalCommit string `json:"original_commit,omitempty"`
	// Structural: a defect to fix, proven by a test that fails without
	// the fix and passes with it (PR-V7); the prompt asks for one.
	Structural bool `json:"structural,omitempty"`
}

// Task is one unit of work handed to an agent.
type Task struct {
	Kind    string // TaskKindFix for now
	RunID   string
	Round   int
	Workdir string // a git worktree the agent may edit, and nothing else
	// Findings are the review points to fix; the caller orders them, and
	// never puts two findings on intersecting lines into one task (PR-S7).
	Findings []Finding
	// Review tasks (TaskKindReview): the angle to review from, what it
	// looks for, and the diff under review (git diff base...head), which
	// is untrusted data like comment bodies.
	Angle      string
	AngleFocus string
	Diff       string
	BaseRef    string
	HeadSHA    string
	// Instructions are extra repo instructions (e.g. the repo's
	// review-instructions.md); quoted as data like comment bodies.
	Instructions string
	// Prompt, when set, is the task's whole prompt, rendered by the
	// package that owns the task kind (a classifier judge's, say);
	// RenderTaskPrompt then returns it as it is.
	Prompt string
	// Budget is the time-box; zero means DefaultBudget (AG-T1).
	Budget time.Duration
	// Extension is 0 for a first run, and n for the n-th extension of a
	// run that ended partial (AG-T1, see Extend): the same task again with
	// the granted time, on the tree the earlier run left.
	Extension int
	// NextAction is, in an extension, what the run it extends said
	// remained (its record's next_action): the prompt quotes it as data,
	// so a fresh run continues where the stopped one left off.
	NextAction string
	// Model is the model this run is on (AG-E1: a rung of the agent's
	// escalation ladder, see Runner.Dispatch); "" means the backend's own
	// configured model. CLI backends pass it as their model flag, the
	// command backend as CONVERGE_AGENT_MODEL.
	Model string
	// Context is more context an orchestrator adds when an agent answered
	// NEEDS_CONTEXT (AG-T2): file contents, related discussion. It may
	// quote untrusted text, so prompts quote it as data.
	Context string
	// Rejected is, on a re-dispatch, why converge rejected the change
	// an earlier run of this task made (PR-V1, PR-V3): the task's lines
	// left untouched, a test deleted, an unexplained file. It may quote
	// untrusted text, so prompts quote it as data.
	Rejected string
	// Env is the complete environment a subprocess gets, already scrubbed
	// (see ScrubEnv). Nil does not mean "inherit": subprocess backends fall
	// back to ScrubEnv(os.Environ()) so a forgotten Env never leaks a token.
	Env []string
}

// EffectiveBudget is t.Budget, or DefaultBudget when unset.
func (t Task) EffectiveBudget() time.Duration {
	if t.Budget <= 0 {
		return DefaultBudget
	}
	return t.Budget
}

// Status is the coarse outcome of an agent run (AG-T1).
type Status string

const (
	StatusComplete Status = "complete"
	StatusPartial  Status = "partial"
	StatusBlocked  Status = "blocked"
)

// Implementer statuses (AG-T2); optional finer detail of a record.
const (
	ImplDone             = "DONE"
	ImplDoneWithConcerns = "DONE_WITH_CONCERNS"
	ImplNeedsContext     = "NEEDS_CONTEXT"
	ImplBlocked          = "BLOCKED"
)

// Reasons set by converge itself (an agent may give any reason).
const (
	// ReasonUnparseable: the output held no valid status record (AG-T3).
	ReasonUnparseable = "unparseable"
	// ReasonBudgetExceeded: the run was stopped at its budget before it
	// printed a valid status record (AG-T1).
	ReasonBudgetExceeded = "budget-exceeded"
	// ReasonOutputFlood: the run wrote more output than a run may
	// (Cmd.MaxRead) and was stopped at once.
	ReasonOutputFlood = "output-flood"
)

// StatusRecord is the last line an agent prints (IF-5). ParseStatus is the
// only way converge reads one from agent output.
type StatusRecord struct {
	Status                Status   `json:"status"`
	NextAction            string   `json:"next_action"`
	NeedsExtensionMinutes int      `json:"needs_extension_minutes"`
	Summary               string   `json:"summary"`
	FilesChanged          []string `json:"files_changed"`
	ImplementerStatus     string   `json:"implementer_status,omitempty"`
	Concerns              []string `json:"concerns,omitempty"`
	Reason                string   `json:"reason,omitempty"`
	// FileReasons says, per file, why the run changed it: a file changed
	// for a finding about the whole pull request, or a file added, counts
	// as explained only with a reason here (PR-V1, PR-V3).
	FileReasons map[string]string `json:"file_reasons,omitempty"`
}

// FindingOutcome is what became of one finding of a Task. Backends that
// cannot tell findings apart report the record's status for each.
type FindingOutcome struct {
	FindingID string `json:"finding_id"`
	Status    Status `json:"status"`
	Reason    string `json:"reason,omitempty"`
}

// Result is what an agent run produced.
type Result struct {
	Record   StatusRecord
	Outcomes []FindingOutcome // one per Task finding, in Task order
	Output   string           // tail of the raw output (stdout for subprocesses), redacted
	Stderr   string           // tail of stderr for subprocess backends, redacted
	Duration time.Duration
	Usage    Usage // tokens and cost, for backends whose CLI reports them
}

// Agent runs one Task. Run returns an error only when the backend could not
// run at all (bad configuration, unusable workdir, cancelled context); every
// outcome of a run that happened — including garbage output or a stopped
// run — is a Result whose Record says so. An error, like a run without a
// valid record, is no answer about the findings: callers retry once, then
// end the run (AG-T4, see FailureOf).
type Agent interface {
	Name() string
	Run(ctx context.Context, t Task) (Result, error)
}

// OutcomesFor gives every finding the record's status, for backends that
// cannot report per finding.
func OutcomesFor(findings []Finding, rec StatusRecord) []FindingOutcome {
	out := make([]FindingOutcome, 0, len(findings))
	for _, f := range findings {
		out = append(out, FindingOutcome{FindingID: f.ID, Status: rec.Status, Reason: rec.Reason})
	}
	return out
}

// RunFailure is an agent that could not run (AG-T4): a missing binary, a
// crash, a non-zero exit without a status record, or unparseable output
// after its retry. It is an error of the run, never a disposition of a
// finding: the run ends errored naming the agent and its last stderr lines.
type RunFailure struct {
	Agent  string // the backend's Name()
	What   string // short lowercase cause, e.g. "exited 2 without a status record"
	Stderr string // last lines of stderr, redacted
	// CLI is the CLI's own report of why it could not run, when it gave
	// one (its Kind decides the exit code: FailAuth is exit 6).
	CLI *CLIError
}

// Unwrap gives the CLI's own error, so errors.As and KindOf find it.
func (e *RunFailure) Unwrap() error {
	if e.CLI == nil {
		return nil
	}
	return e.CLI
}

// Retryable reports whether running the task once more may help (AG-T4
// retries once): not when the CLI said its credentials failed or its
// endpoint stayed down for the whole retry bound.
func (e *RunFailure) Retryable() bool {
	return e.CLI == nil || e.CLI.Kind == FailCLI
}

func (e *RunFailure) Error() string {
	if e.CLI != nil {
		s := e.CLI.Error()
		if t := lastLines(e.Stderr, 3); t != "" && !strings.Contains(s, t) {
			s += "; last stderr: " + t
		}
		return s
	}
	s := "agent " + e.Agent + " could not run: " + e.What
	if t := lastLines(e.Stderr, 5); t != "" {
		s += "; last stderr: " + t
	}
	return s
}

// lastLines joins the last n non-empty lines of s with " | ".
func lastLines(s string, n int) string {
	var out []string
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			out = append([]string{l}, out...)
		}
	}
	return strings.Join(out, " | ")
}
