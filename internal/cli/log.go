package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

type logOptions struct {
	StateDir string
	engine   engineOptions
	// RunID is the run whose log to print (the argument).
	RunID string
	// factory opens the store (nil: the real one).
	factory *cmdutil.Factory
}

func newLogCmd(factory *cmdutil.Factory, runF func(*logOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &logOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "log RUN",
		Example: `  # a run's decision log (converge status lists the runs)
  converge log r-20261207-ae0f65

  # on the fleet: the workflow of a PR
  converge log --engine temporal https://github.com/acme/widget/pull/42`,
		Short: "Print a run's decision log as markdown",
		Long: `Print a run's decision log as markdown (PR-M5): each round with its
review, findings (source, author, verdict, disposition) and commit, the
guards, every decision in order, the terminal and the proof. It reads
only the state store; a run still going shows what it has so far.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErr("log needs exactly one run id (see converge status)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runLog(cmd.Context(), ios, opts, opts.RunID)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	addReadEngineFlags(cmd.Flags(), &opts.engine)
	return cmd
}

func runLog(ctx context.Context, ios *cmdutil.IOStreams, opts *logOptions, id string) error {
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.engine.temporal() {
		r, recs, err := workflowRun(ctx, &opts.engine, id)
		if err != nil {
			return err
		}
		return writeRunLog(ctx, ios, recs, r)
	}
	db, r, err := opts.factory.OrDefault(ios).OpenRun(ctx, opts.StateDir, id)
	if err != nil {
		return err
	}
	defer db.Close()
	return writeRunLog(ctx, ios, db, r)
}

// runRecords are what a run's log reads besides the run itself: the
// state store's records, or what a Temporal workflow keeps.
type runRecords interface {
	Rounds(ctx context.Context, runID string) ([]store.Round, error)
	Findings(ctx context.Context, runID string) ([]store.Finding, error)
	Events(ctx context.Context, runID string) ([]store.Event, error)
	Tickets(ctx context.Context, runID string) ([]store.Ticket, error)
}

var _ runRecords = (*store.Store)(nil)

// writeRunLog writes r's log as its kind writes it.
func writeRunLog(ctx context.Context, ios *cmdutil.IOStreams, db runRecords, r store.Run) error {
	id := r.ID
	var err error
	if r.Kind == checkloop.Kind {
		return writeLoopLog(ctx, ios, db, r)
	}
	if r.Kind == plan.Kind {
		return writePlanLog(ctx, ios, db, r)
	}
	if !strings.HasPrefix(r.Kind, "pr") {
		return cmdutil.UsageErr("run %s is a %s run; its log is not a PR decision log", id, r.Kind)
	}
	rec := prloop.RunRecord{Run: r}
	if rec.Rounds, err = db.Rounds(ctx, id); err != nil {
		return fmt.Errorf("read rounds of %s: %w", id, err)
	}
	if rec.Findings, err = db.Findings(ctx, id); err != nil {
		return fmt.Errorf("read findings of %s: %w", id, err)
	}
	if rec.Events, err = db.Events(ctx, id); err != nil {
		return fmt.Errorf("read events of %s: %w", id, err)
	}
	return prloop.WriteDecisionLog(ios.Out, rec)
}
