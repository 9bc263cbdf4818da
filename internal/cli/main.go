// Package cli holds converge's commands: one file per command, each with an
// options struct and a run function, and Main, which maps errors to the
// exit codes of IF-1.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/secure"
)

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
	ios := cmdutil.System()
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
func Run(ctx context.Context, args []string, ios *cmdutil.IOStreams) exitcode.Code {
	if ios.Getenv == nil {
		ios.Getenv = os.Getenv
	}
	defer liveTerminal(ios)()
	root := NewRootCmd(cmdutil.NewFactory(ios))
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
	}
	code := cmdutil.ExitCodeOf(err)
	var se *cmdutil.SilentExit
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
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
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
			var ee *cmdutil.ExitErr
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return &cmdutil.ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("%w (see --help)", err)}
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
		return &cmdutil.ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("%w (see --help)", err)}
	})
	// Unknown commands are usage errors (exit 2), not a silent help page.
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return cmdutil.UsageErr("unknown command %q (see converge --help)", args[0])
		}
		return cmd.Help()
	}
	return root
}
