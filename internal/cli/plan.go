package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// defaultPlanParallel is how many tasks of a parallel group run at once.
const defaultPlanParallel = 4

type planOptions struct {
	// UnsafeNoSandbox runs implementers and reviewers uncontained (SEC-7).
	UnsafeNoSandbox bool
	// File is the plan (the argument).
	File           string
	Agent          string
	AgentCmd       string
	ReviewAgent    string
	ReviewAgentCmd string
	JSON           bool
	Report         string
	StateDir       string
	Workdir        string
	Fresh          bool
	AgentTimeout   time.Duration
	Parallel       int
	// agents are the agent settings and --no-agent-check.
	agents *cmdutil.AgentFlags
	// engine runs the plan here or on a Temporal cluster.
	engine engineOptions
	// data is the plan's content when it was read elsewhere (a worker's
	// run: where the command ran); nil: read the file.
	data []byte
	// factory opens the store and builds the agents (nil: the real one).
	factory *cmdutil.Factory
}

func newPlanCmd(factory *cmdutil.Factory, runF func(*planOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "plan",
		Example: `  converge plan run plan.yaml --agent claude --review-agent codex`,
		Short:   "Run a plan of tasks with implementer and reviewer agents",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.UsageErr("plan needs a subcommand: converge plan run PLAN.yaml")
		},
	}
	cmd.AddCommand(newPlanRunCmd(factory, runF))
	return cmd
}

func newPlanRunCmd(factory *cmdutil.Factory, runF func(*planOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &planOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "run PLAN.yaml",
		Example: `  # each task implemented by Claude Code and reviewed by Codex, two at a time
  converge plan run plan.yaml --agent claude --review-agent codex --parallel 2

  # the plan's report as a file
  converge plan run plan.yaml --agent claude --report plan-report.md`,
		Short: "Execute a plan on this repository: tasks, parallel groups, barriers, reviews",
		Long: `Execute a plan (PLAN-1) on the git repository in the current directory:
each task is done by an implementer agent and committed on the current
branch with a Converge-Task trailer; each DONE task gets one combined spec
and quality review of its diff by a reviewer agent, and at most 2
fix-review iterations; a task still not approved is NOT_APPROVED: its open
issues are recorded, its commits stay on the branch, and the plan goes on.
The concerns of a DONE_WITH_CONCERNS task are judged by the reviewer first:
a critical one blocks the task. NEEDS_CONTEXT is re-dispatched once with
exactly what the agent asked for (the files and lines it named, read from
the repository; the plan's context it names), then NEEDS_CONTEXT and
BLOCKED with the plan's next model; a task its implementer reports "too
large:" is split by the reviewer into 2 to 4 parts that run in its place
(a part is never split again). A task still blocked is BLOCKED, its
commits taken off the branch, its dependents SKIPPED, and the rest of the
plan keeps going. The tracking report is printed at the end (--json: as
JSON; --report FILE: also written as markdown).

Exits: every task done 0, a task blocked, skipped or not approved 3, an agent that
could not run 1, a bad plan or flag 2, an agent CLI whose credentials are
refused 6 (checked before the run starts, --no-agent-check skips that;
never retried mid-run). A run killed mid-task resumes from
its stored state with the same converge plan run here; --fresh starts over.
converge stop RUN stops the agents at once: the tasks in progress end
BLOCKED, the tree is left clean, exit 3; a stopped run is not resumed.

With --engine temporal the plan runs as a workflow on a Temporal cluster,
on a converge worker: this command reads the plan, starts the workflow
(or attaches to the one running on the repository), prints its log and
report and exits as above; an interrupt detaches, the run goes on. The
worker works in the repository itself, at the absolute path of
--workdir: it must run on this machine or see the repository at that
path on a shared filesystem. --state is each worker's (the worktrees of
parallel groups live under it); --fresh is refused. A run that needs a
human to put the branch right ends blocked (exit 3) instead of waiting
to be resumed.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErr("plan run needs exactly one plan file: converge plan run PLAN.yaml")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runPlanCmd(cmd.Context(), ios, opts, opts.File)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Agent, "agent", "command", "the implementer: command (the task as JSON on stdin), or claude, codex, gemini, opencode")
	f.StringVar(&opts.AgentCmd, "agent-cmd", "", "with --agent command: the implementer program (task JSON on stdin, status record on stdout)")
	f.StringVar(&opts.ReviewAgent, "review-agent", "", "the reviewer (default: the --agent backend): command, or claude, codex, gemini, opencode")
	f.StringVar(&opts.ReviewAgentCmd, "review-agent-cmd", "", "with --review-agent command: the reviewer program (task JSON with the diff on stdin, review line on stdout)")
	f.BoolVar(&opts.JSON, "json", false, "print NDJSON events and the report as JSON")
	f.StringVar(&opts.Report, "report", "", "also write the tracking report, as markdown, to this file")
	f.StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	addSandboxFlag(f, &opts.UnsafeNoSandbox)
	f.StringVar(&opts.Workdir, "workdir", ".", "the repository to work in")
	f.BoolVar(&opts.Fresh, "fresh", false, "start a new run even when an interrupted run of the same plan can resume")
	f.DurationVar(&opts.AgentTimeout, "agent-timeout", agent.DefaultBudget, "time-box of each implementer and reviewer run")
	f.IntVar(&opts.Parallel, "parallel", defaultPlanParallel, "at most this many tasks of a parallel group at once, each in a git worktree of its own (1: one at a time, in this work tree)")
	opts.agents = cmdutil.AddAgentFlags(f)
	addEngineFlags(f, &opts.engine)
	return cmd
}

// planSetup is what runPlanCmd checked and built before anything is
// recorded.
type planSetup struct {
	cfg      plan.Config
	ws       *plan.GitWorkspace
	agents   *agentSet
	reviewer agent.Agent
}

func runPlanCmd(ctx context.Context, ios *cmdutil.IOStreams, opts *planOptions, file string) error {
	// A misspelt CONVERGE_* variable is refused here as in `converge pr`.
	if err := ios.CheckEnv(); err != nil {
		return err
	}
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.engine.temporal() {
		return runPlanTemporal(ctx, ios, opts, file)
	}
	if err := containAgents(ios, opts.UnsafeNoSandbox, opts.StateDir); err != nil {
		return err
	}
	s, err := preparePlan(ctx, ios, opts, file)
	if err != nil {
		return err
	}
	if c := opts.agents.Checker(); c != nil {
		// Before the run is recorded (AG-T4).
		if err := c.Check(ctx, s.agents.b.Built(), agent.ScrubEnv(os.Environ())); err != nil {
			return err
		}
	}
	db, err := opts.factory.OrDefault(ios).OpenStore(ctx, opts.StateDir)
	if err != nil {
		return err
	}
	defer db.Close()
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = filepath.Dir(store.DefaultPath(ios.Getenv))
	}
	m := engine.NewManager(engine.Config{Store: db, WorkDir: filepath.Join(stateDir, "work"), CodeOf: cmdutil.ExitCodeOf, Stop: stopOnInterrupt(ctx)})
	r, err := m.Add(ctx, engine.NewSpec(&planJob{ios: ios, db: db, opts: opts, s: s, file: file, workDir: m.WorkDir()}))
	if err != nil {
		return err
	}
	return r.Wait().Err
}

// planJob is the plan executor's engine.Adapter: one plan in one
// repository, its run's lifecycle the Manager's.
type planJob struct {
	ios     *cmdutil.IOStreams
	db      *store.Store
	opts    *planOptions
	s       *planSetup
	file    string
	workDir string

	pools []string // the run's worktree directory first, then earlier runs'
	out   *loopReporter
	loop  *plan.Loop
	final plan.State
}

var _ engine.Adapter[plan.State] = (*planJob)(nil)

func (j *planJob) Kind() engine.Kind {
	return engine.Kind{Name: plan.Kind, Errored: string(plan.StatusFailed)}
}
func (j *planJob) Target() string { return localTarget(plan.Kind, j.s.ws.Dir()) }
func (j *planJob) Fresh() bool    { return j.opts.Fresh }

// Resumable: the stored run is of the same plan, implementer and reviewer.
func (j *planJob) Resumable(st plan.State) bool {
	c := j.s.cfg
	return plan.Resumable(st) && st.Config.Plan.Digest == c.Plan.Digest && st.Config.Agent == c.Agent && st.Config.Reviewer == c.Reviewer
}

func (j *planJob) Progress(st plan.State) engine.Progress { return kinds.PlanProgress(st) }

func (j *planJob) Terminal(st plan.State) (engine.Terminal, bool) { return kinds.PlanTerminal(st) }

func (j *planJob) Refuse(ctx context.Context, wouldResume bool) error {
	return refuseDirty(ctx, j.s.ws.Git, j.s.ws.Dir(), wouldResume,
		"converge plan commits each task on the current branch and resets the tree between tasks")
}

func (j *planJob) Begin(ctx context.Context, claim *engine.Claim[plan.State]) (plan.State, error) {
	s, runID := j.s, claim.RunID
	out := &loopReporter{ios: j.ios, json: j.opts.JSON, db: j.db, runID: runID, kind: plan.Kind, target: j.Target()}
	j.out = out
	pools, err := planPoolDirs(j.workDir, runID, claim.Prior)
	if err != nil {
		return plan.State{}, err
	}
	j.pools = pools
	st := plan.NewState(runID, s.cfg)
	if claim.Resumed != nil {
		st = *claim.Resumed
		ended := 0
		for _, t := range st.Tasks {
			if t.Status != "" {
				ended++
			}
		}
		out.Report(engine.Event{Kind: "start", Message: fmt.Sprintf("run %s of %s on %s resumed with %d of %d task(s) ended; --fresh starts a new run", runID, j.file, s.ws.Dir(), ended, len(st.Tasks))})
	} else {
		out.Report(engine.Event{Kind: "start", Message: planStartMessage(runID, j.file, s)})
	}
	reportOrphans(out, claim.Orphans)
	// Holding the target's lock proves every earlier run on it dead: what
	// their pools left is removed before anything is dispatched.
	if removed, err := pool.Sweep(ctx, s.ws.Git, pools...); err != nil {
		return st, fmt.Errorf("remove the worktrees of earlier runs: %w", err)
	} else if len(removed) > 0 {
		out.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("removed %d worktree(s) an earlier converge left in %s", len(removed), filepath.Dir(pools[0]))})
	}
	j.loop = newPlanLoop(s, runID, j.db, &engine.StoreJournal[plan.State]{DB: j.db, RunID: runID, Status: plan.StatusOf}, out, pools[0])
	return st, nil
}

// newPlanLoop binds the plan executor of s to one run, as converge plan
// run binds it here and a worker on the Temporal engine (bindPlan): its
// tickets in tickets, its state in journal, its events to out, the
// worktrees of its parallel groups in poolDir.
func newPlanLoop(s *planSetup, runID string, tickets plan.Tickets, journal engine.Journal[plan.State], out engine.Reporter, poolDir string) *plan.Loop {
	return plan.NewLoop(runID, plan.Deps{
		Tickets:   tickets,
		Workspace: s.ws,
		Agent:     s.agents.get,
		Reviewer:  s.reviewer,
		Judge:     s.reviewer,
		AgentEnv:  agent.ScrubEnv(os.Environ()),
		Journal:   journal,
		Reporter:  out,
		PID:       os.Getpid(),
		PoolDir:   poolDir,
	})
}

// planStartMessage is the event a new run of the plan in file starts with.
func planStartMessage(runID, file string, s *planSetup) string {
	how := "tasks run one at a time in this work tree"
	if s.cfg.Parallel > 1 {
		how = fmt.Sprintf("a parallel group runs up to %d tasks at once, each in a worktree of its own", s.cfg.Parallel)
	}
	return fmt.Sprintf("run %s of %s on %s: %d task(s) in %d group(s); implementer %s, reviewer %s; %s", runID, file, s.ws.Dir(), len(s.cfg.Plan.Tasks), len(s.cfg.Plan.Groups), s.cfg.Agent, s.cfg.Reviewer, how)
}

func (j *planJob) Drive(ctx context.Context, st plan.State, opt engine.Options) (plan.State, error) {
	opt.PollMin = time.Millisecond
	final, err := j.loop.Run(ctx, st, opt)
	j.final = final
	if _, serr := pool.Sweep(context.WithoutCancel(ctx), j.s.ws.Git, j.pools[0]); serr != nil {
		j.out.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("the run's worktree directory %s is left: %v", j.pools[0], serr)})
	}
	var hn *plan.HumanNeeded
	if errors.As(err, &hn) {
		// Left unfinished: once the branch is put right, the same
		// command resumes the run.
		err = &engine.HumanNeeded{Why: hn.Why, Err: err}
	}
	return final, err
}

// End writes the tracking report and makes the run's error.
func (j *planJob) End(_ context.Context, o engine.Outcome) error {
	if err, done := localEnd(o, j.final.Terminal != nil, "the same converge plan run"); done {
		return err
	}
	if err := printPlanResult(j.ios, j.opts, o.RunID, j.final); err != nil {
		return err
	}
	if o.Code != 0 {
		return &cmdutil.SilentExit{Code: o.Code}
	}
	return nil
}

// printPlanResult writes a plan run's tracking report (--report) and
// prints it, as JSON or markdown.
func printPlanResult(ios *cmdutil.IOStreams, opts *planOptions, runID string, final plan.State) error {
	res := plan.BuildResult(final, time.Now())
	var md bytes.Buffer
	plan.WriteReport(&md, res)
	if opts.Report != "" {
		if err := os.WriteFile(opts.Report, md.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	if opts.JSON {
		b, _ := json.Marshal(map[string]any{"kind": "result", "run": runID, "result": res})
		fmt.Fprintln(ios.Out, string(b))
	} else {
		fmt.Fprintf(ios.Out, "\n%s", md.String())
	}
	return nil
}

// preparePlan reads the plan and checks the flags, the agents and the
// repository before any run is recorded: bad input is exit 2 with one
// line (REL-3, AG-T4 pre-flight).
func preparePlan(ctx context.Context, ios *cmdutil.IOStreams, opts *planOptions, file string) (*planSetup, error) {
	data := opts.data
	if data == nil {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, cmdutil.UsageErr("plan file: %v", err)
		}
	}
	p, err := plan.Parse(file, data)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	if opts.AgentTimeout <= 0 {
		return nil, cmdutil.UsageErr("--agent-timeout must be positive")
	}
	if opts.Parallel < 1 {
		return nil, cmdutil.UsageErr("--parallel must be at least 1")
	}
	if opts.agents == nil {
		opts.agents = &cmdutil.AgentFlags{}
	}
	ac, err := cmdutil.AgentSettings(ios, opts.agents.Set, nil)
	if err != nil {
		return nil, err
	}
	b := cmdutil.NewAgentBuilder(opts.factory.OrDefault(ios), ac)
	agents := &agentSet{cmd: opts.AgentCmd, b: b, built: map[string]agent.Agent{}}
	if _, err := agents.check(opts.Agent, "--agent"); err != nil {
		return nil, err
	}
	for _, t := range p.Tasks {
		if t.Agent == "" {
			continue
		}
		if _, err := agents.check(t.Agent, fmt.Sprintf("%s:%d: task %s: agent", file, t.AgentLine, t.ID)); err != nil {
			return nil, err
		}
	}
	reviewName := opts.ReviewAgent
	if reviewName == "" {
		reviewName = opts.Agent
	}
	reviewer, err := planReviewer(b, reviewName, opts.ReviewAgentCmd)
	if err != nil {
		return nil, err
	}
	if err := checkWorkdir("plan", opts.Workdir); err != nil {
		return nil, err
	}
	ws, err := plan.OpenWorkspace(ctx, opts.Workdir)
	if err != nil {
		return nil, cmdutil.UsageErr("%v; converge plan runs in a git repository (--workdir DIR)", err)
	}
	if _, err := ws.Git.HeadSHA(ctx); err != nil {
		return nil, cmdutil.UsageErr("%s has no commit yet; commit something first: converge plan commits on the current branch", ws.Dir())
	}
	ws.UseRepoIdentity(ctx)
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	// The reviewer also judges concerns and splits tasks too large.
	cfg := plan.Config{Plan: *p, PlanFile: abs, Agent: opts.Agent, Reviewer: reviewName, Judge: reviewName, Parallel: opts.Parallel, AgentBudget: opts.AgentTimeout}
	return &planSetup{cfg: cfg, ws: ws, agents: agents, reviewer: reviewer}, nil
}

// agentSet builds implementer agents by name, once each.
type agentSet struct {
	cmd   string
	b     *cmdutil.AgentBuilder
	mu    sync.Mutex
	built map[string]agent.Agent
}

// check builds the default-model agent of name, so that a missing
// program fails before anything runs (AG-T4); where names the flag or
// the plan line.
func (s *agentSet) check(name, where string) (agent.Agent, error) {
	if name != "command" && !backends.Known(name) {
		return nil, cmdutil.UsageErr("%s: unknown agent %q: use command, or one of %s", where, name, strings.Join(backends.Names(), ", "))
	}
	a, err := s.get(name)
	if err != nil {
		return nil, cmdutil.UsageErr("%s %s: %v", where, name, err)
	}
	return a, nil
}

func (s *agentSet) get(name string) (agent.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.built[name]; ok {
		return a, nil
	}
	var (
		a   agent.Agent
		err error
	)
	// Each run's model is its Task.Model, a rung of the plan's ladder.
	if name == "command" {
		a, err = commandAgent(s.b, "--agent-cmd", s.cmd, backends.RoleFix)
	} else {
		a, err = s.b.Agent(name, "", backends.RoleFix)
	}
	if err != nil {
		return nil, err
	}
	s.built[name] = a
	return a, nil
}

// planReviewer builds the task reviewer (PLAN-1).
func planReviewer(b *cmdutil.AgentBuilder, name, cmdline string) (agent.Agent, error) {
	switch {
	case name == "command":
		a, err := commandAgent(b, "--review-agent-cmd", cmdline, backends.RoleReview)
		if err != nil {
			return nil, cmdutil.UsageErr("--review-agent command: %v", err)
		}
		return a, nil
	case backends.Known(name):
		a, err := b.Agent(name, "", backends.RoleReview)
		if err != nil {
			return nil, cmdutil.UsageErr("--review-agent %s: %v", name, err)
		}
		return a, nil
	}
	return nil, cmdutil.UsageErr("unknown --review-agent %q: use command, or one of %s", name, strings.Join(backends.Names(), ", "))
}

// commandAgent is a command backend in role running cmdline with sh -c;
// its program must exist (AG-T4: pre-flight).
func commandAgent(b *cmdutil.AgentBuilder, flag, cmdline, role string) (agent.Agent, error) {
	a, err := b.Agent("command", cmdline, role)
	if errors.Is(err, backends.ErrNoCommand) {
		return nil, fmt.Errorf("needs %s, e.g. %s './agent.sh'", flag, flag)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", flag, err)
	}
	return a, nil
}

// planPoolDirs are the worktree directories of runID and of the other
// runs on its target: <state>/work/plan/<run> (workDir is <state>/work),
// absolute, each run's own; runID's is first.
func planPoolDirs(workDir, runID string, runs []store.Run) ([]string, error) {
	root, err := filepath.Abs(filepath.Join(workDir, "plan"))
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	ids := []string{runID}
	for _, r := range runs {
		if r.ID != runID {
			ids = append(ids, r.ID)
		}
	}
	var dirs []string
	for _, id := range ids {
		// A run id is one path element; anything else is no dir of ours.
		if id != "" && filepath.IsLocal(id) && filepath.Base(id) == id {
			dirs = append(dirs, filepath.Join(root, id))
		}
	}
	if len(dirs) == 0 || dirs[0] != filepath.Join(root, runID) {
		return nil, fmt.Errorf("run id %q cannot name a directory", runID)
	}
	return dirs, nil
}

// localTarget is the target of a loop or plan run: its kind and the
// repository it commits in.
func localTarget(kind, dir string) string { return kind + ":" + dir }

// refuseDirty refuses a loop or plan run on a dirty tree (IF-4): such a
// run commits on the current branch, so it starts only from a clean tree,
// unless it resumes a run killed midway, whose partial change the run
// itself puts right; why says what the run does to the tree.
func refuseDirty(ctx context.Context, g *repo.Git, dir string, wouldResume bool, why string) error {
	dirty, err := g.Status(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 && !wouldResume {
		var paths []string
		for _, d := range dirty {
			paths = append(paths, d.Path)
		}
		return cmdutil.UsageErr("the working tree of %s has uncommitted changes (%s); commit or stash them first: %s", dir, clipList(paths, 5), why)
	}
	return nil
}

// localEnd is the error of a loop or plan run that ended with nothing to
// print (done), again naming the command that resumes it; otherwise the
// caller prints the result of its terminal.
func localEnd(o engine.Outcome, terminal bool, again string) (err error, done bool) {
	var (
		busy *engine.BusyError
		hn   *engine.HumanNeeded
	)
	switch {
	case errors.As(o.Err, &busy):
		return cmdutil.UsageErr("%s; wait for it to end (converge status shows it)", busy.Error()), true
	case o.Status == engine.StatusRefused:
		return o.Err, true
	case o.Status == engine.StatusInterrupted:
		return fmt.Errorf("run %s interrupted; run %s here to resume it (--fresh starts over)", o.RunID, again), true
	case errors.As(o.Err, &hn):
		return &cmdutil.ExitErr{Code: exitcode.Human, Err: fmt.Errorf("run %s needs a human: %s; then run %s here to resume it", o.RunID, hn.Why, again)}, true
	case !terminal:
		return fmt.Errorf("run %s: %w", o.RunID, o.Err), true
	case o.RecordErr != nil:
		return o.RecordErr, true
	}
	return nil, false
}

// reportOrphans notes the processes dead converge processes had left
// running, which claiming the run killed.
func reportOrphans(out engine.Reporter, n int) {
	if n > 0 {
		out.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("killed %d process(es) a converge that died had left running (an agent's shell or a build would go on writing to the tree)", n)})
	}
}

// writePlanLog prints a plan run's log (`converge log RUN`): its
// tracking report so far and its events.
func writePlanLog(ctx context.Context, ios *cmdutil.IOStreams, db runRecords, r store.Run) error {
	var st plan.State
	if len(r.State) > 0 {
		if err := json.Unmarshal(r.State, &st); err != nil {
			return fmt.Errorf("decode the state of %s: %w", r.ID, err)
		}
	}
	st.RunID = r.ID
	res := plan.BuildResult(st, time.Now())
	if r.Finished() && st.Terminal == nil {
		res.Status, res.ExitCode = r.Status, r.ExitCode
	}
	plan.WriteReport(ios.Out, res)
	events, err := db.Events(ctx, r.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "\n## Events\n\n")
	for _, e := range events {
		fmt.Fprintf(ios.Out, "- %s `%s` %s\n", e.Time.UTC().Format(time.TimeOnly), e.Kind, e.Message)
	}
	return nil
}
