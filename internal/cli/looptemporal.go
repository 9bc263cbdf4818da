package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// runLoopTemporal starts (or attaches to) the done-check loop's workflow
// on the repository, follows its log and prints its result as converge
// loop does; the exit code is its terminal's. The loop runs on a worker,
// which must reach the repository at the same path.
func runLoopTemporal(ctx context.Context, ios *cmdutil.IOStreams, opts *loopOptions) error {
	if err := refuseWorkerFlags(map[string]bool{"--state": opts.StateDir != ""}); err != nil {
		return err
	}
	if err := refuseLocalFlags(map[string]bool{"--fresh": opts.Fresh, "--predecessor": opts.Predecessor != ""}); err != nil {
		return err
	}
	p, err := loopParamsOf(ctx, opts)
	if err != nil {
		return err
	}
	c, err := opts.engine.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	warnNoWorker(ctx, ios, c, opts.engine.TaskQueue)
	run, err := kinds.Check(nil).Start(ctx, c, opts.engine.TaskQueue, p, temporal.Options{})
	if err != nil {
		return &cmdutil.ExitErr{Code: exitcode.Unreachable, Err: err}
	}
	out := &loopReporter{ios: ios, json: opts.JSON, runID: run.GetRunID(), kind: checkloop.Kind, target: localTarget(checkloop.Kind, p.Repo)}
	return followWorkflow(ctx, c, run, out, func(res temporal.Result[checkloop.State]) error {
		t := res.State.Terminal
		if t == nil {
			return errors.New("workflow ended with no terminal")
		}
		printLoopResult(ios, opts.JSON, res.RunID, res.State)
		if t.ExitCode != exitcode.OK {
			return &cmdutil.SilentExit{Code: t.ExitCode}
		}
		return nil
	})
}

// loopParamsOf are the loop settings of a `converge loop` command line:
// the goal read here, the repository as an absolute path (its top
// directory when this machine has it).
func loopParamsOf(ctx context.Context, opts *loopOptions) (kinds.LoopParams, error) {
	p := kinds.LoopParams{
		Goal: opts.Goal, Check: opts.Check, Judge: opts.Judge, JudgeCmd: opts.JudgeCmd,
		Agent: opts.Agent, AgentCmd: opts.AgentCmd, Protect: opts.Protect,
		MaxIterations: opts.MaxIterations, StallAfter: opts.StallAfter, Confirm: opts.Confirm, ConfirmSet: opts.confirmSet,
		AllowTestRemoval: opts.AllowRemoval, MaxWallClock: opts.MaxWallClock, MaxCost: opts.MaxCost,
		AgentTimeout: opts.AgentTimeout, CheckTimeout: opts.CheckTimeout,
	}
	if opts.agents != nil {
		p.Set, p.NoAgentCheck = opts.agents.Set, opts.agents.NoCheck
	}
	if opts.GoalFile != "" {
		if opts.Goal != "" {
			return p, cmdutil.UsageErr("give the goal once: --goal TEXT or --goal-file F, not both")
		}
		b, err := os.ReadFile(opts.GoalFile)
		if err != nil {
			return p, cmdutil.UsageErr("--goal-file: %v", err)
		}
		p.Goal = string(b)
		if p.GoalFile, err = filepath.Abs(opts.GoalFile); err != nil {
			return p, cmdutil.UsageErr("--goal-file: %v", err)
		}
	}
	dir, err := workerRepo(ctx, opts.Workdir)
	if err != nil {
		return p, err
	}
	p.Repo = dir
	return p, nil
}

// workerRepo is the repository a worker works in, as an absolute path:
// its top directory when this machine has it, so that one repository is
// one workflow (the workflow's id is made of it); else the path as given,
// for the worker to find.
func workerRepo(ctx context.Context, workdir string) (string, error) {
	dir, err := filepath.Abs(workdir)
	if err != nil {
		return "", cmdutil.UsageErr("--workdir %s: %v", workdir, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		if l, err := repo.OpenLocal(ctx, dir); err == nil {
			dir = l.Dir()
		}
	}
	return dir, nil
}

// loopOptionsOf are the loopOptions a worker runs p with.
func loopOptionsOf(p kinds.LoopParams) *loopOptions {
	return &loopOptions{
		Goal: p.Goal, goalFrom: p.GoalFile, Check: p.Check, Judge: p.Judge, JudgeCmd: p.JudgeCmd,
		Agent: p.Agent, AgentCmd: p.AgentCmd, Protect: p.Protect,
		MaxIterations: p.MaxIterations, StallAfter: p.StallAfter, Confirm: p.Confirm, confirmSet: p.ConfirmSet,
		AllowRemoval: p.AllowTestRemoval, MaxWallClock: p.MaxWallClock, MaxCost: p.MaxCost,
		AgentTimeout: p.AgentTimeout, CheckTimeout: p.CheckTimeout, Workdir: p.Repo,
		agents: &cmdutil.AgentFlags{Set: maps.Clone(p.Set), NoCheck: p.NoAgentCheck},
	}
}

// bindLoop binds a done-check loop on this worker as converge loop binds
// it: the same checks of the command line and the repository, agents and
// loop (prepareLoop, newCheckLoop); its tickets are in this worker's
// state store, its state and journal the workflow's. The first bind
// refuses a dirty tree and checks the agents, as a new local run does.
func (rt *workerRuntime) bindLoop(ctx context.Context, b temporal.Binding[kinds.LoopParams, kinds.LoopSetup]) (*kinds.LoopBound, error) {
	if !filepath.IsAbs(b.Params.Repo) {
		return nil, cmdutil.UsageErr("the repository %q is not an absolute path; a worker works in the repository at the path the loop names", b.Params.Repo)
	}
	db, err := rt.tickets(ctx, checkloop.Kind, b.Params.Repo, b.RunID)
	if err != nil {
		return nil, err
	}
	opts := loopOptionsOf(b.Params)
	s, err := prepareLoop(ctx, rt.ios, db, opts)
	if err != nil {
		return nil, err
	}
	if !samePath(s.ws.Dir(), b.Params.Repo) {
		return nil, cmdutil.UsageErr("%s is not the top directory of its repository (%s): give --workdir the top directory, one loop per repository", b.Params.Repo, s.ws.Dir())
	}
	env := agent.ScrubEnv(os.Environ())
	if b.Setup == nil {
		if c := opts.agents.Checker(); c != nil {
			if err := c.Check(ctx, s.checks, env); err != nil {
				return nil, err
			}
		}
		if err := refuseDirty(ctx, s.ws.Git, s.ws.Dir(), false, "converge loop commits each accepted iteration on the current branch and undoes rejected ones"); err != nil {
			return nil, err
		}
		b.Reporter.Report(engine.Event{Kind: "start", Message: loopStartMessage(b.RunID, s) + fmt.Sprintf("; worker pid %d", os.Getpid())})
	} else {
		// Both halves of the run read the settings the workflow recorded.
		s.cfg = b.Setup.Config
	}
	loop := newCheckLoop(s, b.RunID, db, env, temporal.StateJournal[checkloop.State]{Journal: b.Journal}, b.Reporter)
	return &kinds.LoopBound{Loop: loop, Setup: kinds.LoopSetup{RunID: b.RunID, Config: s.cfg}}, nil
}

// samePath reports whether a and b name one directory (symbolic links
// followed where they resolve).
func samePath(a, b string) bool {
	eval := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	return eval(a) == eval(b)
}

// refuseLocalFlags refuses, with one usage line, a flag that reads the
// local engine's state store, which a workflow has none of.
func refuseLocalFlags(set map[string]bool) error {
	for _, flag := range slices.Sorted(maps.Keys(set)) {
		if set[flag] {
			return cmdutil.UsageErr("%s reads the local state store: with --engine temporal a start attaches to the workflow running on the repository, or starts a new one; drop %s or use --engine local", flag, flag)
		}
	}
	return nil
}
