package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/bench"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/store"
)

type benchOptions struct {
	JSON  bool
	Scale string
}

func newBenchCmd(factory *cmdutil.Factory, runF func(*benchOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &benchOptions{}
	cmd := &cobra.Command{
		Use: "bench",
		Example: `  # what converge spends at the forge, in seconds (the size make test runs)
  converge bench

  # the figures BENCHMARKS.md records, as JSON
  converge bench --scale full --json`,
		Short: "Measure what converge spends at the forge, beside a baseline, on the emulator",
		Long: `Run scripted PR scenarios on the GitHub emulator with no-op agents and
print what converge spends, side by side with a baseline that talks to
GitHub as a plain PR loop does (separate calls for the PR, its comments,
threads, requested reviewers and events on every poll; one request per
reply and per resolve), every request counted at the emulator: requests
and primary points per poll of an idle PR, write requests for a round's
replies and resolves at 5, 20 and 50 threads, requests, writes and
points per PR driven to a converged finish, the memory of idle loops
registered with the engine's manager, Decide's time at 500 threads, and
webhook-to-decision latency (p50, p95, p99 of three runs at 100 events/s
over 20 PR loops behind the serve webhook receiver). --scale small runs
in make test; --scale full is what BENCHMARKS.md records.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			scale := bench.Scale(opts.Scale)
			if scale != bench.Small && scale != bench.Full {
				return cmdutil.UsageErr("--scale %q: want small or full", opts.Scale)
			}
			if runF != nil {
				return runF(opts)
			}
			progress := func(s string) { fmt.Fprintln(ios.ErrOut, "bench: "+s) }
			open := func(ctx context.Context, path string) (*store.Store, error) { return factory.OpenStoreFile(ctx, path) }
			r, err := bench.Run(cmd.Context(), bench.Options{Scale: scale, Progress: progress, OpenStore: open})
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

func printBench(ios *cmdutil.IOStreams, r *bench.Report) {
	w := ios.Out
	fmt.Fprintf(w, "converge bench (%s scale, %s, %d CPUs); counted at the emulator\n\n", r.Scale, r.GoVersion, r.CPUs)
	fmt.Fprintf(w, "%-44s %12s %12s\n", "", "converge", "baseline")
	o := r.Observation
	fmt.Fprintf(w, "%-44s %12d %12d\n", "requests per poll of an idle PR", o.Converge.Total, o.Baseline.Total)
	fmt.Fprintf(w, "%-44s %12d %12d\n", "primary points per poll of an idle PR", o.Converge.PrimaryPoints, o.Baseline.PrimaryPoints)
	for _, wr := range r.Writes {
		fmt.Fprintf(w, "%-44s %12d %12d\n", fmt.Sprintf("write requests, a round of %d threads", wr.Threads), wr.Converge.Writes, wr.Baseline.Writes)
	}
	cp := r.ConvergedPR
	fmt.Fprintf(w, "%-44s %12d %12d\n", "requests per converged PR", cp.Converge.Total, cp.Baseline.Total)
	fmt.Fprintf(w, "%-44s %12d %12d\n", "write requests per converged PR", cp.Converge.Writes, cp.Baseline.Writes)
	fmt.Fprintf(w, "%-44s %12d %12d\n", "primary points per converged PR", cp.Converge.PrimaryPoints, cp.Baseline.PrimaryPoints)
	fmt.Fprintf(w, "  (%s; polls: converge %d, baseline %d)\n", cp.Scenario, cp.ConvergePolls, cp.BaselinePolls)
	fmt.Fprintln(w)
	for _, il := range r.IdleLoops {
		fmt.Fprintf(w, "%d idle loops (registered with the engine's manager): %.1f MiB RSS (%.1f MiB at peak), %.1f KiB RSS per loop (%.1f KiB heap and stack)\n", il.Loops, il.RSSMiB, il.PeakRSSMiB, il.KiBPerLoop, il.HeapKiBLoop)
	}
	for _, d := range r.Decide {
		fmt.Fprintf(w, "Decide at %d threads, %s: %.0f µs\n", d.Threads, d.Step, d.Micros)
	}
	if c := r.ClassifyNew; c.Threads > 0 {
		fmt.Fprintf(w, "classifying %d new comments, once, when first observed: %.0f µs\n", c.Threads, c.Micros)
	}
	printLatency(ios, r.Latency)
}

func printLatency(ios *cmdutil.IOStreams, l *bench.Latency) {
	if l == nil {
		return
	}
	w := ios.Out
	fmt.Fprintf(w, "webhook to decision, %.0f events/s over %d PR loops (%.0f ms coalescing window):\n", l.Rate, l.PRs, l.WindowMS)
	for i, r := range l.Runs {
		fmt.Fprintf(w, "  run %d: %.0f s, %d events (%.0f/s), %d decisions: p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, max %.0f ms (load %.1f)",
			i+1, r.Seconds, r.Events, r.Rate, r.Decisions, r.P50, r.P95, r.P99, r.Max, r.Load)
		if r.Uncovered > 0 {
			fmt.Fprintf(w, "; %d events no decision covered", r.Uncovered)
		}
		fmt.Fprintf(w, "\n         server's handling p50 %.1f ms, p99 %.1f ms; observe and Decide p50 %.0f ms, p99 %.0f ms\n",
			r.ReceiveP50, r.ReceiveP99, r.ObserveP50, r.ObserveP99)
	}
	s := l.Spread
	fmt.Fprintf(w, "  spread: p50 %.0f–%.0f ms, p95 %.0f–%.0f ms, p99 %.0f–%.0f ms\n", s.P50.Min, s.P50.Max, s.P95.Min, s.P95.Max, s.P99.Min, s.P99.Max)
}
