package plan

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/text"
)

// Result is a run's tracking report (PLAN-1): per task its status,
// concerns, block reason, commit, retries, review results and files
// changed, and how the run ended.
type Result struct {
	Run       string        `json:"run"`
	Status    string        `json:"status"`
	ExitCode  exitcode.Code `json:"exit_code"`
	Message   string        `json:"message"`
	PlanFile  string        `json:"plan_file"`
	StartHead string        `json:"start_head,omitempty"`
	Head      string        `json:"head,omitempty"`
	WallClock string        `json:"wall_clock"`
	CostUSD   float64       `json:"cost_usd"`
	// Usage is what the run's agents reported consuming in all (PR-M5):
	// tokens, and the cost with whether every run reported one (a cost
	// none reported is "not reported", never $0).
	Usage  agent.Spend  `json:"usage"`
	Counts Counts       `json:"counts"`
	Tasks  []TaskResult `json:"tasks"`
}

// Counts are how many tasks ended how.
type Counts struct {
	Done             int `json:"done"`
	DoneWithConcerns int `json:"done_with_concerns"`
	// NotApproved tasks ended without the review's approval (PLAN-1);
	// they are never counted done.
	NotApproved int `json:"not_approved"`
	Blocked     int `json:"blocked"`
	Skipped     int `json:"skipped"`
	// Split tasks were done by their parts, which are counted instead.
	Split    int `json:"split,omitempty"`
	NotEnded int `json:"not_ended"`
}

// TaskResult is one task in the report.
type TaskResult struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	// Status: DONE, DONE_WITH_CONCERNS, NOT_APPROVED, BLOCKED, SKIPPED,
	// SPLIT, or the phase of a task that has not ended.
	Status      string   `json:"status"`
	Concerns    []string `json:"concerns"`
	BlockReason string   `json:"block_reason,omitempty"`
	// Commit is the task's last commit on the branch (DONE and
	// NOT_APPROVED tasks); Kept the ref holding a blocked task's work
	// taken off the branch.
	Commit string `json:"commit,omitempty"`
	Kept   string `json:"kept,omitempty"`
	// Retries are re-dispatches for more context or a stronger model
	// (0, 1, or 2 with an escalation); Models the models it ran with.
	Retries       int            `json:"retries"`
	Models        []string       `json:"models,omitempty"`
	FixIterations int            `json:"fix_iterations"`
	Reviews       []ReviewResult `json:"reviews"`
	FilesChanged  []string       `json:"files_changed"`
	// Usage is what the task's implementers and reviewers reported
	// consuming.
	Usage      *agent.Spend     `json:"usage,omitempty"`
	Dispatches []DispatchResult `json:"dispatches"`
	// ConcernVerdicts are the orchestrator's judgments of its
	// implementer's concerns.
	ConcernVerdicts []ConcernVerdict `json:"concern_verdicts,omitempty"`
	// OpenIssues are the review's issues a NOT_APPROVED task left open.
	OpenIssues []Issue `json:"open_issues,omitempty"`
	// TooLarge says why its implementer found it too large; SplitInto are
	// the parts it was split into, SplitFrom the task it is a part of.
	TooLarge  string   `json:"too_large,omitempty"`
	SplitInto []string `json:"split_into,omitempty"`
	SplitFrom string   `json:"split_from,omitempty"`
}

// ReviewResult is one review in the report.
type ReviewResult struct {
	N        int     `json:"n"`
	Approved bool    `json:"approved"`
	Passed   bool    `json:"passed"`
	Valid    bool    `json:"valid"`
	Head     string  `json:"head"`
	Summary  string  `json:"summary,omitempty"`
	Note     string  `json:"note,omitempty"`
	Issues   []Issue `json:"issues"`
}

// DispatchResult is one implementer dispatch in the report.
type DispatchResult struct {
	Ticket  string `json:"ticket"`
	Kind    string `json:"kind"`
	Agent   string `json:"agent"`
	Outcome string `json:"outcome"`
	Summary string `json:"summary,omitempty"`
	// Attempts are its runs: the first, with more context, with stronger
	// models (AG-T2, AG-E1).
	Attempts []Attempt `json:"attempts,omitempty"`
}

// BuildResult is the report of a run from its state; now ends the wall
// clock of a run that has not ended.
func BuildResult(st State, now time.Time) Result {
	r := Result{Run: st.RunID, PlanFile: st.Config.PlanFile, StartHead: st.StartHead, Head: st.StartHead, CostUSD: st.CostUSD, Usage: st.Usage.Spend(), Tasks: []TaskResult{}}
	if !st.Usage.Reported() && st.CostUSD > 0 {
		// A state from before usage was kept: its cost was reported.
		r.Usage = agent.Usage{CostUSD: st.CostUSD, CostReported: true}.Spend()
	}
	if t := st.Terminal; t != nil {
		r.Status, r.ExitCode, r.Message, now = string(t.Status), t.ExitCode, t.Message, t.At
	} else {
		r.Status, r.Message = "running", "the run has not ended"
	}
	if !st.StartedAt.IsZero() {
		r.WallClock = now.Sub(st.StartedAt).Round(time.Second).String()
	}
	p := st.Config.Plan
	for _, t := range st.Tasks {
		task := p.Task(t.ID)
		tr := TaskResult{ID: t.ID, Status: t.Status, Concerns: nonNil(t.Concerns), BlockReason: t.BlockReason, Kept: t.Kept, FixIterations: t.Fixes, Reviews: []ReviewResult{}, FilesChanged: nonNil(t.Changed), Dispatches: []DispatchResult{}}
		if task != nil {
			tr.Group = p.Groups[task.Group].Name
			tr.SplitFrom = task.SplitFrom
		}
		tr.ConcernVerdicts, tr.OpenIssues, tr.TooLarge, tr.SplitInto = t.Judged, t.OpenIssues, t.TooLarge, t.SplitInto
		if tr.Status == "" {
			tr.Status = string(t.Phase)
		}
		if (t.Phase == PhaseDone || t.Phase == PhaseNotApproved) && t.Head != "" && t.Head != t.Base {
			tr.Commit = t.Head
			r.Head = t.Head
		}
		var attempts []Attempt
		used := t.Usage
		for _, rv := range t.Reviews {
			used.Add(rv.Usage)
		}
		for _, d := range t.Dispatches {
			if d.Report != nil {
				used.Add(d.Report.Usage)
			}
			dr := DispatchResult{Ticket: d.Ticket, Kind: string(d.Kind), Agent: d.Agent, Outcome: d.Outcome}
			if d.Outcome == "" {
				dr.Outcome = "in flight"
			}
			if d.Report != nil {
				dr.Summary = text.Clip(text.OneLine(firstNonEmpty(d.Report.Failure, d.Report.Summary)), 300)
				dr.Attempts = d.Report.Attempts
			}
			tr.Dispatches = append(tr.Dispatches, dr)
			if d.Report != nil {
				tr.Retries += max(0, len(d.Report.Attempts)-1)
				attempts = append(attempts, d.Report.Attempts...)
			}
		}
		tr.Models = models(attempts)
		if used.Reported() {
			sp := used.Spend()
			tr.Usage = &sp
		}
		for _, rv := range t.Reviews {
			tr.Reviews = append(tr.Reviews, ReviewResult{N: rv.N, Approved: rv.Approved, Passed: rv.Passed(), Valid: rv.Valid, Head: rv.Head, Summary: rv.Summary, Note: rv.Note, Issues: nonNilIssues(rv.Issues)})
		}
		switch tr.Status {
		case TaskDone:
			r.Counts.Done++
		case TaskDoneWithConcerns:
			r.Counts.DoneWithConcerns++
		case TaskNotApproved:
			r.Counts.NotApproved++
		case TaskSplit:
			r.Counts.Split++
		case TaskBlocked:
			r.Counts.Blocked++
		case TaskSkipped:
			r.Counts.Skipped++
		default:
			r.Counts.NotEnded++
		}
		r.Tasks = append(r.Tasks, tr)
	}
	return r
}

// WriteReport writes the tracking report as markdown.
func WriteReport(w io.Writer, r Result) {
	fmt.Fprintf(w, "# converge plan %s: %s (exit %d)\n\n", r.Run, r.Status, r.ExitCode)
	fmt.Fprintf(w, "%s.\n\n", r.Message)
	fmt.Fprintf(w, "- plan: `%s`\n- branch: %s → %s\n- tasks: %d done, %d done with concerns, %d not approved, %d blocked, %d skipped",
		r.PlanFile, text.ShortSHA(r.StartHead), text.ShortSHA(r.Head), r.Counts.Done, r.Counts.DoneWithConcerns, r.Counts.NotApproved, r.Counts.Blocked, r.Counts.Skipped)
	if r.Counts.Split > 0 {
		fmt.Fprintf(w, ", %d split into parts", r.Counts.Split)
	}
	if r.Counts.NotEnded > 0 {
		fmt.Fprintf(w, ", %d not ended", r.Counts.NotEnded)
	}
	fmt.Fprintf(w, "\n- wall clock: %s", r.WallClock)
	fmt.Fprintf(w, "\n- agent usage: %s", r.Usage)
	fmt.Fprintf(w, "\n\n| task | group | status | commit | retries | fixes | reviews | files changed |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, t := range r.Tasks {
		var rv []string
		for _, x := range t.Reviews {
			rv = append(rv, reviewMark(x))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %d | %s | %s |\n", t.ID, t.Group, t.Status, orDash(text.ShortSHA(t.Commit)), t.Retries, t.FixIterations, orDash(strings.Join(rv, " ")), orDash(strings.Join(t.FilesChanged, ", ")))
	}
	for _, t := range r.Tasks {
		fmt.Fprintf(w, "\n## %s: %s\n\n", t.ID, t.Status)
		if t.BlockReason != "" {
			fmt.Fprintf(w, "- block reason: %s\n", t.BlockReason)
		}
		if t.Status == TaskNotApproved {
			fmt.Fprintf(w, "- not approved after %d fix-review iterations: its commits stay on the branch, not approved; fix the open issues or revert %s\n", t.FixIterations, text.ShortSHA(t.Commit))
			for _, i := range t.OpenIssues {
				fmt.Fprintf(w, "- open issue: %s\n", issueList([]Issue{i}))
			}
		}
		if t.TooLarge != "" {
			fmt.Fprintf(w, "- too large for one run: %s\n", t.TooLarge)
		}
		if len(t.SplitInto) > 0 {
			fmt.Fprintf(w, "- split into: %s\n", strings.Join(t.SplitInto, ", "))
		}
		if t.SplitFrom != "" {
			fmt.Fprintf(w, "- a part of: %s\n", t.SplitFrom)
		}
		if t.Commit != "" {
			fmt.Fprintf(w, "- commit: %s\n", t.Commit)
		}
		if t.Kept != "" {
			fmt.Fprintf(w, "- its work, taken off the branch, is kept at `%s`\n", t.Kept)
		}
		for _, c := range t.Concerns {
			fmt.Fprintf(w, "- concern: %s", c)
			for _, v := range t.ConcernVerdicts {
				if v.Concern == c {
					fmt.Fprintf(w, " — judged %s by %s: %s", v.Verdict, v.By, v.Reason)
					break
				}
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "- retries: %d", t.Retries)
		if len(t.Models) > 0 {
			fmt.Fprintf(w, " (models: %s)", strings.Join(t.Models, " → "))
		}
		fmt.Fprintf(w, "; fix-review iterations: %d\n", t.FixIterations)
		fmt.Fprintf(w, "- files changed: %s\n", orDash(strings.Join(t.FilesChanged, ", ")))
		if t.Usage != nil {
			fmt.Fprintf(w, "- agent usage: %s\n", t.Usage)
		}
		for _, d := range t.Dispatches {
			fmt.Fprintf(w, "- dispatch `%s` (%s, %s): %s", d.Ticket, d.Kind, d.Agent, d.Outcome)
			if d.Summary != "" {
				fmt.Fprintf(w, " — %s", d.Summary)
			}
			fmt.Fprintln(w)
			for i, a := range d.Attempts {
				fmt.Fprintf(w, "  - attempt %d", i+1)
				if a.Model != "" {
					fmt.Fprintf(w, " on %s", a.Model)
				}
				if a.Context {
					fmt.Fprint(w, " with more context")
				}
				fmt.Fprintf(w, ": %s", a.Status)
				if a.Reason != "" {
					fmt.Fprintf(w, " — %s", text.Clip(text.OneLine(a.Reason), 200))
				}
				fmt.Fprintln(w)
			}
		}
		for _, x := range t.Reviews {
			fmt.Fprintf(w, "- review %d of %s: %s", x.N, text.ShortSHA(x.Head), reviewMark(x))
			if x.Summary != "" {
				fmt.Fprintf(w, " — %s", x.Summary)
			}
			if x.Note != "" {
				fmt.Fprintf(w, " (%s)", x.Note)
			}
			fmt.Fprintln(w)
			for _, i := range x.Issues {
				fmt.Fprintf(w, "  - %s: %s", i.Severity, i.Summary)
				if i.File != "" {
					fmt.Fprintf(w, " (%s", i.File)
					if i.Line > 0 {
						fmt.Fprintf(w, ":%d", i.Line)
					}
					fmt.Fprint(w, ")")
				}
				fmt.Fprintln(w)
			}
		}
	}
}

func reviewMark(x ReviewResult) string {
	switch {
	case !x.Valid:
		return "❌ (no valid answer)"
	case x.Passed && len(x.Issues) > 0:
		return fmt.Sprintf("✅ (%d minor)", len(x.Issues))
	case x.Passed:
		return "✅"
	}
	return fmt.Sprintf("❌ (%d issue(s))", len(x.Issues))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func nonNilIssues(xs []Issue) []Issue {
	if xs == nil {
		return []Issue{}
	}
	return xs
}
