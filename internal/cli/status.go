package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/text"
)

type statusOptions struct {
	StateDir string
	JSON     bool
	Limit    int
	engine   engineOptions
	// factory opens the store (nil: the real one).
	factory *cmdutil.Factory

	// Follow is the run --follow follows.
	Follow string
}

func newStatusCmd(factory *cmdutil.Factory, runF func(*statusOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &statusOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "status",
		Example: `  converge status

  # every run, as JSON
  converge status --limit 0 --json

  # follow a run another terminal drives
  converge status --follow r-20261207-ae0f65`,
		Short: "List runs from the state store",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runStatus(cmd.Context(), ios, opts)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&opts.Limit, "limit", 20, "how many runs, newest first (0: all); a cut list says so")
	cmd.Flags().StringVar(&opts.Follow, "follow", "", "follow run `RUN` from another terminal: print its events until it ends, then exit with its exit code")
	addReadEngineFlags(cmd.Flags(), &opts.engine)
	return cmd
}

// runView is a run as status and proof print it.
type runView struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind"`
	Target   string         `json:"target"`
	Status   string         `json:"status"`
	ExitCode *exitcode.Code `json:"exit_code,omitempty"`
	Started  time.Time      `json:"started_at"`
	Updated  time.Time      `json:"updated_at"`
	Ended    *time.Time     `json:"ended_at,omitempty"`
	// Alive, for a run not finished: whether a converge holds it now.
	// One that does not (killed, or left for a human) is resumed by the
	// same command.
	Alive *bool           `json:"alive,omitempty"`
	Proof json.RawMessage `json:"proof,omitempty"`
	// Usage is what the run's agents reported consuming (converge proof
	// only): per round, iteration or task, and in total.
	Usage *runUsage `json:"usage,omitempty"`
	// ForgeSpend is what the run's forge calls cost, as the forge said
	// it, and the limit as it last said it (forgespend.go).
	ForgeSpend *forgeSpendView `json:"forge_spend,omitempty"`
}

func viewOf(r store.Run) runView {
	v := runView{ID: r.ID, Kind: r.Kind, Target: r.Target, Status: r.Status, Started: r.StartedAt, Updated: r.UpdatedAt, Proof: r.Proof}
	if r.Finished() {
		code, end := r.ExitCode, r.EndedAt
		v.ExitCode, v.Ended = &code, &end
	}
	return v
}

func runStatus(ctx context.Context, ios *cmdutil.IOStreams, opts *statusOptions) error {
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.Follow != "" {
		return followRun(ctx, ios, opts)
	}
	if opts.engine.temporal() {
		return runStatusTemporal(ctx, ios, opts)
	}
	db, err := opts.factory.OrDefault(ios).OpenExistingStore(ctx, opts.StateDir, "")
	if errors.Is(err, cmdutil.ErrNoStore) {
		if opts.JSON {
			fmt.Fprintln(ios.Out, "[]")
			return nil
		}
		fmt.Fprintln(ios.Out, "no runs yet")
		return nil
	}
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.Limit < 0 {
		return cmdutil.UsageErr("--limit %d: give a number of runs, or 0 for all", opts.Limit)
	}
	limit := opts.Limit
	if limit > 0 {
		limit++ // one more tells whether the list was cut
	}
	runs, err := db.ListRuns(ctx, store.ListOptions{Limit: limit})
	if err != nil {
		return err
	}
	if opts.Limit > 0 && len(runs) > opts.Limit {
		runs = runs[:opts.Limit]
		// Said on stderr, so the table and the JSON stay what they are.
		defer fmt.Fprintf(ios.ErrOut, "converge: showing the %d newest runs; there are more (--limit N shows N, --limit 0 all)\n", opts.Limit)
	}
	// alive tells an unfinished run some converge holds from one no
	// process runs any more.
	alive := func(r store.Run) (bool, error) {
		holder, live, err := db.LockLive(ctx, r.Target)
		return live && holder == r.ID, err
	}
	spends, err := runSpends(ctx, db, runs)
	if err != nil {
		return err
	}
	return printRuns(ios, opts.JSON, runs, alive, spends)
}

// printRuns prints runs as the status table or JSON; alive tells an
// unfinished run some converge holds from one no process runs any more;
// spends are the runs' forge spend by id (nil: not known).
func printRuns(ios *cmdutil.IOStreams, asJSON bool, runs []store.Run, alive func(store.Run) (bool, error), spends map[string]*forgeSpendView) error {
	if asJSON {
		type statusView struct {
			runView
			// Why a run that ended non-zero ended so, in its terminal's
			// words (an agent CLI's own message among them).
			Why string `json:"why,omitempty"`
		}
		views := make([]statusView, 0, len(runs))
		for _, r := range runs {
			v := viewOf(r)
			v.Proof, v.ForgeSpend = nil, spends[r.ID]
			if !r.Finished() {
				a, err := alive(r)
				if err != nil {
					return err
				}
				v.Alive = &a
			}
			views = append(views, statusView{runView: v, Why: whyEnded(r)})
		}
		return json.NewEncoder(ios.Out).Encode(views)
	}
	if len(runs) == 0 {
		fmt.Fprintln(ios.Out, "no runs yet")
		return nil
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tEXIT\tSTARTED\tTARGET\tFORGE\tLEFT\tWHY")
	for _, r := range runs {
		exit, status := "-", r.Status
		if r.Finished() {
			exit = fmt.Sprint(r.ExitCode)
		} else if a, err := alive(r); err != nil {
			return err
		} else if !a {
			status = "stopped"
		}
		sp := spends[r.ID]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, status, exit, r.StartedAt.Local().Format(time.DateTime), r.Target,
			sp.spentCell(), sp.leftCell(), text.Clip(whyEnded(r), 160))
	}
	return tw.Flush()
}

// runStatusTemporal lists converge's workflows on the cluster as status
// lists runs; a running workflow is alive (a worker takes it up).
func runStatusTemporal(ctx context.Context, ios *cmdutil.IOStreams, opts *statusOptions) error {
	if opts.Limit < 0 {
		return cmdutil.UsageErr("--limit %d: give a number of runs, or 0 for all", opts.Limit)
	}
	c, err := opts.engine.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	limit := opts.Limit
	if limit > 0 {
		limit++ // one more tells whether the list was cut
	}
	runs, err := temporal.ListRuns(ctx, c, limit)
	if err != nil {
		return err
	}
	if opts.Limit > 0 && len(runs) > opts.Limit {
		runs = runs[:opts.Limit]
		defer fmt.Fprintf(ios.ErrOut, "converge: showing the %d newest runs; there are more (--limit N shows N, --limit 0 all)\n", opts.Limit)
	}
	spends := map[string]*forgeSpendView{}
	for _, r := range runs {
		spends[r.ID] = workflowSpend(ctx, c, r.ID)
	}
	return printRuns(ios, opts.JSON, runs, func(r store.Run) (bool, error) { return r.Status == store.StatusRunning, nil }, spends)
}

// whyEnded is the terminal's message of a run that ended non-zero (every
// loop kind's state has one), "" for any other run.
func whyEnded(r store.Run) string {
	if !r.Finished() || r.ExitCode == exitcode.OK || len(r.State) == 0 {
		return ""
	}
	var st struct {
		Terminal *struct {
			Message string `json:"message"`
		} `json:"terminal"`
	}
	if json.Unmarshal(r.State, &st) != nil || st.Terminal == nil {
		return ""
	}
	return text.OneLine(st.Terminal.Message)
}

type proofOptions struct {
	StateDir string
	JSON     bool
	engine   engineOptions
	// RunID is the run whose proof to print (the argument).
	RunID string
	// factory opens the store (nil: the real one).
	factory *cmdutil.Factory
}

func newProofCmd(factory *cmdutil.Factory, runF func(*proofOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &proofOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "proof RUN",
		Example: `  converge proof r-20261207-ae0f65

  # as JSON, for a script
  converge proof --json r-20261207-ae0f65`,
		Short: "Print a run's stored proof of convergence",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErr("proof needs exactly one run id (see converge status)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runProof(cmd.Context(), ios, opts, opts.RunID)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	addReadEngineFlags(cmd.Flags(), &opts.engine)
	return cmd
}

func runProof(ctx context.Context, ios *cmdutil.IOStreams, opts *proofOptions, id string) error {
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	var r store.Run
	var spend *forgeSpendView
	if opts.engine.temporal() {
		var recs *workflowRecords
		var err error
		if r, recs, err = workflowRun(ctx, &opts.engine, id); err != nil {
			return err
		}
		spend = recs.spend
	} else {
		db, run, err := opts.factory.OrDefault(ios).OpenRun(ctx, opts.StateDir, id)
		if err != nil {
			return err
		}
		defer db.Close()
		r = run
		spends, err := runSpends(ctx, db, []store.Run{r})
		if err != nil {
			return err
		}
		spend = spends[r.ID]
	}
	usage := usageOfRun(r)
	if opts.JSON {
		v := viewOf(r)
		v.Usage, v.ForgeSpend = usage, spend
		return json.NewEncoder(ios.Out).Encode(v)
	}
	if len(r.Proof) == 0 {
		fmt.Fprintf(ios.Out, "run %s ended %s: no proof (only a two-stable finish has one)\n", r.ID, r.Status)
		// Why it did not end two-stable, e.g. red CI (PR-V5).
		var st prloop.State
		if json.Unmarshal(r.State, &st) == nil && st.Terminal != nil && st.Terminal.Message != "" {
			fmt.Fprintf(ios.Out, "  why: %s\n", st.Terminal.Message)
			if f := st.Terminal.AgentFailure; f != nil {
				fmt.Fprintf(ios.Out, "  agent that could not run     %s: %s\n", f.Agent, f.Message)
			}
		}
		writeUsage(ios.Out, usage)
		writeForgeSpend(ios.Out, spend)
		if !r.Finished() {
			return &cmdutil.SilentExit{Code: exitcode.Error}
		}
		return &cmdutil.SilentExit{Code: exitOrError(r.ExitCode)}
	}
	var p prloop.Proof
	if err := json.Unmarshal(r.Proof, &p); err != nil {
		return fmt.Errorf("decode proof of %s: %w", id, err)
	}
	printProof(ios, r.ID, &p)
	if p.Usage == nil && usage != nil {
		// A proof stored before it carried usage: the state's.
		writeUsage(ios.Out, usage)
	}
	writeForgeSpend(ios.Out, spend)
	return nil
}

func exitOrError(code exitcode.Code) exitcode.Code {
	if code == 0 {
		return exitcode.Error
	}
	return code
}
