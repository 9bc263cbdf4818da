package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

type logOptions struct {
	StateDir string
}

func newLogCmd(ios *IOStreams) *cobra.Command {
	opts := &logOptions{}
	cmd := &cobra.Command{
		Use:   "log RUN",
		Short: "Print a run's decision log as markdown",
		Long: `Print a run's decision log as markdown (PR-M5): each round with its
review, findings (source, author, verdict, disposition) and commit, the
guards, every decision in order, the terminal and the proof. It reads
only the state store; a run still going shows what it has so far.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("log needs exactly one run id (see converge status)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLog(cmd.Context(), ios, opts, args[0])
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	return cmd
}

func runLog(ctx context.Context, ios *IOStreams, opts *logOptions, id string) error {
	db, err := openExistingStore(ctx, ios, opts.StateDir, id)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := db.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return usageErr("no run %q in the state store (see converge status)", id)
	}
	if err != nil {
		return err
	}
	if r.Kind == checkloop.Kind {
		return writeLoopLog(ctx, ios, db, r)
	}
	if r.Kind == plan.Kind {
		return writePlanLog(ctx, ios, db, r)
	}
	if !strings.HasPrefix(r.Kind, "pr") {
		return usageErr("run %s is a %s run; its log is not a PR decision log", id, r.Kind)
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
