package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// DefaultGrace is how long a process told to stop at its budget has to
// print its status record before it is killed (AG-T1: told to summarize,
// then stopped).
const DefaultGrace = 10 * time.Second

// OutputTail is how much of each output stream a run keeps. The status
// record is the last line, so the tail is all that parsing needs, and it
// bounds memory for chatty agents.
const OutputTail = 256 << 10

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
	// Parse reads the status record from stdout; nil means ParseStatus.
	// Backends whose CLI wraps the final message (JSON event streams) supply
	// their own, still fail-closed: "no valid record" must come back as
	// Reason ReasonUnparseable, which is how the budget rule tells a record
	// the agent printed from none.
	Parse func(stdout string) StatusRecord
}

// CmdResult is what RunWithBudget observed.
type CmdResult struct {
	Record   StatusRecord
	Stdout   string // last OutputTail bytes
	Stderr   string // last OutputTail bytes
	ExitCode int    // -1 when ended by a signal
	TimedOut bool   // stopped at the budget
	Duration time.Duration
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
	if err := ctx.Err(); err != nil {
		return CmdResult{}, fmt.Errorf("run agent %s: %w", c.Argv[0], err)
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

	stdout, stderr := &tailBuffer{max: OutputTail}, &tailBuffer{max: OutputTail}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(c.Stdin)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// A descendant that escapes the process group may hold the pipes open;
	// don't wait for it longer than the grace period.
	cmd.WaitDelay = grace
	setProcessGroup(cmd)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return CmdResult{}, fmt.Errorf("run agent %s: %w", c.Argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	timer := time.NewTimer(budget)
	defer timer.Stop()
	var waitErr error
	var timedOut bool
	var ctxErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		timedOut = true
		waitErr = stop(cmd, done, grace)
	case <-ctx.Done():
		ctxErr = ctx.Err()
		waitErr = stop(cmd, done, grace)
	}
	killGroup(cmd)

	res := CmdResult{
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
		ExitCode: -1,
		TimedOut: timedOut,
		Duration: time.Since(start),
	}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) && ctxErr == nil {
		return res, fmt.Errorf("run agent %s: %w", c.Argv[0], waitErr)
	}

	rec := parse(res.Stdout)
	valid := rec.Reason != ReasonUnparseable
	switch {
	case timedOut && !valid:
		rec = StatusRecord{
			Status:       StatusPartial,
			Reason:       ReasonBudgetExceeded,
			Summary:      fmt.Sprintf("stopped at the %s budget without a status record", budget),
			FilesChanged: []string{},
		}
	case timedOut:
		rec.Concerns = append(rec.Concerns, fmt.Sprintf("stopped at the %s budget", budget))
	case valid && res.ExitCode != 0:
		rec.Concerns = append(rec.Concerns, fmt.Sprintf("agent exited with code %d", res.ExitCode))
	case !valid && res.ExitCode != 0:
		rec.Summary += fmt.Sprintf(" (exit code %d)", res.ExitCode)
	}
	res.Record = rec
	if ctxErr != nil {
		return res, fmt.Errorf("run agent %s: %w", c.Argv[0], ctxErr)
	}
	return res, nil
}

// stop asks the process group to end, then forces it.
func stop(cmd *exec.Cmd, done <-chan error, grace time.Duration) error {
	signalGroup(cmd, false)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		signalGroup(cmd, true)
		return <-done
	}
}

// tailBuffer keeps the last max bytes written. exec gives each stream its
// own copying goroutine, and a buffer is read only after Wait, so no lock.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
