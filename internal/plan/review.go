package plan

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/quote"
	"github.com/convergeloop/converge/internal/text"
)

// Task kinds of the plan executor's agent runs.
const (
	// TaskKindImplement asks an implementer to do one task of the plan;
	// it ends with a status record (IF-5) with an implementer_status.
	TaskKindImplement = "plan-task"
	// TaskKindReview asks a reviewer for the combined review of one
	// task's diff; it ends with a review answer (ReviewSchema). It is a
	// judge's task: every backend runs it read-only and hands back its
	// final message (agent.ReadOnly).
	TaskKindReview = agent.TaskKindJudge
)

// reviewSchemaJSON is the contract of a reviewer's answer. It is a status
// record, so any backend that reads the final line by IF-5 accepts it,
// narrowed to a finished run that changed nothing, plus the verdict.
//
//go:embed review.schema.json
var reviewSchemaJSON []byte

// ReviewSchema returns the review answer's JSON Schema.
func ReviewSchema() []byte { return bytes.Clone(reviewSchemaJSON) }

var reviewSchema = agent.EmbeddedSchema("plan-review.json", reviewSchemaJSON)

// reviewLine is what converge reads of a valid answer.
type reviewLine struct {
	Summary  string  `json:"summary"`
	Approved bool    `json:"approved"`
	Issues   []Issue `json:"issues"`
}

// ParseReview reads a reviewer's answer, fail-closed: the last non-empty
// line must be a JSON object valid by the review schema. Anything else is
// an error, and the caller takes it as "not approved".
func ParseReview(output string) (Review, error) {
	// The last non-empty line; an earlier one is never taken instead, as
	// it may be an echoed example.
	rest := strings.TrimRight(output, " \t\r\n")
	line := strings.TrimSpace(rest[strings.LastIndexByte(rest, '\n')+1:])
	switch {
	case line == "":
		return Review{}, errors.New("the reviewer printed nothing")
	case !strings.HasPrefix(line, "{"):
		return Review{}, fmt.Errorf("the reviewer's last line is not a JSON object: %s", text.Clip(line, 120))
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return Review{}, fmt.Errorf("the reviewer's last line is not JSON: %s", text.OneLine(err.Error()))
	}
	if err := reviewSchema().Validate(inst); err != nil {
		return Review{}, fmt.Errorf("the review fails its schema: %s", text.Clip(text.OneLine(err.Error()), 300))
	}
	var rl reviewLine
	if err := agent.ExactKeys(inst, rl); err != nil {
		return Review{}, fmt.Errorf("the review: %s", err)
	}
	if err := json.Unmarshal([]byte(line), &rl); err != nil {
		return Review{}, fmt.Errorf("the review: %s", text.OneLine(err.Error()))
	}
	r := Review{Valid: true, Approved: rl.Approved, Issues: []Issue{}, Summary: text.Clip(text.OneLine(rl.Summary), 500)}
	for _, i := range rl.Issues {
		i.Summary = text.Clip(text.OneLine(i.Summary), 1000)
		r.Issues = append(r.Issues, i)
	}
	return r, nil
}

// Prompts quote what converge did not write (agent output, diffs, file
// contents) as data: every line prefixed, between delimiters holding a
// nonce derived from all the quoted text, so no quoted line can pass for
// an instruction or a delimiter (SEC-2).
type quoter struct {
	b     strings.Builder
	nonce string
}

func newQuoter(quoted ...string) *quoter { return &quoter{nonce: quote.Nonce(quoted...)} }

func (q *quoter) w(format string, args ...any) { fmt.Fprintf(&q.b, format, args...) }

// data writes s as a quoted block named kind.
func (q *quoter) data(kind, attrs, s string) { q.b.WriteString(quote.Block(kind, attrs, q.nonce, s)) }

func (q *quoter) rules() { q.b.WriteString(quote.Rules(q.nonce)) }

// ReviewInput is what a reviewer is given: the task as the plan states
// it and the diff of its commit, never the implementer's report.
type ReviewInput struct {
	TaskID  string
	Prompt  string
	Files   []string
	Base    string
	Head    string
	Diff    string
	Workdir string
}

// RenderReviewPrompt is the reviewer's prompt (PLAN-1).
func RenderReviewPrompt(t agent.Task, in ReviewInput) string {
	q := newQuoter(in.Diff)
	q.w("You review task %s of a converge plan, in the git repository %s, checked out at the task's head %s. ", in.TaskID, in.Workdir, in.Head)
	q.w("Give one combined review: spec compliance (does the change do everything the task asks, and nothing it does not) and code quality (correctness, tests, clarity). ")
	q.w("Judge the code, not anyone's account of it: you get the task and the diff from its base %s to its head %s, and you may read any file of the repository. ", in.Base, in.Head)
	q.w("Do not edit, commit, push or change branches.\n")
	q.w("\n## Task %s\n%s\n", in.TaskID, strings.TrimSpace(in.Prompt))
	if len(in.Files) > 0 {
		q.w("Its files: %s\n", strings.Join(in.Files, ", "))
	}
	q.w("\n## Diff\n")
	q.rules()
	if strings.TrimSpace(in.Diff) == "" {
		q.w("The diff is empty: the task's commit changes nothing.\n")
	}
	q.data("DIFF", fmt.Sprintf(" base=%q head=%q", in.Base, in.Head), in.Diff)
	q.w("\n## Time-box\nYou have %s. When you receive SIGTERM, print your answer at once.\n", t.EffectiveBudget().Round(1e9))
	q.w("\n## Final line: your review\nEnd your output with exactly one line holding a single JSON object and nothing after it:\n")
	q.w(`{"status": "complete", "next_action": "", "needs_extension_minutes": 0, "summary": "<one sentence>", "files_changed": [], "approved": <true|false>, "issues": [{"severity": "critical|important|minor", "summary": "<what is wrong and what to change>", "file": "<path>", "line": <line>}]}`)
	q.w("\napproved is true only when the change does the task and has no important or critical issue. ")
	q.w("critical: wrong behaviour that loses data or breaks security or the build; important: the task not (fully) done, a bug, a missing or wrong test; minor: worth a look, but the change is correct without it. ")
	q.w("Anything else as the last line counts as not approved.\n")
	return q.b.String()
}

// ImplementInput is what an implementer dispatch is given besides its
// agent.Task (whose Model and Context the status protocol sets).
type ImplementInput struct {
	Task     *Task
	Dispatch Dispatch
	Workdir  string
}

// dispatchWords says what a dispatch is, for prompts and reports.
func dispatchWords(k DispatchKind) string {
	switch k {
	case DispatchFix:
		return "a fix of the review's issues"
	case DispatchAgain:
		return "the same dispatch again: an earlier converge stopped while it ran"
	}
	return "the first dispatch"
}

// RenderImplementPrompt is an implementer's prompt (AG-T2): the task,
// the review's issues of a fix, and the context added after
// NEEDS_CONTEXT, quoted as data.
func RenderImplementPrompt(t agent.Task, in ImplementInput) string {
	quoted := []string{t.Context}
	for _, i := range in.Dispatch.Issues {
		quoted = append(quoted, i.Summary, i.File)
	}
	q := newQuoter(quoted...)
	d := in.Dispatch
	q.w("You are the implementer of task %s of a converge plan, in the git repository %s, on its current branch. ", in.Task.ID, in.Workdir)
	q.w("This is dispatch %d of the task: %s", d.N, dispatchWords(d.Kind))
	if t.Context != "" {
		q.w(", again with the context you asked for")
	}
	if t.Model != "" {
		q.w("; model: %s", t.Model)
	}
	q.w(".\nDo the task below by editing files; other tasks of the plan are someone else's. ")
	if len(in.Task.Files) > 0 {
		q.w("Keep to the task's files (%s): a change elsewhere is recorded as a concern. ", strings.Join(in.Task.Files, ", "))
	}
	q.w("Do not push or change branches; converge commits your change if you do not, and a reviewer then checks the diff against the task.\n")
	q.w("\n## Task %s\n%s\n", in.Task.ID, strings.TrimSpace(in.Task.Prompt))
	if len(d.Issues) > 0 || t.Context != "" {
		q.w("\n")
		q.rules()
	}
	if len(d.Issues) > 0 {
		q.w("\n## Review issues to fix\nThe reviewer found these in your change; fix each, keeping the task done.\n")
		for i, is := range d.Issues {
			attrs := fmt.Sprintf(" n=%d severity=%q", i+1, is.Severity)
			if is.File != "" {
				attrs += fmt.Sprintf(" file=%q line=%d", is.File, is.Line)
			}
			q.data("REVIEW-ISSUE", attrs, is.Summary)
		}
	}
	if t.Context != "" {
		q.w("\n## More context\n")
		q.data("MORE-CONTEXT", "", t.Context)
	}
	q.w("\n## Time-box\nYou have %s. If you cannot finish, stop, leave the tree consistent, and report status \"partial\" with a concrete next_action and needs_extension_minutes. When you receive SIGTERM, print your status record at once.\n", t.EffectiveBudget().Round(1e9))
	q.w("\n## Final line: status record\nEnd your output with exactly one line holding a single JSON object and nothing after it:\n")
	q.w(`{"status": "complete|partial|blocked", "next_action": "<what remains>", "needs_extension_minutes": <0 or minutes>, "summary": "<what you did>", "files_changed": ["<path>", ...], "implementer_status": "DONE|DONE_WITH_CONCERNS|NEEDS_CONTEXT|BLOCKED", "concerns": ["<doubt>", ...], "reason": "<what you need, or why you are blocked>"}`)
	q.w("\nimplementer_status: DONE when the task is done; DONE_WITH_CONCERNS when it is done but you have doubts (list them in concerns; start a concern with %q when the change must not be accepted as it is); ", agent.CriticalPrefix)
	q.w("NEEDS_CONTEXT when information is missing (say exactly what in reason: the files and lines, e.g. src/a.go:10-40, the task or the subject of the plan's context you need; converge reads you exactly that); BLOCKED when the task cannot be done (say why in reason). ")
	if in.Task.SplitFrom == "" && d.Kind != DispatchFix {
		q.w("If the task is too large to do well in one run, do not start it: report BLOCKED with a reason starting with %q that says how it divides; converge then splits it into smaller tasks. ", TooLargePrefix)
	}
	q.w("Output without a valid final record is no answer at all: the run is tried once more and then stopped as an error. If you cannot or will not do the task, say so in a BLOCKED record.\n")
	return q.b.String()
}
