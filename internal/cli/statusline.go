package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/term"
	"github.com/convergeloop/converge/internal/text"
)

// statusRefresh is how often the status lines are redrawn while nothing
// happens, so their elapsed times move.
const statusRefresh = time.Second

// liveTerminal puts ios.Out behind a status board when it is a live
// terminal (UX-1): every line a command prints then goes above the
// loops' status lines, which are redrawn in place. It returns what stops
// the board's refresher; the lines stay as last drawn.
func liveTerminal(ios *cmdutil.IOStreams) func() {
	if !ios.IsTerminal() {
		return func() {}
	}
	if _, ok := ios.Out.(*term.Board); ok {
		return func() {}
	}
	mode := term.Detect(true, ios.Getenv)
	if !mode.Live {
		return func() {}
	}
	if f, ok := ios.Out.(interface{ Fd() uintptr }); ok {
		mode.Width = term.Width(f.Fd())
	}
	b := term.NewBoard(ios.Out, mode, nil)
	b.Tick(statusRefresh)
	ios.Out = b
	if f, ok := ios.ErrOut.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			// stderr on the same screen: its lines go above the block too.
			ios.ErrOut = b.Beside(f)
		}
	}
	return b.Close
}

// boardOf is ios's status board; nil when Out is no live terminal.
func boardOf(ios *cmdutil.IOStreams) *term.Board {
	b, _ := ios.Out.(*term.Board)
	return b
}

// runLine is one run's place in the status block: its key and label, and
// where its state is read (db nil: a Temporal client's, events only).
type runLine struct {
	db     *store.Store
	runID  string
	label  string
	unit   string
	status term.Status
}

// showEvent prints one event of a run as a plain line (line "" prints
// none) and, on a live terminal, moves the run's status line: the waits
// of a loop are shown there instead of a line per poll, and its terminal
// takes the line off (the terminal is printed with the proof).
func showEvent(ios *cmdutil.IOStreams, rl *runLine, e engine.Event, line string) {
	b := boardOf(ios)
	if b == nil {
		if line != "" && e.Kind != "terminal" {
			fmt.Fprintln(ios.Out, line)
		}
		return
	}
	if e.Kind == "terminal" {
		b.Remove(rl.runID)
		return
	}
	if e.Kind == "wait" {
		line = ""
	}
	rl.update(e)
	b.Event(rl.runID, rl.status, line)
}

// update reads where the run stands: its stored state when there is one,
// the event otherwise.
func (rl *runLine) update(e engine.Event) {
	s := &rl.status
	s.Label = cmp.Or(s.Label, shortLabel(rl.label))
	if s.Started.IsZero() {
		s.Started = e.Time
	}
	if e.Round > 0 {
		s.Round = e.Round
	}
	if rl.unit != "" {
		s.Unit = rl.unit
	}
	if rl.db != nil {
		if r, err := rl.db.GetRun(context.Background(), rl.runID); err == nil {
			st := statusOfRun(r)
			st.Label = s.Label
			*s = st
		}
	}
	if e.Kind == "wait" {
		s.Phase = "waiting: " + text.Clip(text.OneLine(e.Message), 48)
	} else if rl.db == nil {
		s.Phase = e.Kind
	}
}

// statusOfRun is a run's status line read from its stored state: the
// round (iteration, task), phase, counts, elapsed time and cost.
func statusOfRun(r store.Run) term.Status {
	s := term.Status{Label: r.Target, Started: r.StartedAt}
	switch r.Kind {
	case checkloop.Kind:
		s.Unit = "iteration"
	case plan.Kind:
		s.Unit = "task"
	}
	switch {
	case r.Kind == checkloop.Kind:
		var st checkloop.State
		if json.Unmarshal(r.State, &st) != nil {
			break
		}
		s.Unit, s.Round, s.Of, s.Phase = "iteration", len(st.Iterations), st.Config.MaxIterations, "iterating"
		if n := len(st.Iterations); n > 0 {
			s.Phase = string(st.Iterations[n-1].Stage)
		}
		acc := 0
		for _, it := range st.Iterations {
			if it.Outcome == checkloop.OutcomeAccepted {
				acc++
			}
		}
		s.Counts = []string{fmt.Sprintf("%d accepted", acc)}
	case r.Kind == plan.Kind:
		var st plan.State
		if json.Unmarshal(r.State, &st) != nil {
			break
		}
		ended, running := 0, []string{}
		for _, t := range st.Tasks {
			switch {
			case t.Status != "":
				ended++
			case t.Phase != plan.PhasePending:
				running = append(running, t.ID)
			}
		}
		s.Unit, s.Round, s.Of = "task", ended, len(st.Tasks)
		s.Phase = "tasks"
		if len(running) > 0 {
			s.Phase = "running " + clipList(running, 3)
		}
		s.Counts = []string{fmt.Sprintf("%d/%d tasks ended", ended, len(st.Tasks))}
	case strings.HasPrefix(r.Kind, "pr"):
		var st prloop.State
		if json.Unmarshal(r.State, &st) != nil {
			break
		}
		s.Round, s.Phase = st.Round, string(st.Phase)
		findings := 0
		for _, rd := range st.Rounds {
			findings += len(rd.Findings)
		}
		resolved := 0
		for _, t := range st.Threads {
			if t.Resolved {
				resolved++
			}
		}
		s.Counts = []string{fmt.Sprintf("%d finding(s)", findings), fmt.Sprintf("%d/%d threads resolved", resolved, len(st.Threads))}
	}
	s.Label = shortLabel(r.Target)
	s.Cost = costOf(usageOfRun(r))
	if r.Finished() {
		s.Ended, s.Until = r.Status, r.EndedAt
	}
	return s
}

// shortLabel names a run's target in few columns: owner/repo#N for a
// PR's URL, the directory's name for a local loop's (loop:/path).
func shortLabel(target string) string {
	base, suffix, _ := strings.Cut(target, "#")
	if ref, err := forge.ParsePRURL(base); err == nil {
		l := fmt.Sprintf("%s/%s#%d", ref.Owner, ref.Repo, ref.Number)
		if suffix != "" {
			l += " (" + suffix + ")"
		}
		return l
	}
	if kind, dir, ok := strings.Cut(target, ":"); ok && strings.HasPrefix(dir, "/") {
		return kind + " " + filepath.Base(dir)
	}
	return target
}

// costOf is a run's cost as its status line shows it: what the agents
// reported, never $0 for a cost no agent reported.
func costOf(u *runUsage) string {
	if u == nil {
		return ""
	}
	t := u.Total
	switch {
	case t.CostUSD != nil && t.Cost == agent.CostPartial:
		return fmt.Sprintf("≥$%.2f", *t.CostUSD)
	case t.CostUSD != nil:
		return fmt.Sprintf("$%.2f", *t.CostUSD)
	case t.AgentRuns > 0 || t.TotalTokens > 0:
		return "cost not reported"
	}
	return ""
}
