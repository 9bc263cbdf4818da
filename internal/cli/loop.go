package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

type loopOptions struct {
	// UnsafeNoSandbox runs the body, judges and checks uncontained (SEC-7).
	UnsafeNoSandbox bool
	Goal            string
	GoalFile        string
	Check           string
	Judge           string
	JudgeCmd        string
	Agent           string
	AgentCmd        string
	Protect         []string
	MaxIterations   int
	StallAfter      int
	Confirm         int
	AllowRemoval    bool
	confirmSet      bool
	MaxWallClock    time.Duration
	MaxCost         float64
	Predecessor     string
	JSON            bool
	StateDir        string
	Workdir         string
	Fresh           bool
	AgentTimeout    time.Duration
	CheckTimeout    time.Duration
	// changed reports a flag given on the command line (nil: none).
	changed func(flag string) bool
	// agents are the agent settings and --no-agent-check.
	agents *cmdutil.AgentFlags
	// goalFrom is the file Goal was read from, elsewhere (a worker's
	// loop: where the command ran): protected as GoalFile is.
	goalFrom string
	// engine runs the loop here or on a Temporal cluster.
	engine engineOptions
	// factory opens the store and builds the agents (nil: the real one).
	factory *cmdutil.Factory
}

func newLoopCmd(factory *cmdutil.Factory, runF func(*loopOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &loopOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "loop --goal TEXT|--goal-file F --check CMD|--judge command --judge-cmd CMD --agent NAME --max-iterations N",
		Example: `  # Claude Code works until the parser's tests pass
  converge loop --goal "make the tests in ./parser pass" --check "go test ./parser/..." \
    --agent claude --max-iterations 10

  # a goal a judge program decides, with Codex working
  converge loop --goal-file GOAL.md --judge command --judge-cmd ./judge.sh --agent codex --max-iterations 5`,
		Short: "Iterate an agent on this repository until an external done-check passes",
		Long: `Iterate an agent on the git repository in the current directory until a
done-check that converge runs itself says the goal is met (SPEC §2).

Each iteration is a ticket RUN.iter.NN, claimed in a fresh child's name; the
child gets only the context packet (goal, worklog, failed approaches,
queued scope) as canonical JSON, and its own claim never counts. A change
to a protected file (--protect GLOB; default the ecosystem's test files and
the files the check names) is undone and recorded UNVERIFIED. Each accepted
iteration is committed on the current branch with a Converge-Loop trailer.

A passing check is run again on the same tree until it passed --confirm
runs in a row (default 2); one that passes and then fails is flaky: the
run ends blocked with both outputs, never complete (LOOP-8). When the
check is a test command converge can count (go test, pytest, jest,
vitest, npm test, cargo test, a make target running one), a pass with
fewer tests run than at the start, or a test newly skipped, is UNVERIFIED
and undone, unless --allow-test-removal says the goal is to remove tests.

Exits: complete 0, blocked 3, limited 4, stalled 5, failed 1, bad input 2,
an agent CLI whose credentials are refused 6 (checked before the run
starts, --no-agent-check skips that; never retried mid-run).
A run killed mid-iteration resumes from its stored state with the next
converge loop of the same goal and check here; --fresh starts over.

With --engine temporal the loop runs as a workflow on a Temporal cluster,
on a converge worker: this command starts it (or attaches to the one
running on the repository), prints its log and result and exits as
above; an interrupt detaches, the loop goes on. The worker works in the
repository itself, at the absolute path of --workdir: it must run on this
machine or see the repository at that path on a shared filesystem.
--state is each worker's; --fresh and --predecessor, which read the
local state store, are refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.confirmSet = cmd.Flags().Changed("confirm")
			opts.changed = cmd.Flags().Changed
			if runF != nil {
				return runF(opts)
			}
			return runLoopCmd(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Goal, "goal", "", "the goal, verbatim (frozen for the run)")
	f.StringVar(&opts.GoalFile, "goal-file", "", "read the goal, verbatim, from this file")
	f.StringVar(&opts.Check, "check", "", "mechanical done-check: a command run by converge with sh -c; exit 0 means done")
	f.StringVar(&opts.Judge, "judge", "", "judged done-check: the judge agent (command), whose verdict is schema-validated")
	f.StringVar(&opts.JudgeCmd, "judge-cmd", "", "with --judge command: the judge program (packet JSON on stdin, verdict line on stdout)")
	f.StringVar(&opts.Agent, "agent", "command", "the body agent: command (the canonical packet on stdin), or claude, codex, gemini, opencode (the packet rendered as their prompt)")
	f.StringVar(&opts.AgentCmd, "agent-cmd", "", "with --agent command: the program to run each iteration (packet JSON on stdin, status record on stdout)")
	f.StringArrayVar(&opts.Protect, "protect", nil, "a protected oracle input (glob; repeatable); replaces the default test-file globs, the files the check names stay protected")
	f.IntVar(&opts.MaxIterations, "max-iterations", 0, "at most this many iterations (required)")
	f.IntVar(&opts.StallAfter, "stall-after", checkloop.DefaultStallIterations, "end stalled after this many iterations in a row left the work tree and the check's output unchanged (LOOP-5's K)")
	f.IntVar(&opts.Confirm, "confirm", checkloop.DefaultConfirm, "a mechanical check counts as passed only after passing this many runs in a row on the same tree; one that passes and fails is flaky and ends the run blocked (LOOP-8)")
	f.BoolVar(&opts.AllowRemoval, "allow-test-removal", false, "the goal asks to remove tests: a pass with fewer tests run than at the start, or a test newly skipped, counts (recorded); without it such a pass is UNVERIFIED and undone (LOOP-8)")
	f.DurationVar(&opts.MaxWallClock, "max-wall-clock", 0, "end limited after this long (0: no bound)")
	f.Float64Var(&opts.MaxCost, "max-cost", 0, "end limited once agents report this much cost in USD (what a CLI agent reports, or cost_usd on a command agent's last line; 0: no bound)")
	f.StringVar(&opts.Predecessor, "predecessor", "", "the run this one follows: its end is restated and its failed approaches carried")
	f.BoolVar(&opts.JSON, "json", false, "print NDJSON events and the result as JSON")
	f.StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	addSandboxFlag(f, &opts.UnsafeNoSandbox)
	f.StringVar(&opts.Workdir, "workdir", ".", "the repository to work in")
	f.BoolVar(&opts.Fresh, "fresh", false, "start a new run even when an interrupted run of the same goal and check can resume")
	f.DurationVar(&opts.AgentTimeout, "agent-timeout", agent.DefaultBudget, "time-box of each agent and judge run")
	f.DurationVar(&opts.CheckTimeout, "check-timeout", checkloop.DefaultCheckBudget, "time-box of each mechanical done-check run")
	opts.agents = cmdutil.AddAgentFlags(f)
	addEngineFlags(f, &opts.engine)
	return cmd
}

// loopSetup is what runLoopCmd checked and built before anything is
// recorded.
type loopSetup struct {
	cfg   checkloop.Config
	ws    *checkloop.GitWorkspace
	body  agent.Agent
	judge agent.Agent
	// checks are the CLI backends among them (cmdutil.AgentChecker).
	checks []cmdutil.CheckTarget
}

func runLoopCmd(ctx context.Context, ios *cmdutil.IOStreams, opts *loopOptions) error {
	// A misspelt CONVERGE_* variable is refused here as in `converge pr`.
	if err := ios.CheckEnv(); err != nil {
		return err
	}
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.engine.temporal() {
		return runLoopTemporal(ctx, ios, opts)
	}
	if err := containAgents(ios, opts.UnsafeNoSandbox, opts.StateDir); err != nil {
		return err
	}
	db, err := opts.factory.OrDefault(ios).OpenStore(ctx, opts.StateDir)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := prepareLoop(ctx, ios, db, opts)
	if err != nil {
		return err
	}
	env := agent.ScrubEnv(os.Environ())
	if c := opts.agents.Checker(); c != nil {
		// Before the run is recorded (AG-T4).
		if err := c.Check(ctx, s.checks, env); err != nil {
			return err
		}
	}
	m := engine.NewManager(engine.Config{Store: db, CodeOf: cmdutil.ExitCodeOf, Stop: stopOnInterrupt(ctx)})
	r, err := m.Add(ctx, engine.NewSpec(&loopJob{ios: ios, db: db, opts: opts, s: s, env: env}))
	if err != nil {
		return err
	}
	return r.Wait().Err
}

// loopJob is the done-check loop's engine.Adapter: one goal and check in
// one repository, its run's lifecycle the Manager's.
type loopJob struct {
	ios  *cmdutil.IOStreams
	db   *store.Store
	opts *loopOptions
	s    *loopSetup
	env  []string

	loop  *checkloop.Loop
	final checkloop.State
}

var _ engine.Adapter[checkloop.State] = (*loopJob)(nil)

func (j *loopJob) Kind() engine.Kind {
	return engine.Kind{Name: checkloop.Kind, Errored: string(checkloop.StatusFailed)}
}
func (j *loopJob) Target() string { return localTarget(checkloop.Kind, j.s.ws.Dir()) }
func (j *loopJob) Fresh() bool    { return j.opts.Fresh }

// Resumable: the stored run is of the same goal, check and agent.
func (j *loopJob) Resumable(st checkloop.State) bool {
	c := st.Config
	return checkloop.Resumable(st) && c.GoalSHA256 == checkloop.GoalDigest(j.s.cfg.Goal) && c.Oracle == j.s.cfg.Oracle && c.Agent == j.s.cfg.Agent
}

func (j *loopJob) Progress(st checkloop.State) engine.Progress { return kinds.LoopProgress(st) }

func (j *loopJob) Terminal(st checkloop.State) (engine.Terminal, bool) {
	return kinds.LoopTerminal(st)
}

func (j *loopJob) Refuse(ctx context.Context, wouldResume bool) error {
	return refuseDirty(ctx, j.s.ws.Git, j.s.ws.Dir(), wouldResume,
		"converge loop commits each accepted iteration on the current branch and undoes rejected ones")
}

func (j *loopJob) Begin(ctx context.Context, claim *engine.Claim[checkloop.State]) (checkloop.State, error) {
	s, runID := j.s, claim.RunID
	out := &loopReporter{ios: j.ios, json: j.opts.JSON, db: j.db, runID: runID, kind: checkloop.Kind, target: j.Target()}
	st := checkloop.NewState(runID, s.cfg)
	if claim.Resumed != nil {
		st = *claim.Resumed
		out.Report(engine.Event{Kind: "start", Message: fmt.Sprintf("run %s on %s resumed after %d iteration(s); --fresh starts a new run", runID, s.ws.Dir(), len(st.Iterations))})
		if moved := rebound(&st.Config, s.cfg, j.opts.changed); len(moved) > 0 {
			out.Report(engine.Event{Kind: "note", Message: "the resumed run takes this command line's bounds: " + strings.Join(moved, ", ")})
		}
	} else {
		out.Report(engine.Event{Kind: "start", Message: loopStartMessage(runID, s)})
	}
	reportOrphans(out, claim.Orphans)
	if p := st.Config.Predecessor; p != nil {
		out.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("predecessor %s ended %s (exit %d) after %d iteration(s); restated in the result and carried in the failed-approaches digest", p.Run, p.Status, p.ExitCode, p.Iterations)})
	}
	j.loop = newCheckLoop(s, runID, j.db, j.env, &engine.StoreJournal[checkloop.State]{DB: j.db, RunID: runID, Status: checkloop.StatusOf}, out)
	return st, nil
}

// newCheckLoop binds the done-check loop of s to one run, as converge
// loop binds it here and a worker on the Temporal engine (bindLoop): its
// tickets in tickets, its state in journal, its events to out.
func newCheckLoop(s *loopSetup, runID string, tickets checkloop.Tickets, env []string, journal engine.Journal[checkloop.State], out engine.Reporter) *checkloop.Loop {
	return checkloop.NewLoop(runID, checkloop.Deps{
		Tickets:   tickets,
		Workspace: s.ws,
		Agent:     s.body,
		Judge:     s.judge,
		AgentEnv:  env,
		CheckEnv:  env,
		Journal:   journal,
		Reporter:  out,
		PID:       os.Getpid(),
	})
}

// loopStartMessage is the event a new run starts with.
func loopStartMessage(runID string, s *loopSetup) string {
	return fmt.Sprintf("run %s on %s: %s, at most %d iteration(s); protected: %s", runID, s.ws.Dir(), oracleWords(s.cfg), s.cfg.MaxIterations, clipList(s.cfg.Protect, 8))
}

func (j *loopJob) Drive(ctx context.Context, st checkloop.State, opt engine.Options) (checkloop.State, error) {
	opt.PollMin = time.Millisecond
	final, err := j.loop.Run(ctx, st, opt)
	j.final = final
	return final, err
}

// End prints the result and makes the run's error.
func (j *loopJob) End(_ context.Context, o engine.Outcome) error {
	if err, done := localEnd(o, j.final.Terminal != nil, "the same converge loop again"); done {
		return err
	}
	printLoopResult(j.ios, j.opts.JSON, o.RunID, j.final)
	if o.Code != 0 {
		return &cmdutil.SilentExit{Code: o.Code}
	}
	return nil
}

// printLoopResult prints a loop run's result, as JSON or its summary.
func printLoopResult(ios *cmdutil.IOStreams, asJSON bool, runID string, final checkloop.State) {
	res := checkloop.BuildResult(final, time.Now())
	if asJSON {
		b, _ := json.Marshal(map[string]any{"kind": "result", "run": runID, "result": res})
		fmt.Fprintln(ios.Out, string(b))
	} else {
		checkloop.WriteSummary(ios.Out, res)
	}
}

// prepareLoop checks the command line and the repository, before any run
// is recorded: bad input is exit 2 with one line (REL-3).
func prepareLoop(ctx context.Context, ios *cmdutil.IOStreams, db *store.Store, opts *loopOptions) (*loopSetup, error) {
	goal := opts.Goal
	switch {
	case opts.Goal != "" && opts.GoalFile != "":
		return nil, cmdutil.UsageErr("give the goal once: --goal TEXT or --goal-file F, not both")
	case opts.GoalFile != "":
		b, err := os.ReadFile(opts.GoalFile)
		if err != nil {
			return nil, cmdutil.UsageErr("--goal-file: %v", err)
		}
		goal = string(b)
	}
	if strings.TrimSpace(goal) == "" {
		return nil, cmdutil.UsageErr("loop needs a goal: --goal TEXT or --goal-file F")
	}
	if (opts.Check == "") == (opts.Judge == "") {
		return nil, cmdutil.UsageErr("loop needs one done-check: --check CMD (mechanical) or --judge command --judge-cmd CMD (judged)")
	}
	if opts.MaxIterations <= 0 {
		return nil, cmdutil.UsageErr("loop needs --max-iterations N (N > 0): a loop without a bound is not allowed")
	}
	if opts.StallAfter <= 0 {
		return nil, cmdutil.UsageErr("--stall-after %d: must be at least 1 (iterations in a row without progress before the loop ends stalled)", opts.StallAfter)
	}
	if opts.Confirm <= 0 {
		return nil, cmdutil.UsageErr("--confirm %d: must be at least 1 (runs in a row on the same tree a passing check must repeat before it counts)", opts.Confirm)
	}
	if opts.AllowRemoval && opts.Judge != "" {
		return nil, cmdutil.UsageErr("--allow-test-removal applies to a mechanical --check, whose tests converge counts")
	}
	if opts.confirmSet && opts.Judge != "" {
		return nil, cmdutil.UsageErr("--confirm applies to a mechanical --check; a judged check is confirmed by its fresh final re-judgment")
	}
	if opts.MaxWallClock < 0 || opts.MaxCost < 0 {
		return nil, cmdutil.UsageErr("--max-wall-clock and --max-cost cannot be negative")
	}
	if err := checkWorkdir("loop", opts.Workdir); err != nil {
		return nil, err
	}
	ws, err := checkloop.OpenWorkspace(ctx, opts.Workdir)
	if err != nil {
		return nil, cmdutil.UsageErr("%v; converge loop runs in a git repository (--workdir DIR)", err)
	}
	if _, err := ws.Git.HeadSHA(ctx); err != nil {
		return nil, cmdutil.UsageErr("%s has no commit yet; commit something first: converge loop commits on the current branch", ws.Dir())
	}
	ws.UseRepoIdentity(ctx)
	top := ws.Dir()

	if opts.agents == nil {
		opts.agents = &cmdutil.AgentFlags{}
	}
	ac, err := cmdutil.AgentSettings(ios, opts.agents.Set, nil)
	if err != nil {
		return nil, err
	}
	b := cmdutil.NewAgentBuilder(opts.factory.OrDefault(ios), ac)
	b.Command = loopCommand
	body, err := loopAgent(b, "--agent", opts.Agent, "--agent-cmd", opts.AgentCmd, backends.RoleFix)
	if err != nil {
		return nil, err
	}
	cfg := checkloop.Config{
		Goal:             goal,
		Agent:            opts.Agent,
		MaxIterations:    opts.MaxIterations,
		StallIterations:  opts.StallAfter,
		Confirm:          opts.Confirm,
		AllowTestRemoval: opts.AllowRemoval,
		MaxWallClock:     opts.MaxWallClock,
		MaxCostUSD:       opts.MaxCost,
		AgentBudget:      opts.AgentTimeout,
		CheckBudget:      opts.CheckTimeout,
	}
	protect := opts.Protect
	if len(protect) == 0 {
		// The default (LOOP-6): the test files, the test infrastructure
		// by its names and what the check runs, sources and includes.
		protect = checkloop.DefaultProtect(top)
		cfg.ProtectInfra = true
		if opts.Check != "" {
			for _, p := range repo.TestInfra(top, []string{"sh", "-c", opts.Check}) {
				protect = append(protect, "/"+p)
			}
		}
	}
	var judge agent.Agent
	if opts.Check != "" {
		if err := checkloop.SelfAuthored(top, opts.Check); err != nil {
			return nil, cmdutil.UsageErr("--check: %v", err)
		}
		if err := command.Preflight(opts.Check); err != nil && !strings.Contains(firstWord(opts.Check), "/") {
			return nil, cmdutil.UsageErr("--check: %v", strings.Replace(err.Error(), "agent program", "program", 1))
		}
		cfg.Oracle = checkloop.Oracle{Class: checkloop.Mechanical, Command: opts.Check}
		protect = append(protect, checkloop.CheckNamedFiles(top, opts.Check)...)
	} else {
		if judge, err = loopAgent(b, "--judge", opts.Judge, "--judge-cmd", opts.JudgeCmd, backends.RoleJudge); err != nil {
			return nil, err
		}
		cfg.Oracle = checkloop.Oracle{Class: checkloop.Judged, Judge: opts.Judge + ": " + opts.JudgeCmd}
		protect = append(protect, checkloop.CheckNamedFiles(top, opts.JudgeCmd)...)
	}
	if gf := cmp.Or(opts.GoalFile, opts.goalFrom); gf != "" {
		// The goal is stored verbatim; its file is no iteration's either.
		protect = append(protect, checkloop.CheckNamedFiles(top, gf)...)
	}
	cfg.Protect = dedupeStrings(protect)
	if opts.Predecessor != "" {
		p, err := predecessor(ctx, db, opts.Predecessor)
		if err != nil {
			return nil, err
		}
		cfg.Predecessor = p
	}
	return &loopSetup{cfg: cfg, ws: ws, body: body, judge: judge, checks: b.Built()}, nil
}

// loopAgent builds the body or judge agent of a loop: the loop's command
// backend, whose program must exist (AG-T4: pre-flight, exit 2).
func loopAgent(b *cmdutil.AgentBuilder, flag, name, cmdFlag, cmdline, role string) (agent.Agent, error) {
	if flag == "--agent" && backends.Known(name) {
		// A CLI agent gets the iteration's prompt (the packet rendered);
		// the loop, not the agent, runs the check and commits.
		a, err := b.Agent(name, "", role)
		if err != nil {
			return nil, cmdutil.UsageErr("--agent %s: %v", name, err)
		}
		return a, nil
	}
	if name != "command" {
		if flag == "--agent" {
			return nil, cmdutil.UsageErr("unknown --agent %q: use command, or one of %s", name, strings.Join(backends.Names(), ", "))
		}
		return nil, cmdutil.UsageErr("unknown %s %q: use command (the loop's children read the context packet on stdin)", flag, name)
	}
	a, err := b.Agent(name, cmdline, role)
	if errors.Is(err, backends.ErrNoCommand) {
		example := "./agent.sh"
		if flag == "--judge" {
			example = "./judge.sh"
		}
		return nil, cmdutil.UsageErr("%s command needs %s, e.g. %s '%s'", flag, cmdFlag, cmdFlag, example)
	}
	if err != nil {
		return nil, cmdutil.UsageErr("%s: %v", cmdFlag, err)
	}
	return a, nil
}

// loopCommand is the loop's command agent, whose children read the
// context packet on stdin (checkloop.Command).
func loopCommand(name string, argv []string) (agent.Agent, error) {
	c, err := checkloop.NewCommand(name, argv)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// predecessor reads the run this one follows; it must be a loop run that
// ended.
func predecessor(ctx context.Context, db *store.Store, id string) (*checkloop.Predecessor, error) {
	r, err := db.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, cmdutil.UsageErr("--predecessor: no run %q in the state store (see converge status)", id)
	}
	if err != nil {
		return nil, err
	}
	if r.Kind != checkloop.Kind {
		return nil, cmdutil.UsageErr("--predecessor: run %s is a %s run, not a loop run", id, r.Kind)
	}
	if !r.Finished() {
		return nil, cmdutil.UsageErr("--predecessor: run %s has not ended (%s); resume it with the same converge loop, or stop it first", id, r.Status)
	}
	p := &checkloop.Predecessor{Run: r.ID, Status: r.Status, ExitCode: r.ExitCode}
	var st checkloop.State
	if len(r.State) > 0 && json.Unmarshal(r.State, &st) == nil {
		p.Iterations = len(st.Iterations)
		if st.Terminal != nil {
			p.Message = st.Terminal.Message
		}
		p.Digest = checkloop.Digest(st)
	}
	return p, nil
}

// writeLoopLog prints a loop run's log (`converge log RUN`): its inputs,
// iterations with their tickets, failed approaches, events and result.
func writeLoopLog(ctx context.Context, ios *cmdutil.IOStreams, db runRecords, r store.Run) error {
	var st checkloop.State
	if len(r.State) > 0 {
		if err := json.Unmarshal(r.State, &st); err != nil {
			return fmt.Errorf("decode the state of %s: %w", r.ID, err)
		}
	}
	tickets, err := db.Tickets(ctx, r.ID)
	if err != nil {
		return err
	}
	events, err := db.Events(ctx, r.ID)
	if err != nil {
		return err
	}
	return checkloop.WriteLog(ios.Out, r, st, tickets, events)
}

func oracleWords(c checkloop.Config) string {
	o := c.Oracle
	if o.Class == checkloop.Judged {
		return "judged by " + o.Judge
	}
	if c.Confirm > 1 {
		return fmt.Sprintf("done-check `%s` (a pass counts after %d in a row on one tree)", o.Command, c.Confirm)
	}
	return "done-check `" + o.Command + "`"
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func clipList(xs []string, n int) string {
	if len(xs) == 0 {
		return "none"
	}
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(xs[:n], ", "), len(xs)-n)
}

func dedupeStrings(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// loopReporter prints a loop run's progress (UX-1) and appends it to the
// run's event log (db nil: none, a workflow's client).
type loopReporter struct {
	mu    sync.Mutex
	ios   *cmdutil.IOStreams
	json  bool
	db    *store.Store
	runID string
	// kind and target name the run in its NDJSON events.
	kind, target string
	line         *runLine // its status line on a terminal
}

func (r *loopReporter) Report(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	var data json.RawMessage
	if e.Data != nil {
		data, _ = json.Marshal(e.Data)
	}
	if r.db != nil {
		_ = r.db.AppendEvent(context.Background(), r.runID, store.Event{Time: e.Time, Kind: e.Kind, Round: e.Round, Message: e.Message, Data: data})
	}
	if r.json {
		writeEvent(r.ios.Out, e, r.runID, r.kind, r.target, "")
		return
	}
	prefix := "       "
	if e.Round > 0 {
		prefix = fmt.Sprintf("iter.%02d", e.Round)
	}
	if r.line == nil {
		r.line = &runLine{db: r.db, runID: r.runID, label: r.target}
	}
	// The terminal is printed with the result.
	showEvent(r.ios, r.line, e, fmt.Sprintf("%s  %-9s %s", prefix, e.Kind, e.Message))
}

// checkWorkdir refuses a --workdir that is not a directory with one line
// (IF-1: exit 2), before git is run in it: git started in a missing
// directory fails as "fork/exec /usr/bin/git", which names the wrong thing.
func checkWorkdir(command, dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cmdutil.UsageErr("--workdir %s: no such directory; converge %s works in a git repository: give its path (default: the current directory)", dir, command)
	case err != nil:
		return cmdutil.UsageErr("--workdir %s: %v", dir, errors.Unwrap(err))
	case !fi.IsDir():
		return cmdutil.UsageErr("--workdir %s: not a directory; converge %s works in a git repository: give its path", dir, command)
	}
	return nil
}

// rebound gives a resumed run the bounds this command line sets: the
// goal and the check are the run's, frozen, but a bound is the user's to
// move (--max-iterations is always given; the others when given). It says
// which moved, from what to what.
func rebound(run *checkloop.Config, now checkloop.Config, changed func(string) bool) []string {
	given := func(flag string) bool { return changed != nil && changed(flag) }
	var moved []string
	set := func(flag string, always bool, from, to any, apply func()) {
		if (always || given(flag)) && from != to {
			moved = append(moved, fmt.Sprintf("--%s %v (was %v)", flag, to, from))
			apply()
		}
	}
	set("max-iterations", true, run.MaxIterations, now.MaxIterations, func() { run.MaxIterations = now.MaxIterations })
	set("max-wall-clock", false, run.MaxWallClock, now.MaxWallClock, func() { run.MaxWallClock = now.MaxWallClock })
	set("max-cost", false, run.MaxCostUSD, now.MaxCostUSD, func() { run.MaxCostUSD = now.MaxCostUSD })
	set("stall-after", false, run.StallIterations, now.StallIterations, func() { run.StallIterations = now.StallIterations })
	set("agent-timeout", false, run.AgentBudget, now.AgentBudget, func() { run.AgentBudget = now.AgentBudget })
	set("check-timeout", false, run.CheckBudget, now.CheckBudget, func() { run.CheckBudget = now.CheckBudget })
	return moved
}
