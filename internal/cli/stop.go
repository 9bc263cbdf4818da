package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/store"
)

type stopOptions struct {
	StateDir string
	engine   engineOptions
	// RunID is the run to stop (the argument).
	RunID string
	// factory opens the store (nil: the real one).
	factory *cmdutil.Factory
}

func newStopCmd(factory *cmdutil.Factory, runF func(*stopOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &stopOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "stop RUN",
		Example: `  converge stop r-20261207-ae0f65

  # the fleet's workflow of a PR
  converge stop --engine temporal https://github.com/acme/widget/pull/42`,
		Short: "Ask a running loop to end cleanly at its next step",
		Long: `Ask a running loop to end cleanly at its next step: it finishes the
action in flight, records stopped-by-human (exit 3) and releases its lock.
A push and the replies and resolves of the threads it addresses are one
step: a fix in flight is pushed and answered before the run ends (PR-G5).
Ctrl-C (SIGINT) or SIGTERM on the running converge asks the same; a second
one aborts at once. From the pull request, a trusted human can do the same
with the converge:stop label.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErr("stop needs exactly one run id (see converge status)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runStop(cmd.Context(), ios, opts, opts.RunID)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	addReadEngineFlags(cmd.Flags(), &opts.engine)
	return cmd
}

func runStop(ctx context.Context, ios *cmdutil.IOStreams, opts *stopOptions, id string) error {
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.engine.temporal() {
		return stopWorkflow(ctx, ios, &opts.engine, id)
	}
	db, err := opts.factory.OrDefault(ios).OpenExistingStore(ctx, opts.StateDir, id)
	if err != nil {
		return err
	}
	defer db.Close()
	err = db.RequestStop(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return cmdutil.UsageErr("no run %q in the state store (see converge status)", id)
	}
	if err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	fmt.Fprintf(ios.Out, "stop requested for run %s; it ends at its next step\n", id)
	return nil
}
