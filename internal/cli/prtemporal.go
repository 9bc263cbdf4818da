package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// runPRTemporal starts (or attaches to) one PR workflow per URL on the
// Temporal cluster, follows each one's log and prints its terminal and
// proof as `converge pr` does; the exit code is the first PR's, in the
// order given, that did not end two-stable. The loops run on the
// workers: an interrupt here detaches, and they go on.
func runPRTemporal(ctx context.Context, ios *cmdutil.IOStreams, opts *prOptions) error {
	if err := refuseWorkerFlags(map[string]bool{
		"--token": opts.Token != "", "--ca-file": opts.CAFile != "", "--state": opts.StateDir != "",
		"--keep": opts.Keep, "--config": opts.ConfigFile != "",
		"--app-id": opts.App.ID != "", "--app-key": opts.App.KeyFile != "",
	}); err != nil {
		return err
	}
	var refs []forge.PRRef
	for _, u := range opts.URLs {
		ref, err := forge.ParsePRURL(u)
		if err != nil {
			return cmdutil.UsageErr("%v", err)
		}
		if slices.Contains(refs, ref) {
			return cmdutil.UsageErr("%s is given twice; one loop runs per PR (PR-G5)", u)
		}
		refs = append(refs, ref)
	}
	c, err := opts.engine.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	warnNoWorker(ctx, ios, c, opts.engine.TaskQueue)
	k := prKind(nil)
	runs := make([]client.WorkflowRun, len(refs))
	resumed := make([]*prloop.State, len(refs))
	for i, u := range opts.URLs {
		params := fleetPRParams(ctx, c, opts, u)
		resumed[i] = params.Resume
		if runs[i], err = k.Start(ctx, c, opts.engine.TaskQueue, params, temporal.Options{}); err != nil {
			return &cmdutil.ExitErr{Code: exitcode.Unreachable, Err: err}
		}
	}
	var mu sync.Mutex
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := newReporter(ios, opts.JSON, nil, run.GetRunID())
			out.kind, out.target = "pr", refs[i].String()
			if len(runs) > 1 {
				out.mu, out.label = &mu, refs[i].String()
			}
			if r := resumed[i]; r != nil {
				out.Report(engine.Event{Kind: "start", Round: r.Round, Message: fmt.Sprintf("the stopped run on %s resumed at round %d (%s); --fresh starts a new run", refs[i], r.Round, r.StoppedPhase)})
			}
			errs[i] = followPR(ctx, ios, c, run, out, opts.JSON)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fleetPRParams are url's workflow parameters: the command line's, with
// what the PR's newest earlier workflow leaves (kinds.PriorRun): the head
// its verdict proved, and its state when a signal or `converge stop`
// stopped it, which the new workflow resumes unless --fresh (PR-T14).
func fleetPRParams(ctx context.Context, c client.Client, opts *prOptions, url string) kinds.PRParams {
	params := prParamsOf(opts, url)
	var stopped *prloop.State
	params.PriorVerdictHead, stopped = kinds.PriorRun(ctx, c, params)
	if stopped != nil && !opts.Fresh {
		params.Resume = stopped
	}
	return params
}

// warnNoWorker says so when no worker polls the task queue: the loops
// then wait, started, until one does.
func warnNoWorker(ctx context.Context, ios *cmdutil.IOStreams, c client.Client, queue string) {
	d, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil || len(d.GetPollers()) > 0 {
		return
	}
	fmt.Fprintf(ios.ErrOut, "converge: warning: no worker polls task queue %s: the loops wait until one does (converge worker --task-queue %s)\n", queue, queue)
}

// followPR prints a PR workflow's events as they come, then its terminal.
func followPR(ctx context.Context, ios *cmdutil.IOStreams, c client.Client, run client.WorkflowRun, out *reporter, asJSON bool) error {
	return followWorkflow(ctx, c, run, out, func(res temporal.Result[prloop.State]) error {
		t := res.State.Terminal
		if t == nil {
			return errors.New("workflow ended with no terminal")
		}
		out.mu.Lock()
		printTerminal(ios, asJSON, res.RunID, t)
		if !asJSON {
			writeForgeSpend(ios.Out, spendRowsView(res.RunID, res.Spend))
		}
		out.mu.Unlock()
		if t.ExitCode != exitcode.OK {
			return &cmdutil.SilentExit{Code: t.ExitCode}
		}
		return nil
	})
}

// followWorkflow prints a workflow's events to out as they come (its log
// query, once a second), then hands its result to end, which prints it
// as the kind's local command does and makes the exit. An interrupt
// detaches: the loop goes on on the cluster.
func followWorkflow[S any](ctx context.Context, c client.Client, run client.WorkflowRun, out engine.Reporter, end func(temporal.Result[S]) error) error {
	out.Report(engine.Event{Kind: "start", Message: fmt.Sprintf("workflow %s (run %s) on the Temporal cluster", run.GetID(), run.GetRunID())})
	done := make(chan struct{})
	var res temporal.Result[S]
	var err error
	go func() {
		defer close(done)
		err = run.Get(ctx, &res)
	}()
	seen := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	follow := func() {
		var log []engine.Event
		v, qerr := c.QueryWorkflow(ctx, run.GetID(), "", temporal.QueryLog)
		if qerr != nil || v.Get(&log) != nil {
			return
		}
		if seen > len(log) {
			seen = 0 // a new run of the workflow (continue-as-new keeps the tail)
		}
		for _, e := range log[seen:] {
			out.Report(e)
		}
		seen = len(log)
	}
	for {
		select {
		case <-done:
			follow()
		case <-tick.C:
			follow()
			continue
		}
		break
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("detached from workflow %s: the loop goes on on the cluster; converge status --engine temporal shows it, converge stop --engine temporal %s stops it", run.GetID(), run.GetID())
		}
		return temporalErr(err)
	}
	return end(res)
}

// refuseWorkerFlags refuses, with one usage line, a flag that is each
// worker's with --engine temporal (set says which were given).
func refuseWorkerFlags(set map[string]bool) error {
	var given []string
	for flag, ok := range set {
		if ok {
			given = append(given, flag)
		}
	}
	if len(given) == 0 {
		return nil
	}
	slices.Sort(given)
	return cmdutil.UsageErr("%s is each worker's with --engine temporal: give it to converge worker, where the loop runs", given[0])
}
