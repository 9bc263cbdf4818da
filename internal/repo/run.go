package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/proc"
)

// DefaultMaxOutput is RunCommand's output limit when maxOutput <= 0.
const DefaultMaxOutput = proc.DefaultMaxOutput

// commandGrace is how long a build or test stopped at its budget, or by
// ctx, has between SIGTERM and SIGKILL: enough for a test runner to print
// which test was running, not so long that a hung one holds the round.
const commandGrace = 5 * time.Second

// RunCommand runs argv in dir and returns its combined stdout and stderr,
// keeping only the last maxOutput bytes (a failing test prints its verdict
// last), and its exit code. A command that runs and fails is not an error:
// err is nil and exitCode non-zero. err reports a command that could not
// start (exitCode -1) or was stopped because ctx ended (the context's
// error): then the whole process group is stopped, so test runners' child
// processes do not linger.
//
// env is the complete environment, as in exec.Cmd (nil inherits this
// process's); build and test commands should get agent.ScrubEnv(os.Environ()).
func RunCommand(ctx context.Context, dir string, argv []string, env []string, maxOutput int) (output string, exitCode int, err error) {
	r, err := RunTimeBoxed(ctx, dir, argv, env, maxOutput, 0)
	return r.Output, r.ExitCode, err
}

// CommandResult is one run of a build or test command.
type CommandResult struct {
	Output   string // combined stdout and stderr, the tail kept
	ExitCode int    // -1 when it never ran or was stopped
	// TimedOut: stopped at its budget; a test run that timed out is red,
	// whatever it printed (AG-T5).
	TimedOut bool
	Duration time.Duration
}

// RunTimeBoxed is RunCommand with a time-box (AG-T5, PR-S10): at budget
// (none when zero) the command's process group is told to stop and is
// killed shortly after, like an agent's (AG-T1). A run stopped at its
// budget is not an error: TimedOut is set and ExitCode is -1.
func RunTimeBoxed(ctx context.Context, dir string, argv []string, env []string, maxOutput int, budget time.Duration) (CommandResult, error) {
	if len(argv) == 0 {
		return CommandResult{ExitCode: -1}, errors.New("run command: empty argv")
	}
	if maxOutput <= 0 {
		maxOutput = DefaultMaxOutput
	}
	p, err := proc.Run(ctx, proc.Spec{
		Argv: argv, Dir: dir, Env: env,
		Budget: budget, Grace: commandGrace, MaxOutput: maxOutput, Combined: true,
	})
	r := CommandResult{
		Output:   proc.WithDropNote(p.Stdout, p.StdoutDropped),
		ExitCode: p.ExitCode,
		TimedOut: p.TimedOut,
		Duration: p.Duration,
	}
	switch {
	case err != nil:
		return r, err
	case p.Interrupted != nil:
		r.ExitCode = -1
		return r, fmt.Errorf("run %s: %w", argv[0], p.Interrupted)
	case p.TimedOut:
		r.ExitCode = -1
		return r, nil
	case p.ExitCode < 0:
		return r, fmt.Errorf("run %s: killed by a signal", argv[0])
	}
	return r, nil
}
