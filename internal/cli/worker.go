package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/secure"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// workerOptions are `converge worker`'s: where the cluster is, and what
// this machine brings to every loop it runs — its credentials, trusted
// CAs and state directory (clone cache). A loop's own settings come with
// its workflow; secrets never do.
type workerOptions struct {
	// UnsafeNoSandbox runs the workers' agents uncontained (SEC-7).
	UnsafeNoSandbox bool
	engine          engineOptions
	Token           string
	CAFile          string
	StateDir        string
	App             appOptions
	// factory builds the forge clients and the agents of every loop
	// (nil: the real one).
	factory *cmdutil.Factory
}

func newWorkerCmd(factory *cmdutil.Factory, runF func(*workerOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &workerOptions{engine: engineOptions{Engine: engineTemporal}, factory: factory}
	cmd := &cobra.Command{
		Use: "worker",
		Example: `  # one worker of a fleet; start as many as it needs, on as many machines
  CONVERGE_TOKEN=ghp_example converge worker --temporal-address temporal:7233`,
		Short: "Run loops of a Temporal cluster on this machine (the fleet engine)",
		Long: `Run converge's workflows and activities for a Temporal cluster: every
loop started with --engine temporal (converge pr, loop, plan, serve) runs
on whichever worker polls its task queue, and a loop whose worker dies
goes on on another. Start as many workers, on as many machines, as the
fleet needs; each brings its own credentials (--token or the gh
conventions, a GitHub App), trusted CAs and state directory, and the
agent CLIs the loops name. Runs until SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runWorker(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	addTemporalFlags(f, &opts.engine)
	f.StringVar(&opts.Token, "token", "", "forge token (default: CONVERGE_TOKEN, then the gh conventions)")
	f.StringVar(&opts.CAFile, "ca-file", "", "extra trusted CA certificates (PEM), for the API and git")
	f.StringVar(&opts.StateDir, "state", "", "state directory: the clone cache (default $XDG_STATE_HOME/converge)")
	addSandboxFlag(f, &opts.UnsafeNoSandbox)
	addAppFlags(f, &opts.App)
	return cmd
}

func runWorker(ctx context.Context, ios *cmdutil.IOStreams, opts *workerOptions) error {
	if err := ios.CheckEnv(); err != nil {
		return err
	}
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.StateDir == "" {
		opts.StateDir = filepath.Dir(store.DefaultPath(ios.Getenv))
	}
	if err := cmdutil.WritableDir(opts.StateDir); err != nil {
		return err
	}
	if err := containAgents(ios, opts.UnsafeNoSandbox, opts.StateDir); err != nil {
		return err
	}
	c, err := opts.engine.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, opts.engine.TaskQueue, worker.Options{})
	rt := &workerRuntime{ios: ios, opts: opts}
	prKind(rt.bindPR).Register(w, &temporal.Activities[kinds.PRParams, kinds.PRSetup, prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult]{CodeOf: cmdutil.ExitCodeOf})
	rt.registerLocalKinds(w)
	defer rt.close()
	if err := w.Start(); err != nil {
		return &cmdutil.ExitErr{Code: exitcode.Unreachable, Err: fmt.Errorf("start worker on %s: %w", opts.engine.TaskQueue, err)}
	}
	fmt.Fprintf(ios.ErrOut, "converge: worker on task queue %s at %s (namespace %s), pid %d\n", opts.engine.TaskQueue, opts.engine.Address, opts.engine.Namespace, os.Getpid())
	<-ctx.Done()
	w.Stop()
	return nil
}

// workerRuntime binds loops on this worker.
type workerRuntime struct {
	ios  *cmdutil.IOStreams
	opts *workerOptions
	// db is the state store of this worker's loop and plan tickets
	// (workerkinds.go), opened on first use.
	dbMu sync.Mutex
	db   *store.Store
}

func prKind(bind kinds.PRBind) *kinds.PRKind {
	return kinds.PR(bind)
}

// prParamsOf are the loop settings of a `converge pr` command line.
func prParamsOf(opts *prOptions, url string) kinds.PRParams {
	return kinds.PRParams{
		URL: url, APIURL: opts.APIURL,
		Agent: opts.Agent, AgentCmd: opts.AgentCmd,
		ReviewAgent: opts.ReviewAgent, ReviewAgentCmd: opts.ReviewAgentCmd,
		JudgeAgent: opts.JudgeAgent, JudgeAgentCmd: opts.JudgeAgentCmd,
		Set: opts.Set, DryRun: opts.DryRun, DisposeOnly: opts.DisposeOnly,
		AllowHostMismatch: opts.AllowHostMismatch, NoAgentCheck: opts.NoAgentCheck,
		TakeOver: opts.TakeOver,
	}
}

// prOptionsOf are the prOptions a worker runs p with: p's settings, this
// worker's credentials and state.
func prOptionsOf(p kinds.PRParams, w *workerOptions) *prOptions {
	set := map[string]string{}
	for k, v := range p.Set {
		set[k] = v
	}
	return &prOptions{
		URLs: []string{p.URL}, APIURL: p.APIURL, CAFile: w.CAFile, Token: w.Token, StateDir: w.StateDir, App: w.App,
		Agent: p.Agent, AgentCmd: p.AgentCmd, ReviewAgent: p.ReviewAgent, ReviewAgentCmd: p.ReviewAgentCmd,
		JudgeAgent: p.JudgeAgent, JudgeAgentCmd: p.JudgeAgentCmd, Set: set,
		DryRun: p.DryRun, DisposeOnly: p.DisposeOnly, AllowHostMismatch: p.AllowHostMismatch, NoAgentCheck: p.NoAgentCheck,
		TakeOver: p.TakeOver, factory: w.factory,
	}
}

// bindPR binds a PR loop on this worker as `converge pr` binds it: the
// same settings, pre-flight, agents and workspace (newPRLoop); the run's
// state and journal are the workflow's.
func (rt *workerRuntime) bindPR(ctx context.Context, b temporal.Binding[kinds.PRParams, kinds.PRSetup]) (*kinds.PRBound, error) {
	opts := prOptionsOf(b.Params, rt.opts)
	ref, err := forge.ParsePRURL(b.Params.URL)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	ps, err := newPRSetup(rt.ios, opts, ref)
	if err != nil {
		return nil, err
	}
	if err := ps.checkRef(ref); err != nil {
		return nil, err
	}
	forges, tokens, err := prAuth(ctx, rt.ios, opts, ps.rest, ps.gql, ps.webHost, []forge.PRRef{ref}, ps.pre.values, ps.minted)
	if err != nil {
		return nil, err
	}
	p := ps.params(ref, forges[0], tokens[0])
	if err := preflight(ctx, &p); err != nil {
		return nil, err
	}
	if b.Setup == nil {
		// A new run refuses a PR another converge's live lease is on, as
		// it does locally (prJob.refuseHeld); this workflow's own lease
		// (a setup retried after it was written) is no hold.
		if l := p.heldBy; l != nil && l.Run != b.RunID && !opts.TakeOver && !p.DryRun {
			return nil, &cmdutil.ExitErr{Code: exitcode.Usage, Err: &heldError{target: ref.String(), lease: *l}}
		}
	}
	if b.Setup == nil && p.Checker != nil && !p.DisposeOnly {
		if err := p.Checker.Check(ctx, p.agentChecks, p.agentEnv()); err != nil {
			return nil, err
		}
	}
	if b.Setup != nil {
		// Markers are believed only from converge's own login: a worker
		// acting as another would take the run's own replies for a
		// human's and answer them again. It refuses the run instead.
		if want := b.Setup.Config.Self; want != "" && !strings.EqualFold(want, p.selfLogin) {
			return nil, &cmdutil.ExitErr{Code: exitcode.Auth, Err: fmt.Errorf("this worker acts as %s, but run %s acts as %s: every worker of a fleet must use the same forge identity (token or App)", p.selfLogin, b.RunID, want)}
		}
		// Both halves of the run read the settings the workflow recorded.
		p.Config = b.Setup.Config
	}
	fmt.Fprintf(rt.ios.ErrOut, "converge: worker: bound pr %s (run %s)\n", ref, b.RunID)
	fixed := &secure.Secrets{}
	fixed.Add(p.Secrets...)
	loop, ws := newPRLoop(p, filepath.Join(ps.stateDir, "work"), b.RunID, b.Reporter, temporal.StateJournal[prloop.State]{Journal: b.Journal})
	return &kinds.PRBound{
		Loop:    loop,
		Setup:   kinds.PRSetup{RunID: setupRunID(b), Ref: ref, Config: p.Config, DryRun: p.DryRun, DisposeOnly: p.DisposeOnly},
		Options: temporal.Options{PollMin: p.PollMin, PollMax: p.PollMax, FaultBudget: p.FaultBudget},
		Close:   func(ctx context.Context) { _ = ws.Cleanup(ctx) },
		Redact:  func(s string) string { return p.Minted.Redact(fixed.Redact(s)) },
		// The run's spend is kept in the workflow under the identity a
		// local run's store would name (forgespend.go).
		Identity: rateIdentity(ctx, p.Forge, ref, p.selfLogin),
	}, nil
}

// setupRunID is the run id a PR workflow's lease names: the one its setup
// recorded, so a later bind (a continue-as-new, another worker) keeps it.
func setupRunID(b temporal.Binding[kinds.PRParams, kinds.PRSetup]) string {
	if b.Setup != nil {
		return b.Setup.RunID
	}
	return b.RunID
}
