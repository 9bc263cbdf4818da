package prloop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// RunRecord is everything the store holds of one PR run, as the decision
// log reads it.
type RunRecord struct {
	Run      store.Run
	Rounds   []store.Round
	Findings []store.Finding
	Events   []store.Event
}

// quietEvents are progress, not decisions: the log leaves them out.
var quietEvents = map[string]bool{"wait": true, "observe": true, "start": true}

// WriteDecisionLog renders a PR run as markdown (PR-M5): the run, each
// round with its review, findings (source, author, verdict, disposition)
// and commit, the guards as the final state left them, the decisions in
// order, the terminal and the proof. It reads only the store.
func WriteDecisionLog(w io.Writer, rec RunRecord) error {
	r := rec.Run
	var st State
	if len(r.State) > 0 {
		if err := json.Unmarshal(r.State, &st); err != nil {
			return fmt.Errorf("decode state of %s: %w", r.ID, err)
		}
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "# converge run %s\n\n", r.ID)
	fmt.Fprintf(b, "| | |\n|---|---|\n")
	fmt.Fprintf(b, "| kind | %s |\n| target | %s |\n| started | %s |\n", r.Kind, r.Target, stamp(r.StartedAt))
	if r.Finished() {
		fmt.Fprintf(b, "| ended | %s |\n| status | %s (exit %d) |\n", stamp(r.EndedAt), r.Status, r.ExitCode)
	} else {
		fmt.Fprintf(b, "| status | %s (unfinished: a rerun resumes it) |\n", r.Status)
	}
	if st.InitialHead != "" {
		fmt.Fprintf(b, "| starting head | `%s` |\n", text.ShortSHA(st.InitialHead))
	}
	if st.SingleIteration {
		fmt.Fprintf(b, "| mode | single iteration: %s |\n", cell(st.SingleIterationWhy))
	}

	byRound := map[int][]store.Finding{}
	for _, f := range rec.Findings {
		byRound[f.Round] = append(byRound[f.Round], f)
	}
	fmt.Fprintf(b, "\n## Rounds\n")
	if len(rec.Rounds) == 0 {
		fmt.Fprintf(b, "\nNo round started.\n")
	}
	for _, rd := range rec.Rounds {
		var rr RoundRecord
		_ = json.Unmarshal(rd.Summary, &rr)
		fmt.Fprintf(b, "\n### Round %d on `%s`\n\n", rd.N, text.ShortSHA(rd.HeadSHA))
		review := "none accepted"
		if rr.ReviewID != "" {
			review = rr.ReviewID
		}
		fmt.Fprintf(b, "- started %s\n- bot review: %s\n", stamp(rd.StartedAt), review)
		if rd.Structural {
			fmt.Fprintf(b, "- structural round (counts toward the consecutive-structural guard)\n")
		} else {
			fmt.Fprintf(b, "- no structural finding\n")
		}
		if rd.CommitSHA != "" {
			fmt.Fprintf(b, "- commit `%s`\n", text.ShortSHA(rd.CommitSHA))
		} else {
			fmt.Fprintf(b, "- no commit\n")
		}
		if rr.Unclear {
			fmt.Fprintf(b, "- unclear classification (counts as structural, PR-G4)\n")
		}
		for _, note := range rr.Notes {
			fmt.Fprintf(b, "- note: %s\n", cell(note))
		}
		if n := fixCausedNote(rr); n != "" {
			fmt.Fprintf(b, "- fix-caused: %s\n", cell(n))
		}
		fmt.Fprintf(b, "- agent usage: %s\n", usageLine(rr.Usage))
		for _, c := range rr.Censuses {
			fmt.Fprintf(b, "- test census, %s\n", cell(c.String()))
		}
		// What proved each fix, or why nothing did (PR-V7).
		for _, tr := range st.Threads {
			if tr.Round == rd.N && (tr.Disposition == DispAddressed && tr.Reason != "" || strings.Contains(tr.Reason, "no proof: ")) {
				fmt.Fprintf(b, "- proof of %s: %s\n", cell(tr.ThreadID), cell(text.Clip(tr.Reason, 300)))
			}
		}
		fs := byRound[rd.N]
		if len(fs) == 0 {
			fmt.Fprintf(b, "\nNo findings.\n")
			continue
		}
		merged := map[string]Finding{}
		for _, f := range rr.Findings {
			merged[f.ID] = f
		}
		fmt.Fprintf(b, "\n| finding | source | author | verdict | why | where | disposition | merged from | summary |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, f := range fs {
			where := f.Path
			if f.EndLine > 0 {
				where = fmt.Sprintf("%s:%d", f.Path, f.EndLine)
			}
			disp := f.Disposition
			if disp == "" {
				disp = "open"
			}
			rf := merged[f.ID]
			from := "-"
			if len(rf.MergedFrom) > 0 {
				from = strings.Join(rf.MergedFrom, ", ")
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(f.ID), cell(f.Source), cell(f.Author), cell(f.Verdict),
				cell(cmp.Or(text.Clip(rf.Class, 80), "-")), cell(where), cell(disp+findingTags(rf)), cell(from), cell(FirstLine(f.Summary)))
		}
	}

	fmt.Fprintf(b, "\n## Guards\n\n")
	fmt.Fprintf(b, "- rounds started: %d\n", st.Round)
	fmt.Fprintf(b, "- consecutive structural rounds: %d\n", st.ConsecutiveStructural)
	if st.InitialDiffLines > 0 {
		fmt.Fprintf(b, "- diff growth: %d line(s) by the loop on a PR of %d\n", st.LoopDiffLines, st.InitialDiffLines)
	} else {
		fmt.Fprintf(b, "- diff growth: %d line(s) by the loop\n", st.LoopDiffLines)
	}
	if !st.StartedAt.IsZero() && !r.UpdatedAt.IsZero() {
		fmt.Fprintf(b, "- wall clock: %s\n", r.UpdatedAt.Sub(st.StartedAt).Round(time.Second))
	}
	var total agent.Usage
	for _, rr := range st.Rounds {
		total.Add(rr.Usage)
	}
	fmt.Fprintf(b, "- agent usage, all rounds: %s\n", usageLine(total))

	if len(st.Recaps) > 0 {
		fmt.Fprintf(b, "\n## Recaps\n\n")
		for _, r := range st.Recaps {
			v := r.Verdict
			valid := ""
			if !v.Valid {
				valid = " (no usable verdict: " + cell(v.Why) + ")"
			}
			fmt.Fprintf(b, "- after %d rounds: **%s**%s: %s\n", r.Count, v.Decision, valid, strings.Join(strings.Fields(v.Reason), " "))
			if len(v.RevertRounds) > 0 {
				fmt.Fprintf(b, "  - reverted rounds %s in `%s`\n", listInts(v.RevertRounds), text.ShortSHA(r.Reverted))
			}
		}
	}

	fmt.Fprintf(b, "\n## Decisions\n\n")
	n := 0
	for _, e := range rec.Events {
		if quietEvents[e.Kind] {
			continue
		}
		n++
		prefix := ""
		if e.Round > 0 {
			prefix = fmt.Sprintf("round %d, ", e.Round)
		}
		fmt.Fprintf(b, "- %s%s: %s\n", prefix, e.Kind, strings.ReplaceAll(strings.TrimSpace(e.Message), "\n", " "))
	}
	if n == 0 {
		fmt.Fprintf(b, "None recorded.\n")
	}

	fmt.Fprintf(b, "\n## Terminal\n\n")
	switch t := st.Terminal; {
	case t != nil:
		fmt.Fprintf(b, "**%s** (exit %d): %s\n", t.Reason, t.ExitCode, t.Message)
		if f := t.AgentFailure; f != nil {
			// AG-T4: which agent could not run, in its CLI's words.
			fmt.Fprintf(b, "\n- agent that could not run: %s", f.Agent)
			if f.Kind != "" {
				fmt.Fprintf(b, " (%s)", f.Kind)
			}
			fmt.Fprintf(b, ": %s\n", f.Message)
		}
		if t.Disposal != nil {
			fmt.Fprintf(b, "\n- replied: %s\n- resolved: %s\n- skipped: %s\n", list(t.Disposal.Replied), list(t.Disposal.Resolved), list(t.Disposal.Skipped))
		}
	case r.Finished():
		fmt.Fprintf(b, "**%s** (exit %d)\n", r.Status, r.ExitCode)
	default:
		fmt.Fprintf(b, "None yet.\n")
	}

	var p *Proof
	if len(r.Proof) > 0 {
		p = new(Proof)
		if err := json.Unmarshal(r.Proof, p); err != nil {
			return fmt.Errorf("decode proof of %s: %w", r.ID, err)
		}
	}
	if p != nil {
		fmt.Fprintf(b, "\n## Proof\n\n")
		fmt.Fprintf(b, "- head `%s`, reviewed commit `%s` (%s)\n", p.HeadSHA, p.ReviewedCommit, p.Review())
		fmt.Fprintf(b, "- CI %s, merge state %s\n", p.CIState, p.MergeState)
		fmt.Fprintf(b, "- open threads awaiting reply: %d\n", p.OpenThreadsAwaitingReply)
		fmt.Fprintf(b, "- escalated: %s; hand-offs: %s\n", list(p.EscalatedThreads), list(p.HandOffs))
		fmt.Fprintf(b, "- rounds run: %d; reverted rounds: %s\n", p.RoundsRun, listInts(p.RevertedRounds))
		if c := p.TestCensus; c != nil {
			fmt.Fprintf(b, "- test census of the head: %s\n", c.Census)
		}
		if u := p.Usage; u != nil {
			fmt.Fprintf(b, "- agent usage: %s\n", u.Total)
		}
		for _, note := range p.Notes {
			fmt.Fprintf(b, "- note: %s\n", note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// usageLine is a round's reported agent usage (PR-M5): tokens, and the
// price as far as the agents reported one ("not reported" is never $0).
func usageLine(u agent.Usage) string {
	return u.String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// cell keeps a value inside its markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func listInts(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}
