package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/convergeloop/converge/internal/proc"
)

// DefaultGrace is how long a process told to stop at its budget has to
// print its status record before it is killed (AG-T1: told to summarize,
// then stopped).
const DefaultGrace = proc.DefaultGrace

// OutputTail is how much of each output stream a run keeps. The status
// record is the last line, so the tail is all that parsing needs, and it
// bounds memory for chatty agents.
const OutputTail = 256 << 10

// DefaultMaxRead bounds the output an agent run may write, stdout and
// stderr together: an agent that writes more (a loop printing, a binary
// dumped to the terminal) is stopped at once, its record blocked with
// reason output-flood, rather than read until its budget ends (REL-3).
// No agent's answer comes near it: a run keeps only OutputTail of each
// stream.
const DefaultMaxRead int64 = 64 << 20

// Cmd is a subprocess to run under a time-box.
type Cmd struct {
	Argv  []string
	Dir   string
	Env   []string // nil means ScrubEnv(os.Environ()), never the full environment
	Stdin []byte
	// Budget is the time-box; zero means DefaultBudget.
	Budget time.Duration
	// Grace is the time between SIGTERM and SIGKILL; zero means DefaultGrace.
	Grace time.Duration
	// Clock times the budget and the grace; nil is the real clock.
	Clock proc.Clock
	// StdoutHead keeps the first this many bytes of stdout beside the
	// tail (see CmdResult.StdoutHead).
	StdoutHead int
	// Parse reads the status record from stdout; nil means ParseStatus.
	// Backends whose CLI wraps the final message (JSON event streams) supply
	// their own, still fail-closed: "no valid record" must come back as
	// Reason ReasonUnparseable, which is how the budget rule tells a record
	// the agent printed from none.
	Parse func(stdout string) StatusRecord
	// Watch, when set, reads each line of the run's output as it comes
	// (stderr true for stderr) for what it says of the CLI's model
	// connection (see Signal): an authentication failure stops the run at
	// once, a failing endpoint once RetryBound has passed without the
	// model answering — not at the budget.
	Watch func(stderr bool, line string) Signal
	// RetryBound is how long a Watch's Retry may go on; zero means
	// DefaultRetryBound.
	RetryBound time.Duration
	// MaxRead bounds the bytes the run may write, both streams together;
	// zero means DefaultMaxRead, below zero no bound.
	MaxRead int64
	// Writable are the places beside Dir the contained run may write
	// (SEC-7): its CLI's own configuration, login and sessions (Home).
	Writable []string
	// ReadOnly: the contained run may not write Dir (review and judge
	// runs read, never edit).
	ReadOnly bool
}

// CmdResult is what RunWithBudget observed.
type CmdResult struct {
	Record StatusRecord
	Stdout string // last OutputTail bytes
	// StdoutHead is the first Cmd.StdoutHead bytes of stdout, set only
	// when the tail no longer holds them.
	StdoutHead string
	Stderr     string // last OutputTail bytes
	ExitCode   int    // -1 when ended by a signal
	TimedOut   bool   // stopped at the budget
	// Flooded: the run wrote more than Cmd.MaxRead and was killed at
	// once; the Record is then blocked with reason output-flood.
	Flooded  bool
	Duration time.Duration
	// Failure is the CLI's own error that stopped the run (Cmd.Watch);
	// the Record is then blocked with reason cli-error.
	Failure *CLIError
}

// RunWithBudget runs c.Argv in c.Dir and enforces the time-box (AG-T1). At
// the budget the whole process group gets SIGTERM — the agent's cue to
// print its record — and SIGKILL after the grace period; the group is also
// killed when the leader exits, so an agent leaves no processes behind.
//
// The record is c.Parse(stdout). A run stopped at its budget that printed
// no valid record is {partial, reason budget-exceeded}; one that did keeps
// its record, with the stop noted in Concerns. A non-zero exit keeps a
// valid record too, with a concern. The error is non-nil only when the
// process could not be started or ctx ended the run (then the Result holds
// what was captured).
func RunWithBudget(ctx context.Context, c Cmd) (CmdResult, error) {
	if len(c.Argv) == 0 {
		return CmdResult{}, errors.New("run agent: empty argv")
	}
	budget := c.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	env := c.Env
	if env == nil {
		env = ScrubEnv(os.Environ())
	}
	parse := c.Parse
	if parse == nil {
		parse = ParseStatus
	}
	maxRead := c.MaxRead
	switch {
	case maxRead == 0:
		maxRead = DefaultMaxRead
	case maxRead < 0:
		maxRead = 0 // proc's "none"
	}

	spec := proc.Spec{
		Argv: c.Argv, Dir: c.Dir, Env: env, Stdin: c.Stdin,
		Budget: budget, Grace: grace, MaxOutput: OutputTail, Clock: c.Clock, StdoutHead: c.StdoutHead,
		MaxRead: maxRead, Writable: c.Writable, ReadOnly: c.ReadOnly,
	}
	var w *watch
	if c.Watch != nil {
		var clock proc.Clock = c.Clock
		if clock == nil {
			clock = realTimers{}
		}
		w = newWatch(c.Watch, c.RetryBound, clock)
		spec.OnLine, spec.Abort = w.line, w.abort
	}
	p, err := proc.Run(ctx, spec)
	if w != nil {
		defer w.finish()
	}
	if !p.Started {
		return CmdResult{}, fmt.Errorf("run agent %s: %w", c.Argv[0], errors.Unwrap(err))
	}
	res := CmdResult{
		Stdout:   p.Stdout,
		Stderr:   p.Stderr,
		ExitCode: p.ExitCode,
		TimedOut: p.TimedOut,
		Flooded:  p.Flooded,
		Duration: p.Duration,
	}
	if p.StdoutDropped > 0 {
		res.StdoutHead = p.StdoutHead
	}
	if err != nil {
		return res, fmt.Errorf("run agent %s: %w", c.Argv[0], errors.Unwrap(err))
	}

	if p.Flooded {
		// Whatever it printed last is cut off mid-flood: no record.
		res.Record = FloodRecord(maxRead)
		return res, nil
	}
	if w != nil {
		if f := w.finish(); f != nil {
			res.Failure = f
			res.Record = StatusRecord{Status: StatusBlocked, Reason: ReasonCLIError, Summary: f.Error(), FilesChanged: []string{}}
			return res, nil
		}
	}
	rec := parse(res.Stdout)
	valid := rec.Reason != ReasonUnparseable
	switch {
	case p.TimedOut && !valid:
		rec = StatusRecord{
			Status:       StatusPartial,
			Reason:       ReasonBudgetExceeded,
			Summary:      fmt.Sprintf("stopped at the %s budget without a status record", budget),
			FilesChanged: []string{},
		}
	case p.TimedOut:
		rec.Concerns = append(rec.Concerns, fmt.Sprintf("stopped at the %s budget", budget))
	case valid && res.ExitCode != 0:
		rec.Concerns = append(rec.Concerns, fmt.Sprintf("agent exited with code %d", res.ExitCode))
	case !valid && res.ExitCode != 0:
		rec.Summary += fmt.Sprintf(" (exit code %d)", res.ExitCode)
	}
	res.Record = rec
	if p.Interrupted != nil {
		return res, fmt.Errorf("run agent %s: %w", c.Argv[0], p.Interrupted)
	}
	return res, nil
}

// FloodRecord is the record of a run stopped for writing more than max
// bytes of output: blocked, reason output-flood.
func FloodRecord(max int64) StatusRecord {
	return StatusRecord{Status: StatusBlocked, Reason: ReasonOutputFlood,
		Summary: fmt.Sprintf("the agent wrote more than %s of output; stopped", bytesWords(max)), FilesChanged: []string{}}
}

// bytesWords is n in MiB when it is a whole number of them, else in bytes.
func bytesWords(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReasonCLIError is the reason of a run's record when the CLI itself
// reported that it could not do the run (a *CLIError).
const ReasonCLIError = "cli-error"

type realTimers struct{}

func (realTimers) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
