// Package cli holds converge's commands: one file per command, each with an
// options struct and a run function, and Main, which maps errors to the
// exit codes of IF-1.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/secure"
)

// IOStreams are the command's streams; tests swap in buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// IsTTY says whether Out is a terminal (live status lines vs plain).
	IsTTY bool
	// Getenv reads the environment; tests replace it. Main's also sees the
	// token variables secure.Harden took out of the process environment.
	Getenv func(string) string
	// Environ lists the environment (nil: the process's), for the check
	// of CONVERGE_* variables that name no setting.
	Environ func() []string
	// Backend builds an agent CLI backend by name (nil: backends.New);
	// tests put a double here.
	Backend func(backends.Config) (agent.Agent, error)
}

// checkEnv refuses an unknown CONVERGE_* variable (IF-1: exit 2).
func (ios *IOStreams) checkEnv() error {
	env := os.Environ
	if ios.Environ != nil {
		env = ios.Environ
	}
	if err := config.CheckEnv(config.PRFields(), env()); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// System returns the process's streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, IsTTY: stdoutIsTerminal(), Getenv: os.Getenv}
}

// ExitErr carries an exit code with the one-line message to print.
type ExitErr struct {
	Code exitcode.Code
	Err  error
}

func (e *ExitErr) Error() string { return e.Err.Error() }
func (e *ExitErr) Unwrap() error { return e.Err }

// usageErr is bad input: exit 2.
func usageErr(format string, args ...any) error {
	return &ExitErr{Code: exitcode.Usage, Err: fmt.Errorf(format, args...)}
}

// silentExit ends with a code whose message was already printed.
type silentExit struct{ code exitcode.Code }

func (s *silentExit) Error() string { return fmt.Sprintf("exit %d", int(s.code)) }

// ExitCodeOf maps an error to its IF-1 exit code.
func ExitCodeOf(err error) exitcode.Code {
	if err == nil {
		return exitcode.OK
	}
	var se *silentExit
	if errors.As(err, &se) {
		return se.code
	}
	var ee *ExitErr
	if errors.As(err, &ee) {
		return ee.Code
	}
	if agent.KindOf(err) == agent.FailAuth {
		// An agent CLI's credentials, not the forge's (AG-T4).
		return exitcode.Auth
	}
	switch forge.KindOf(err) {
	case forge.KindAuth:
		return exitcode.Auth
	case forge.KindUnreachable, forge.KindRateLimited:
		return exitcode.Unreachable
	}
	return exitcode.Error
}

// Main runs converge with the process's arguments and returns the exit code.
//
// It first hides the forge token from other processes of the same user
// (SEC-2), which may re-exec the binary; tests that call Run directly stay
// in process. Before that, a start as a supervisor (proc.Supervise) never
// reaches the command line.
func Main() int {
	// A start as an agent's or a build's supervisor (AG-K1) is not a
	// command line: it supervises and exits here.
	proc.Supervise()
	start, err := secure.Harden(os.Args)
	ios := System()
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "converge: %s\n", oneLine(err.Error()))
		return int(exitcode.Error)
	}
	if start.Warning != "" {
		fmt.Fprintf(ios.ErrOut, "converge: warning: %s\n", oneLine(start.Warning))
	}
	ios.Getenv = start.Getenv(os.Getenv)
	var args []string
	if len(start.Args) > 1 {
		args = start.Args[1:]
	}
	// Before the interrupt handler takes ErrOut: what it says goes above
	// the status lines too.
	defer liveTerminal(ios)()
	ctx, stop := withInterrupts(context.Background(), ios.ErrOut)
	defer stop()
	return int(Run(ctx, args, ios))
}

// Run executes one command line; it is what tests and Main call.
func Run(ctx context.Context, args []string, ios *IOStreams) exitcode.Code {
	if ios.Getenv == nil {
		ios.Getenv = os.Getenv
	}
	defer liveTerminal(ios)()
	root := NewRootCmd(NewFactory(ios))
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
	}
	code := ExitCodeOf(err)
	var se *silentExit
	if !errors.As(err, &se) {
		fmt.Fprintf(ios.ErrOut, "converge: %s\n", oneLine(err.Error()))
	}
	return code
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// NewRootCmd builds the command tree over f.
func NewRootCmd(f *Factory) *cobra.Command {
	root := newRoot()
	root.AddCommand(
		newSandboxCmd(f, nil),
		newDemoCmd(f, nil),
		newPRCmd(f, nil),
		newServeCmd(f, nil),
		newBenchCmd(f, nil),
		newStatusCmd(f, nil),
		newProofCmd(f, nil),
		newLogCmd(f, nil),
		newConfigCmd(f, nil),
		newStopCmd(f, nil),
		newLoopCmd(f, nil),
		newPlanCmd(f, nil),
		newDoctorCmd(f, nil),
		newWorkerCmd(f, nil),
		newInitCmd(f, nil),
		newDashboardCmd(f, nil),
		newMCPCmd(f, nil),
	)
	addVersion(root, f)
	argsAreUsage(root)
	completeValues(root, f)
	return root
}

// argsAreUsage makes a refused argument of every command under c a usage
// error (exit 2), as a refused flag is: cobra's own checks (cobra.NoArgs:
// `converge status extra`) return plain errors.
func argsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ee *ExitErr
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return &ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("%w (see --help)", err)}
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}

// newRoot is the root command without its subcommands: flag errors and
// unknown commands are usage errors (exit 2).
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "converge",
		Short:         "Drive AI coding agents until a pull request is review-clean, proven on the forge",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("%w (see --help)", err)}
	})
	// Unknown commands are usage errors (exit 2), not a silent help page.
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr("unknown command %q (see converge --help)", args[0])
		}
		return cmd.Help()
	}
	return root
}
