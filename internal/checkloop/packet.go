package checkloop

import (
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// Packet is the context packet (LOOP-1): all a child gets, designed once.
// Each child starts fresh from it, with no conversation carried over
// (LOOP-3), as canonical JSON (LOOP-4).
type Packet struct {
	// Goal is the frozen goal, verbatim.
	Goal string `json:"goal"`
	// Worklog is what the iterations before did and what the done-check
	// said, rendered as text.
	Worklog string `json:"worklog"`
	// FailedApproaches is the failed-approaches digest: what did not work
	// and must not be tried again as is, a predecessor's end included.
	FailedApproaches []string `json:"failed_approaches"`
	// QueuedScope is what is known to remain: the last agent's next
	// action, a judge's missing items.
	QueuedScope []string `json:"queued_scope"`
}

// BuildPacket renders the packet of the next iteration from the state.
// It is pure.
func BuildPacket(st State) Packet {
	return Packet{
		Goal:             st.Config.Goal,
		Worklog:          RenderWorklog(st),
		FailedApproaches: nonNil(Digest(st)),
		QueuedScope:      nonNil(QueuedScope(st)),
	}
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// outputTailLines is how much of the latest check output the worklog
// quotes.
const outputTailLines = 40

// RenderWorklog is the worklog of the packet: one line per iteration,
// then the latest done-check and the end of its output.
func RenderWorklog(st State) string {
	var b strings.Builder
	c := st.Config
	switch c.Oracle.Class {
	case Judged:
		fmt.Fprintf(&b, "Done-check: judged by %s, run by converge after each iteration (your own claim does not count).\n", c.Oracle.Judge)
	default:
		fmt.Fprintf(&b, "Done-check: `%s`, run by converge after each iteration; exit 0 means done (your own claim does not count).\n", c.Oracle.Command)
	}
	if len(c.Protect) > 0 {
		fmt.Fprintf(&b, "Protected (an iteration that changes them is undone and recorded UNVERIFIED): %s\n", strings.Join(c.Protect, ", "))
	}
	done := 0
	for _, it := range st.Iterations {
		if it.Stage == StageClosed {
			done++
		}
	}
	fmt.Fprintf(&b, "Iterations so far: %d of at most %d.\n", done, c.MaxIterations)
	if st.Baseline != nil {
		fmt.Fprintf(&b, "- before iteration 1: check %s\n", checkWords(st.Baseline))
	}
	for _, it := range st.Iterations {
		if it.Stage != StageClosed {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s\n", shortTicket(it.Ticket), iterationLine(it))
	}
	if last := st.lastCheck(); last != nil {
		fmt.Fprintf(&b, "\nLatest check: %s.\n", checkWords(last))
		if v := last.Verdict; v != nil {
			for _, r := range v.Reasons {
				fmt.Fprintf(&b, "  reason: %s\n", r)
			}
			for _, m := range v.Missing {
				fmt.Fprintf(&b, "  missing: %s\n", m)
			}
		} else if out := lastLines(last.Output, outputTailLines); out != "" {
			fmt.Fprintf(&b, "Its output ends with:\n%s\n", indent(out))
		}
	}
	return b.String()
}

// iterationLine says what one closed iteration did.
func iterationLine(it Iteration) string {
	var parts []string
	switch it.Outcome {
	case OutcomeAccepted:
		s := "accepted"
		if it.Commit != "" {
			s += ", commit " + text.ShortSHA(it.Commit)
		}
		parts = append(parts, s+"; changed "+list(it.Changed, 8))
	case OutcomeNoChange:
		parts = append(parts, "changed nothing")
	case OutcomeUnverified:
		if it.TestsLost != "" {
			ran := ""
			if r := it.Rejected; r != nil && r.Census != nil && r.Census.Known {
				ran = " [" + r.Census.String() + "]"
			}
			parts = append(parts, "UNVERIFIED by the test census: the check passed on its tree"+ran+", but "+it.TestsLost+"; the change was undone")
			break
		}
		parts = append(parts, "UNVERIFIED: changed protected "+list(it.Protected, 8)+"; the change was undone")
	case OutcomeInterrupted:
		parts = append(parts, "interrupted (converge stopped while it ran); its change was undone")
	case OutcomeStopped:
		parts = append(parts, "stopped; its change was undone")
	case OutcomeTimedOut:
		parts = append(parts, "stopped at the time-box the wall clock left; its change was undone")
	case OutcomeFailed:
		parts = append(parts, "the agent could not run")
	}
	if a := it.Agent; a != nil && a.Failure == "" {
		s := "agent reported " + a.Status
		if a.Summary != "" {
			s += ": " + quoteSummary(a.Summary)
		}
		parts = append(parts, s)
	}
	if it.Check != nil {
		s := "check " + checkWords(it.Check)
		if cs := it.Check.Census; cs != nil && cs.Known {
			s += " [" + cs.String() + "]"
		}
		if !it.Progress && it.Outcome != OutcomeUnverified {
			s += " (no progress)"
		}
		parts = append(parts, s)
	}
	if f := it.Final; f != nil {
		parts = append(parts, "final re-judgment "+checkWords(f))
	}
	return strings.Join(parts, "; ")
}

func checkWords(c *Check) string {
	var s string
	switch {
	case c.Verdict != nil && c.Passed:
		s = "said done"
	case c.Verdict != nil:
		s = "said not done"
	case c.Judged:
		s = "no valid verdict, taken as not done"
	case c.Unconfirmed != "":
		s = c.Unconfirmed
	case c.Passed && c.Confirmed && len(c.Reruns) > 0:
		s = fmt.Sprintf("passed %d runs in a row", len(c.Reruns)+1)
	case c.Passed:
		s = "passed"
	case c.TimedOut:
		s = "timed out"
	case c.Note != "" && c.ExitCode == 0:
		s = "failed"
	default:
		s = fmt.Sprintf("failed (exit %d)", c.ExitCode)
	}
	if c.Note != "" {
		s += " — " + c.Note
	}
	if c.Lost != "" {
		s += " (allowed by --allow-test-removal: " + c.Lost + ")"
	}
	return s
}

// Digest is the failed-approaches digest: a predecessor's end first (its
// limit restated), then every iteration that did not move the work
// forward, and why.
func Digest(st State) []string {
	var out []string
	if p := st.Config.Predecessor; p != nil {
		out = append(out, predecessorLine(p))
		for _, d := range p.Digest {
			out = append(out, "from "+p.Run+": "+d)
		}
	}
	if f := st.BaselineFinal; f != nil && !f.Passed {
		out = append(out, fmt.Sprintf("before iteration 1: the judge said done, but the fresh final re-judgment did not (%s).", strings.Join(verdictReasons(f), "; ")))
	}
	for _, it := range st.Iterations {
		if it.Stage != StageClosed {
			continue
		}
		tried := ""
		if a := it.Agent; a != nil && a.Summary != "" {
			tried = " It had tried: " + quoteSummary(a.Summary)
		}
		id := shortTicket(it.Ticket)
		switch {
		case it.Outcome == OutcomeUnverified && it.TestsLost != "":
			out = append(out, fmt.Sprintf("%s UNVERIFIED: the check passed, but %s (changed %s); a pass that runs fewer tests than at the start proves nothing, so the change was undone and did not count.%s", id, it.TestsLost, list(it.Changed, 8), tried))
		case it.Outcome == OutcomeUnverified:
			out = append(out, fmt.Sprintf("%s UNVERIFIED: it changed protected oracle inputs (%s); the change was undone and did not count.%s", id, list(it.Protected, 8), tried))
		case it.Outcome == OutcomeNoChange:
			out = append(out, fmt.Sprintf("%s changed nothing; the check %s again.%s", id, checkState(it.Check), tried))
		case it.Outcome == OutcomeInterrupted:
			out = append(out, id+" was interrupted; its partial change was undone.")
		case it.Outcome == OutcomeAccepted && !it.Progress:
			out = append(out, fmt.Sprintf("%s changed %s but the check's output did not change.%s", id, list(it.Changed, 5), tried))
		}
		if f := it.Final; f != nil && !f.Passed {
			out = append(out, fmt.Sprintf("%s: the judge said done, but the fresh final re-judgment did not (%s).", id, strings.Join(verdictReasons(f), "; ")))
		}
	}
	return out
}

func predecessorLine(p *Predecessor) string {
	s := fmt.Sprintf("Predecessor run %s ended %s (exit %d) after %d iteration(s)", p.Run, p.Status, p.ExitCode, p.Iterations)
	if p.Status == string(StatusLimited) {
		s += ": a bound ran out before the done-check passed; that limit stands, it is not a success"
	}
	if p.Message != "" {
		s += " — " + p.Message
	}
	return s + "."
}

func checkState(c *Check) string {
	if c == nil {
		return "unknown"
	}
	return checkWords(c)
}

func verdictReasons(c *Check) []string {
	if c.Verdict == nil {
		if c.Note != "" {
			return []string{c.Note}
		}
		return []string{"no verdict"}
	}
	if len(c.Verdict.Reasons) == 0 {
		return []string{"no reason given"}
	}
	return c.Verdict.Reasons
}

// QueuedScope is what is known to remain: the last agent's next action
// and the latest judge verdict's missing items.
func QueuedScope(st State) []string {
	var out []string
	if it := st.lastClosed(); it != nil && it.Agent != nil {
		if na := strings.TrimSpace(it.Agent.NextAction); na != "" {
			out = append(out, na)
		}
	}
	if c := st.lastCheck(); c != nil && c.Verdict != nil && !c.Passed {
		out = append(out, c.Verdict.Missing...)
	}
	return dedupe(out)
}

func shortTicket(t string) string {
	if i := strings.LastIndex(t, ".iter."); i >= 0 {
		return t[i+1:]
	}
	return t
}

func list(xs []string, n int) string {
	if len(xs) == 0 {
		return "nothing"
	}
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

func quoteSummary(s string) string {
	return fmt.Sprintf("%q", text.Clip(strings.Join(strings.Fields(s), " "), 300))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
