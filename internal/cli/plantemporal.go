package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// runPlanTemporal starts (or attaches to) the plan's workflow on the
// repository, follows its log and prints its tracking report as converge
// plan run does; the exit code is its terminal's. The plan is read here
// and travels with the workflow; the run is on a worker, which must
// reach the repository at the same path.
func runPlanTemporal(ctx context.Context, ios *cmdutil.IOStreams, opts *planOptions, file string) error {
	if err := refuseWorkerFlags(map[string]bool{"--state": opts.StateDir != ""}); err != nil {
		return err
	}
	if err := refuseLocalFlags(map[string]bool{"--fresh": opts.Fresh}); err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return cmdutil.UsageErr("plan file: %v", err)
	}
	if _, err := plan.Parse(file, data); err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return cmdutil.UsageErr("plan file: %v", err)
	}
	dir, err := workerRepo(ctx, opts.Workdir)
	if err != nil {
		return err
	}
	p := kinds.PlanParams{
		Repo: dir, File: abs, Data: string(data),
		Agent: opts.Agent, AgentCmd: opts.AgentCmd, ReviewAgent: opts.ReviewAgent, ReviewAgentCmd: opts.ReviewAgentCmd,
		AgentTimeout: opts.AgentTimeout, Parallel: opts.Parallel,
	}
	if opts.agents != nil {
		p.Set, p.NoAgentCheck = opts.agents.Set, opts.agents.NoCheck
	}
	c, err := opts.engine.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	warnNoWorker(ctx, ios, c, opts.engine.TaskQueue)
	run, err := kinds.Plan(nil).Start(ctx, c, opts.engine.TaskQueue, p, temporal.Options{})
	if err != nil {
		return &cmdutil.ExitErr{Code: exitcode.Unreachable, Err: err}
	}
	out := &loopReporter{ios: ios, json: opts.JSON, runID: run.GetRunID(), kind: plan.Kind, target: localTarget(plan.Kind, dir)}
	return followWorkflow(ctx, c, run, out, func(res temporal.Result[plan.State]) error {
		t := res.State.Terminal
		if t == nil {
			return errors.New("workflow ended with no terminal")
		}
		if err := printPlanResult(ios, opts, res.RunID, res.State); err != nil {
			return err
		}
		if t.ExitCode != exitcode.OK {
			return &cmdutil.SilentExit{Code: t.ExitCode}
		}
		return nil
	})
}

// planOptionsOf are the planOptions a worker runs p with.
func planOptionsOf(p kinds.PlanParams) *planOptions {
	return &planOptions{
		Agent: p.Agent, AgentCmd: p.AgentCmd, ReviewAgent: p.ReviewAgent, ReviewAgentCmd: p.ReviewAgentCmd,
		AgentTimeout: p.AgentTimeout, Parallel: p.Parallel, Workdir: p.Repo, data: []byte(p.Data),
		agents: &cmdutil.AgentFlags{Set: maps.Clone(p.Set), NoCheck: p.NoAgentCheck},
	}
}

// bindPlan binds a plan run on this worker as converge plan run binds
// it: the same checks of the plan, agents and repository, and loop
// (preparePlan, newPlanLoop); its tickets are in this worker's state
// store, the worktrees of its parallel groups under this worker's state
// directory, its state and journal the workflow's. The first bind
// refuses a dirty tree and checks the agents, as a new local run does.
// What a worker of this run that died left in its worktree directory is
// removed first: only one worker at a time works on a run.
func (rt *workerRuntime) bindPlan(ctx context.Context, b temporal.Binding[kinds.PlanParams, kinds.PlanSetup]) (*kinds.PlanBound, error) {
	if !filepath.IsAbs(b.Params.Repo) {
		return nil, cmdutil.UsageErr("the repository %q is not an absolute path; a worker works in the repository at the path the plan names", b.Params.Repo)
	}
	db, err := rt.tickets(ctx, plan.Kind, b.Params.Repo, b.RunID)
	if err != nil {
		return nil, err
	}
	opts := planOptionsOf(b.Params)
	s, err := preparePlan(ctx, rt.ios, opts, b.Params.File)
	if err != nil {
		return nil, err
	}
	if !samePath(s.ws.Dir(), b.Params.Repo) {
		return nil, cmdutil.UsageErr("%s is not the top directory of its repository (%s): give --workdir the top directory, one plan run per repository", b.Params.Repo, s.ws.Dir())
	}
	pools, err := planPoolDirs(filepath.Join(rt.opts.StateDir, "work"), b.RunID, nil)
	if err != nil {
		return nil, err
	}
	if b.Setup == nil {
		if c := opts.agents.Checker(); c != nil {
			if err := c.Check(ctx, s.agents.b.Built(), agent.ScrubEnv(os.Environ())); err != nil {
				return nil, err
			}
		}
		if err := refuseDirty(ctx, s.ws.Git, s.ws.Dir(), false, "converge plan commits each task on the current branch and resets the tree between tasks"); err != nil {
			return nil, err
		}
		b.Reporter.Report(engine.Event{Kind: "start", Message: planStartMessage(b.RunID, b.Params.File, s) + fmt.Sprintf("; worker pid %d", os.Getpid())})
	} else {
		// Both halves of the run read the settings the workflow recorded.
		s.cfg = b.Setup.Config
		if removed, err := pool.Sweep(ctx, s.ws.Git, pools[0]); err != nil {
			return nil, fmt.Errorf("remove the worktrees a worker of this run left: %w", err)
		} else if len(removed) > 0 {
			b.Reporter.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("removed %d worktree(s) a worker of this run left in %s", len(removed), pools[0])})
		}
	}
	loop := newPlanLoop(s, b.RunID, db, temporal.StateJournal[plan.State]{Journal: b.Journal}, b.Reporter, pools[0])
	return &kinds.PlanBound{
		Loop:  kinds.PlanLoop{Loop: loop},
		Setup: kinds.PlanSetup{RunID: b.RunID, Config: s.cfg},
		Close: func(ctx context.Context) {
			if _, err := pool.Sweep(ctx, s.ws.Git, pools[0]); err != nil {
				b.Reporter.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("the run's worktree directory %s is left: %v", pools[0], err)})
			}
		},
	}, nil
}
