package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/bench"
)

type benchOptions struct {
	JSON  bool
	Scale string
}

func newBenchCmd(ios *IOStreams) *cobra.Command {
	opts := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure what converge spends at the forge, beside a baseline, on the emulator",
		Long: `Run scripted PR scenarios on the GitHub emulator with no-op agents and
print what converge spends, side by side with a baseline that talks to
GitHub as a plain PR loop does (separate calls for the PR, its comments,
threads, requested reviewers and events on every poll; one request per
reply and per resolve), every request counted at the emulator: requests
and primary points per poll of an idle PR, write requests for a round's
replies and resolves at 5, 20 and 50 threads, the memory of idle loops,
and Decide's time at 500 threads. --scale small runs in make test;
--scale full is what BENCHMARKS.md records.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			scale := bench.Scale(opts.Scale)
			if scale != bench.Small && scale != bench.Full {
				return usageErr("--scale %q: want small or full", opts.Scale)
			}
			progress := func(s string) { fmt.Fprintln(ios.ErrOut, "bench: "+s) }
			r, err := bench.Run(cmd.Context(), bench.Options{Scale: scale, Progress: progress})
			if err != nil {
				return err
			}
			if opts.JSON {
				enc := json.NewEncoder(ios.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			printBench(ios, r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the figures as JSON")
	cmd.Flags().StringVar(&opts.Scale, "scale", "small", "small (seconds) or full (what BENCHMARKS.md records)")
	return cmd
}

func printBench(ios *IOStreams, r *bench.Report) {
	w := ios.Out
	fmt.Fprintf(w, "converge bench (%s scale, %s, %d CPUs); counted at the emulator\n\n", r.Scale, r.GoVersion, r.CPUs)
	fmt.Fprintf(w, "%-44s %12s %12s\n", "", "converge", "baseline")
	o := r.Observation
	fmt.Fprintf(w, "%-44s %12d %12d\n", "requests per poll of an idle PR", o.Converge.Total, o.Baseline.Total)
	fmt.Fprintf(w, "%-44s %12d %12d\n", "primary points per poll of an idle PR", o.Converge.PrimaryPoints, o.Baseline.PrimaryPoints)
	for _, wr := range r.Writes {
		fmt.Fprintf(w, "%-44s %12d %12d\n", fmt.Sprintf("write requests, a round of %d threads", wr.Threads), wr.Converge.Writes, wr.Baseline.Writes)
	}
	fmt.Fprintln(w)
	for _, il := range r.IdleLoops {
		fmt.Fprintf(w, "%d idle loops: %.1f MiB RSS, %.1f KiB RSS per loop (%.1f KiB heap and stack)\n", il.Loops, il.RSSMiB, il.KiBPerLoop, il.HeapKiBLoop)
	}
	for _, d := range r.Decide {
		fmt.Fprintf(w, "Decide at %d threads, %s: %.0f µs\n", d.Threads, d.Step, d.Micros)
	}
	if c := r.ClassifyNew; c.Threads > 0 {
		fmt.Fprintf(w, "classifying %d new comments, once, when first observed: %.0f µs\n", c.Threads, c.Micros)
	}
}
