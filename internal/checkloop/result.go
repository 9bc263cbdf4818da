package checkloop

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// Result is a run's result as LOOP-7 lists it: status, results per
// iteration id, final verification output, iterations run, queued scope,
// bounds spent.
type Result struct {
	Run      string        `json:"run"`
	Status   Status        `json:"status"`
	ExitCode exitcode.Code `json:"exit_code"`
	Message  string        `json:"message"`
	Goal     string        `json:"goal"`
	Oracle   Oracle        `json:"oracle"`
	// Iterations are the results per iteration id.
	Iterations    []IterationResult `json:"iterations"`
	IterationsRun int               `json:"iterations_run"`
	// FinalVerification is the last done-check the loop ran (the final
	// re-judgment when there was one).
	FinalVerification *Verification `json:"final_verification"`
	QueuedScope       []string      `json:"queued_scope"`
	FailedApproaches  []string      `json:"failed_approaches"`
	Bounds            Bounds        `json:"bounds"`
	// Predecessor is the run this one followed, its end restated: a
	// predecessor's limit stays a limit (LOOP-5).
	Predecessor *Predecessor `json:"predecessor,omitempty"`
	// CensusAtStart is the baseline's test census, which every later
	// pass is held to (LOOP-8), or why there is none.
	CensusAtStart string `json:"census_at_start,omitempty"`
	StartHead     string `json:"start_head,omitempty"`
	Head          string `json:"head,omitempty"`
	// Usage is what the run's agents and judges reported consuming in
	// all (PR-M5); each iteration's is in Iterations.
	Usage agent.Spend `json:"usage"`
}

// IterationResult is one iteration in the result.
type IterationResult struct {
	ID        string   `json:"id"`
	Outcome   Outcome  `json:"outcome"`
	Progress  bool     `json:"progress"`
	Changed   []string `json:"changed"`
	Protected []string `json:"protected,omitempty"`
	// TestsLost: UNVERIFIED by the test census (LOOP-8).
	TestsLost string `json:"tests_lost,omitempty"`
	Commit    string `json:"commit,omitempty"`
	// AgentStatus and AgentSummary are what the child said: recorded,
	// never taken as the check (LOOP-6).
	AgentStatus  string  `json:"agent_status,omitempty"`
	AgentSummary string  `json:"agent_summary,omitempty"`
	AgentFailure string  `json:"agent_failure,omitempty"`
	Check        string  `json:"check,omitempty"`
	CheckPassed  bool    `json:"check_passed"`
	Final        string  `json:"final,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	// Usage is what the iteration's agent and judges reported consuming.
	Usage *agent.Spend `json:"usage,omitempty"`
}

// Verification is a done-check run as the result shows it.
type Verification struct {
	Key      string   `json:"key"`
	Passed   bool     `json:"passed"`
	ExitCode int      `json:"exit_code"`
	TimedOut bool     `json:"timed_out,omitempty"`
	Head     string   `json:"head"`
	Output   string   `json:"output"`
	Verdict  *Verdict `json:"verdict,omitempty"`
	Note     string   `json:"note,omitempty"`
	// Confirmed: a mechanical pass repeated on the same tree (LOOP-8);
	// Unconfirmed says why it did not (Flaky: a rerun failed). Reruns
	// are the runs after the first, each with its own output.
	// Census is the run's test census in one line (LOOP-8).
	Census      string         `json:"census,omitempty"`
	Confirmed   bool           `json:"confirmed,omitempty"`
	Flaky       bool           `json:"flaky,omitempty"`
	Unconfirmed string         `json:"unconfirmed,omitempty"`
	Reruns      []Verification `json:"reruns,omitempty"`
}

// Bounds are the run's bounds and what it spent of each.
type Bounds struct {
	MaxIterations int     `json:"max_iterations"`
	Iterations    int     `json:"iterations"`
	MaxWallClock  string  `json:"max_wall_clock,omitempty"`
	WallClock     string  `json:"wall_clock"`
	MaxCostUSD    float64 `json:"max_cost_usd,omitempty"`
	CostUSD       float64 `json:"cost_usd"`
	// Cost says how much of CostUSD the agents reported: every run
	// (agent.CostKnown), some (agent.CostPartial: a lower bound), or none
	// (agent.CostNotReported: the cost is unknown, not $0).
	Cost string `json:"cost"`
}

// BuildResult is the result of a run from its state; now ends the wall
// clock of a run that has not ended.
func BuildResult(st State, now time.Time) Result {
	r := Result{
		Run: st.RunID, Goal: st.Config.Goal, Oracle: st.Config.Oracle,
		Iterations:       []IterationResult{},
		QueuedScope:      nonNil(QueuedScope(st)),
		FailedApproaches: nonNil(Digest(st)),
		Predecessor:      st.Config.Predecessor,
		StartHead:        st.StartHead,
	}
	if b := st.Baseline; b != nil && b.Census != nil {
		r.CensusAtStart = b.Census.String()
	}
	if t := st.Terminal; t != nil {
		r.Status, r.ExitCode, r.Message = t.Status, t.ExitCode, t.Message
		now = t.At
	} else {
		r.Status, r.Message = "running", "the run has not ended"
	}
	for _, it := range st.Iterations {
		ir := IterationResult{ID: it.Ticket, Outcome: it.Outcome, Progress: it.Progress, Changed: nonNil(it.Changed), Protected: it.Protected, TestsLost: it.TestsLost, Commit: it.Commit}
		if a := it.Agent; a != nil {
			ir.AgentStatus, ir.AgentSummary, ir.AgentFailure, ir.CostUSD = a.Status, a.Summary, a.Failure, a.CostUSD
		}
		if it.Usage.Reported() {
			sp := it.Usage.Spend()
			ir.Usage = &sp
		}
		if c := it.Check; c != nil {
			ir.Check, ir.CheckPassed = checkWords(c), c.Passed
		}
		if f := it.Final; f != nil {
			ir.Final = checkWords(f)
		}
		if it.Stage == StageClosed {
			r.IterationsRun++
		}
		r.Iterations = append(r.Iterations, ir)
	}
	r.Head = st.StartHead
	for _, it := range st.Iterations {
		if it.Commit != "" {
			r.Head = it.Commit
		}
	}
	if c, commit := finalCheck(st); c != nil {
		r.FinalVerification = verification(c)
		if commit != "" {
			// The check ran on the tree this commit holds.
			r.FinalVerification.Head = commit
		}
	}
	r.Bounds = Bounds{MaxIterations: st.Config.MaxIterations, Iterations: len(st.Iterations), MaxCostUSD: st.Config.MaxCostUSD, CostUSD: math.Round(st.CostUSD*1e6) / 1e6}
	r.Usage, r.Bounds.Cost = st.Usage.Spend(), st.Usage.Coverage()
	if !st.Usage.Reported() && st.CostUSD > 0 {
		// A state from before usage was kept: its cost was reported.
		r.Bounds.Cost = agent.CostKnown
	}
	if st.Config.MaxWallClock > 0 {
		r.Bounds.MaxWallClock = st.Config.MaxWallClock.String()
	}
	if !st.StartedAt.IsZero() {
		r.Bounds.WallClock = now.Sub(st.StartedAt).Round(time.Millisecond).String()
	}
	return r
}

func verification(c *Check) *Verification {
	v := &Verification{Key: c.Key, Passed: c.Passed, ExitCode: c.ExitCode, TimedOut: c.TimedOut, Head: c.Head, Output: c.Output, Verdict: c.Verdict, Note: c.Note,
		Confirmed: c.Confirmed, Flaky: c.Flaky, Unconfirmed: c.Unconfirmed}
	if c.Census != nil && c.Census.Known {
		// An unknown census is said once, as the result's CensusAtStart.
		v.Census = c.Census.String()
	}
	for i := range c.Reruns {
		r := c.Reruns[i]
		v.Reruns = append(v.Reruns, *verification(&r))
	}
	return v
}

// writeRuns prints each run of a check that was rerun (LOOP-8) with the
// last lines of its own output, so a flaky check shows both.
func writeRuns(w io.Writer, v *Verification, lines int, fence bool, prefix string) {
	runs := append([]Verification{*v}, v.Reruns...)
	for i, r := range runs {
		state := "passed"
		if r.ExitCode != 0 || r.TimedOut {
			state = fmt.Sprintf("failed (exit %d)", r.ExitCode)
		}
		fmt.Fprintf(w, "%srun %d (%s) %s\n", prefix, i+1, r.Key, state)
		out := lastLines(r.Output, lines)
		switch {
		case out == "":
		case fence:
			fmt.Fprintf(w, "\n```\n%s\n```\n\n", out)
		default:
			fmt.Fprintf(w, "%s\n", indentBy(out, prefix+"  "))
		}
	}
}

// finalCheck is the last check the loop ran (a final re-judgment over the
// check it confirmed), and the commit of the iteration it checked, if any.
func finalCheck(st State) (*Check, string) {
	for i := len(st.Iterations) - 1; i >= 0; i-- {
		it := st.Iterations[i]
		if it.Final != nil {
			return it.Final, it.Commit
		}
		if it.Check != nil {
			return it.Check, it.Commit
		}
	}
	if st.BaselineFinal != nil {
		return st.BaselineFinal, ""
	}
	return st.Baseline, ""
}

// WriteSummary prints the result for a human.
func WriteSummary(w io.Writer, r Result) {
	fmt.Fprintf(w, "\nconverge loop: %s (exit %d) — %s\n", r.Status, r.ExitCode, r.Message)
	fmt.Fprintf(w, "result (run %s)\n", r.Run)
	if p := r.Predecessor; p != nil {
		fmt.Fprintf(w, "  predecessor      %s\n", predecessorLine(p))
	}
	fmt.Fprintf(w, "  goal             %s\n", text.Clip(text.OneLine(r.Goal), 100))
	switch r.Oracle.Class {
	case Judged:
		fmt.Fprintf(w, "  done-check       judged by %s (fresh final re-judgment before complete)\n", r.Oracle.Judge)
	default:
		fmt.Fprintf(w, "  done-check       %s (mechanical, run by converge)\n", r.Oracle.Command)
	}
	fmt.Fprintf(w, "  iterations run   %d of at most %d\n", r.IterationsRun, r.Bounds.MaxIterations)
	for _, it := range r.Iterations {
		line := string(it.Outcome)
		if it.Commit != "" {
			line += " " + text.ShortSHA(it.Commit)
		}
		if it.TestsLost != "" {
			line += " (" + list(it.Changed, 5) + "; the check passed but " + it.TestsLost + "; undone)"
		} else if len(it.Protected) > 0 {
			line += " (changed protected " + list(it.Protected, 5) + "; undone)"
		} else if len(it.Changed) > 0 {
			line += " (" + list(it.Changed, 5) + ")"
		}
		if it.AgentFailure != "" {
			line += "; " + it.AgentFailure
		} else if it.AgentStatus != "" {
			line += "; agent said " + it.AgentStatus
		}
		if it.Check != "" {
			line += "; check " + it.Check
		}
		if it.Final != "" {
			line += "; final re-judgment " + it.Final
		}
		fmt.Fprintf(w, "    %-14s %s\n", shortTicket(it.ID), line)
	}
	if v := r.FinalVerification; v != nil {
		state := "failed"
		if v.Passed {
			state = "passed"
		}
		if v.Unconfirmed != "" {
			state = v.Unconfirmed
		} else if v.Confirmed && len(v.Reruns) > 0 {
			state = fmt.Sprintf("passed %d runs in a row", len(v.Reruns)+1)
		}
		census := ""
		if v.Census != "" {
			census = " (" + v.Census + ")"
		}
		fmt.Fprintf(w, "  verification     %s %s on %s%s\n", v.Key, state, text.ShortSHA(v.Head), census)
		if v.Unconfirmed != "" {
			writeRuns(w, v, 6, false, "                   ")
		} else if out := lastLines(v.Output, 6); out != "" {
			fmt.Fprintf(w, "%s\n", indentBy(out, "                   "))
		}
	}
	if len(r.QueuedScope) > 0 {
		fmt.Fprintf(w, "  queued scope     %s\n", strings.Join(r.QueuedScope, "; "))
	}
	if len(r.FailedApproaches) > 0 {
		fmt.Fprintf(w, "  failed approaches\n")
		for _, f := range r.FailedApproaches {
			fmt.Fprintf(w, "    - %s\n", text.Clip(f, 200))
		}
	}
	b := r.Bounds
	fmt.Fprintf(w, "  bounds spent     %d/%d iterations, %s", b.Iterations, b.MaxIterations, b.WallClock)
	if b.MaxWallClock != "" {
		fmt.Fprintf(w, "/%s", b.MaxWallClock)
	}
	fmt.Fprintf(w, " wall clock, %s\n", b.costWords())
	fmt.Fprintf(w, "  agent usage      %s\n", r.Usage)
}

// costWords is the cost spent against its bound; a cost no agent
// reported is "not reported", never $0.
func (b Bounds) costWords() string {
	if b.Cost == agent.CostNotReported {
		if b.MaxCostUSD > 0 {
			return fmt.Sprintf("cost not reported (no agent reported a price, so max-cost $%.2f could not bind)", b.MaxCostUSD)
		}
		return "cost not reported"
	}
	s := fmt.Sprintf("$%.2f", b.CostUSD)
	if b.MaxCostUSD > 0 {
		s += fmt.Sprintf(" of max-cost $%.2f", b.MaxCostUSD)
	}
	if b.Cost == agent.CostPartial {
		s += " (partial: some agent runs reported no price)"
	}
	return s
}

// WriteLog prints a loop run's decision log as markdown (`converge log`):
// its inputs, every iteration with its ticket, outcome, check and commit,
// the events in order, and the result.
func WriteLog(w io.Writer, run store.Run, st State, tickets []store.Ticket, events []store.Event) error {
	r := BuildResult(st, run.UpdatedAt)
	fmt.Fprintf(w, "# converge loop run %s\n\n", run.ID)
	fmt.Fprintf(w, "- repository: `%s`\n", strings.TrimPrefix(run.Target, Kind+":"))
	fmt.Fprintf(w, "- status: **%s**", run.Status)
	if run.Finished() {
		fmt.Fprintf(w, " (exit %d)", run.ExitCode)
	}
	fmt.Fprintf(w, "\n- started: %s\n", run.StartedAt.UTC().Format(time.RFC3339))
	switch st.Config.Oracle.Class {
	case Judged:
		fmt.Fprintf(w, "- done-check: judged by `%s`\n", st.Config.Oracle.Judge)
	default:
		fmt.Fprintf(w, "- done-check: `%s` (mechanical)\n", st.Config.Oracle.Command)
	}
	fmt.Fprintf(w, "- agent: `%s`\n", st.Config.Agent)
	fmt.Fprintf(w, "- protected: %s\n", codeList(st.Config.Protect))
	fmt.Fprintf(w, "- bounds: %d iterations", st.Config.MaxIterations)
	if st.Config.MaxWallClock > 0 {
		fmt.Fprintf(w, ", %s wall clock", st.Config.MaxWallClock)
	}
	if st.Config.MaxCostUSD > 0 {
		fmt.Fprintf(w, ", $%.2f", st.Config.MaxCostUSD)
	}
	fmt.Fprintf(w, "\n\n## Goal (frozen, sha256 %s)\n\n", text.Clip(st.Config.GoalSHA256, 16))
	fmt.Fprintf(w, "%s\n", indentBy(strings.TrimRight(st.Config.Goal, "\n"), "> "))
	if p := st.Config.Predecessor; p != nil {
		fmt.Fprintf(w, "\n## Predecessor\n\n%s\n", predecessorLine(p))
	}
	fmt.Fprintf(w, "\n## Iterations\n\n")
	if st.Baseline != nil {
		fmt.Fprintf(w, "- before iteration 1: check %s\n", checkWords(st.Baseline))
		if r.CensusAtStart != "" {
			fmt.Fprintf(w, "- test census at the start (LOOP-8): %s\n", r.CensusAtStart)
		}
	}
	byID := map[string]store.Ticket{}
	for _, t := range tickets {
		byID[t.ID] = t
	}
	for _, it := range st.Iterations {
		fmt.Fprintf(w, "- **%s** (ticket `%s`", shortTicket(it.Ticket), it.Ticket)
		if t, ok := byID[it.Ticket]; ok {
			fmt.Fprintf(w, ", %s by `%s`", t.Status, t.Owner)
		}
		fmt.Fprintf(w, "): %s\n", iterationLine(it))
		if it.Usage.Reported() {
			fmt.Fprintf(w, "  - agent usage: %s\n", it.Usage)
		}
	}
	if len(st.Iterations) == 0 {
		fmt.Fprintf(w, "- none\n")
	}
	if d := Digest(st); len(d) > 0 {
		fmt.Fprintf(w, "\n## Failed approaches\n\n")
		for _, x := range d {
			fmt.Fprintf(w, "- %s\n", x)
		}
	}
	if len(events) > 0 {
		fmt.Fprintf(w, "\n## Events\n\n")
		for _, e := range events {
			fmt.Fprintf(w, "- %s `%s` %s\n", e.Time.UTC().Format(time.TimeOnly), e.Kind, text.OneLine(e.Message))
		}
	}
	fmt.Fprintf(w, "\n## Result\n\n")
	fmt.Fprintf(w, "- status: **%s** — %s\n", r.Status, r.Message)
	fmt.Fprintf(w, "- iterations run: %d\n", r.IterationsRun)
	if v := r.FinalVerification; v != nil {
		fmt.Fprintf(w, "- final verification: %s, exit %d, on `%s`\n", v.Key, v.ExitCode, text.ShortSHA(v.Head))
		if v.Census != "" {
			fmt.Fprintf(w, "- its test census: %s\n", v.Census)
		}
		switch {
		case v.Unconfirmed != "":
			fmt.Fprintf(w, "- **%s** (LOOP-8); each run's output:\n\n", v.Unconfirmed)
			writeRuns(w, v, 15, true, "- ")
		case v.Confirmed && len(v.Reruns) > 0:
			fmt.Fprintf(w, "- confirmed: passed %d runs in a row on the same tree (LOOP-8)\n", len(v.Reruns)+1)
			fallthrough
		default:
			if out := lastLines(v.Output, 15); out != "" {
				fmt.Fprintf(w, "\n```\n%s\n```\n", out)
			}
		}
	}
	if len(r.QueuedScope) > 0 {
		fmt.Fprintf(w, "- queued scope: %s\n", strings.Join(r.QueuedScope, "; "))
	}
	fmt.Fprintf(w, "- bounds spent: %d/%d iterations, %s wall clock, %s\n", r.Bounds.Iterations, r.Bounds.MaxIterations, r.Bounds.WallClock, r.Bounds.costWords())
	fmt.Fprintf(w, "- agent usage, all runs: %s\n", r.Usage)
	return nil
}

func codeList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return "`" + strings.Join(xs, "`, `") + "`"
}

func indentBy(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
