package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
)

// serveOptions are `converge serve`'s: every `converge pr` flag (each PR
// it registers runs as `converge pr` would run it) and the server's own.
type serveOptions struct {
	pr     prOptions
	Listen string
	Watch  []string // OWNER/REPO (GROUP[/SUB...]/PROJECT on GitLab), every open PR of it (or those matching Label or Authors)
	// Forge is --forge: the forge --watch names projects of when no PR
	// URL says; empty means the first URL's, else GitHub.
	Forge   string
	Label   string
	Authors []string
	// PollPoints is the forge points an hour the fleet's fallback polls
	// share (serve_budget.go); PollBudget, when given, the old budget of
	// polls a minute instead.
	PollPoints int
	PollBudget int
	// engine runs the loops in this process or on a Temporal cluster.
	engine engineOptions
	// changed tells a flag given from its default (nil: none was).
	changed func(name string) bool
}

// Names of the server's secrets in the environment: never flags, so they
// stay out of `ps` and shell history.
const (
	envWebhookSecret = "CONVERGE_WEBHOOK_SECRET"
	envServeToken    = "CONVERGE_SERVE_TOKEN"
)

func newServeCmd(factory *cmdutil.Factory, runF func(*serveOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &serveOptions{pr: prOptions{Set: map[string]string{}, factory: factory}}
	cmd := &cobra.Command{
		Use: "serve [PR_URL|MR_URL...]",
		Example: `  # every open PR of a repository and every one opened later; webhooks wake the loops
  CONVERGE_WEBHOOK_SECRET=s3cret converge serve --watch acme/widget --agent claude

  # two PRs, listening on another address
  converge serve https://github.com/acme/widget/pull/42 https://github.com/acme/widget/pull/43 --listen 127.0.0.1:9765

  # the loops on a Temporal cluster (converge worker runs them)
  converge serve --engine temporal --temporal-address temporal:7233 --watch acme/widget`,
		Short: "Run PR loops as a server: webhooks wake them, restart resumes them",
		Long: `Run one PR loop per registered pull request in this process, woken by
webhooks and polling only as a fallback. POST /webhook receives GitHub's
webhooks (signed with ` + envWebhookSecret + `) and GitLab's (merge
request, comment, pipeline and push events, carrying
` + envWebhookSecret + ` as the webhook's secret token), each
deduplicated by delivery id. PRs (on GitLab merge requests) are
registered as arguments, with POST /api/prs {"url": ...}, or by watching
a repository (--watch OWNER/REPO, or --forge gitlab --watch
GROUP[/SUBGROUP...]/PROJECT, narrowed by --watch-label and
--watch-author): its open PRs and every PR opened later. One serve
drives one forge's PRs. A restart resumes every unfinished
run in the state directory. SIGINT or SIGTERM drains: each loop stops at
its next step boundary, resumable.

Endpoints: POST /webhook, POST /api/prs, POST /api/repos, GET /api/runs,
GET /metrics (Prometheus), GET /healthz, and the dashboard at
/dashboard/ (see converge dashboard). Off loopback the API, /metrics
and the dashboard need ` + envServeToken + ` as a bearer token.

Every converge pr flag applies to every loop.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.pr.URLs = args
			opts.changed = cmd.Flags().Changed
			if runF != nil {
				return runF(opts)
			}
			return runServe(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	addPRFlags(f, &opts.pr)
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8765", "address to serve webhooks, the API and /metrics on")
	f.StringSliceVar(&opts.Watch, "watch", nil, "OWNER/REPO (with --forge gitlab GROUP[/SUB...]/PROJECT) whose open PRs to drive (repeatable)")
	f.StringVar(&opts.Forge, "forge", "", "github or gitlab: the forge to serve (default: the first URL's, else github)")
	f.StringVar(&opts.Label, "watch-label", "", "with --watch: only PRs with this label")
	f.StringSliceVar(&opts.Authors, "watch-author", nil, "with --watch: only PRs by these authors (repeatable)")
	addServeBudgetFlags(f, opts)
	addEngineFlags(f, &opts.engine)
	groupFlagHelp(cmd, "listen", "watch", "forge", "watch-label", "watch-author", "poll-points", "poll-budget")
	return cmd
}

func runServe(ctx context.Context, ios *cmdutil.IOStreams, opts *serveOptions) error {
	if opts.pr.DryRun || opts.pr.DisposeOnly || opts.pr.Fresh {
		return cmdutil.UsageErr("serve runs loops to their end and resumes them: --dry-run, --dispose-only and --fresh are for converge pr")
	}
	changed := opts.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	if err := checkServeBudget(opts, changed); err != nil {
		return err
	}
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if !opts.engine.temporal() {
		if err := containAgents(ios, opts.pr.UnsafeNoSandbox, opts.pr.StateDir); err != nil {
			return err
		}
	}
	if (opts.Label != "" || len(opts.Authors) > 0) && len(opts.Watch) == 0 {
		return cmdutil.UsageErr("--watch-label and --watch-author narrow --watch: name the repository with --watch OWNER/REPO")
	}
	var refs []forge.PRRef
	for _, u := range opts.pr.URLs {
		ref, err := forge.ParsePRURL(u)
		if err != nil {
			return cmdutil.UsageErr("%v", err)
		}
		refs = append(refs, ref)
	}
	kind, err := serveForge(opts.Forge, refs)
	if err != nil {
		return err
	}
	site, err := forgeOf(kind)
	if err != nil {
		return err
	}
	for _, w := range opts.Watch {
		if _, err := site.RepoRef(site.DefaultHost(), "", w); err != nil {
			return cmdutil.UsageErr("--watch: %v", err)
		}
	}
	// The forge is the first PR's, or --api-url's (the forge's public
	// host by default).
	first := forge.PRRef{Host: site.DefaultHost(), Scheme: "https", Forge: kind}
	if len(refs) > 0 {
		first = refs[0]
	}
	ps, err := newPRSetup(ios, &opts.pr, first)
	if err != nil {
		return err
	}
	for _, r := range refs {
		if err := ps.checkRef(r); err != nil {
			return err
		}
	}
	secret := ios.Getenv(envWebhookSecret)
	token := ios.Getenv(envServeToken)
	if !server.IsLoopback(opts.Listen) && token == "" {
		return cmdutil.UsageErr("--listen %s is off loopback: set %s, the bearer token the API and /metrics then require", opts.Listen, envServeToken)
	}

	// What the store must never hold (SEC-2): the server's secrets and
	// the forge token (an App's tokens, minted as the loops go, join
	// ps.minted as they are minted).
	secrets := []string{secret, token}
	if opts.pr.App.ID == "" && ios.Getenv("CONVERGE_APP_ID") == "" {
		t, _, err := ps.site.ResolveToken(ps.webHost, opts.pr.Token, ios.Getenv)
		if err != nil {
			return err
		}
		secrets = append(secrets, repo.Secrets(t)...)
	}
	// One per-host cap for every loop's client: twenty loops must not
	// make twenty times the requests in flight (REL-1).
	opts.pr.limiter = forgehttp.NewHostLimiter(ps.pre.values.Int("forge_concurrency"))
	opts.pr.apps = &appCache{}
	f := &fleet{ios: ios, ps: ps, stateDir: ps.stateDir}
	if f.polls, err = newPollBudget(opts); err != nil {
		return err
	}
	if err := f.open(ctx, secrets); err != nil {
		return err
	}
	defer f.db.Close()

	var eng serveEngine = f
	if opts.engine.temporal() {
		tf, err := newTemporalFleet(ctx, ios, opts, f.db)
		if err != nil {
			return err
		}
		defer tf.close()
		eng = tf
	}

	srv, err := server.New(server.Options{
		Loops: eng, Store: eng.store(), Secret: []byte(secret), Addr: opts.Listen, Token: token,
		Discover: f.discover, Forge: kind, Budget: f.polls, Stats: f.stats,
		Logger: slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	handler, closeDash, err := mountDashboard(srv, f.db, opts.Listen, token)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return cmdutil.UsageErr("--listen %s: %v", opts.Listen, err)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(closeDash)
	go func() { _ = hs.Serve(ln) }()
	srvCtx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSrv()
	go func() { _ = srv.Run(srvCtx) }()
	fmt.Fprintf(ios.Out, "serving on http://%s (webhooks at /webhook)\n", ln.Addr())
	if secret == "" {
		fmt.Fprintf(ios.ErrOut, "warning: %s is not set: every webhook delivery is refused and loops only poll\n", envWebhookSecret)
	}

	if err := eng.start(ctx, refs); err != nil {
		return err
	}
	for _, w := range opts.Watch {
		if err := f.db.PutRepoWatch(context.WithoutCancel(ctx), store.RepoWatch{Repo: w, Label: opts.Label, Authors: opts.Authors}); err != nil {
			return err
		}
	}
	if err := srv.DiscoverAll(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(ios.ErrOut, "%v\n", err)
	}
	eng.started(ctx)

	<-ctx.Done()
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	derr := eng.drain(drainCtx)
	_ = hs.Shutdown(drainCtx)
	stopSrv()
	return derr
}

// serveEngine is where serve runs its loops: this process (fleet, on the
// engine Manager) or a Temporal cluster (temporalFleet).
type serveEngine interface {
	server.Loops
	// store is what the server reads of the runs.
	store() server.Store
	// start picks up the runs a restart must (REL-2) and starts the PRs
	// registered and never started, then those named now (refs).
	start(ctx context.Context, refs []forge.PRRef) error
	// started is told once discovery ran.
	started(ctx context.Context)
	// drain ends serving on a signal.
	drain(ctx context.Context) error
}

var _ serveEngine = (*fleet)(nil)

func (f *fleet) store() server.Store { return f.db }

func (f *fleet) start(ctx context.Context, refs []forge.PRRef) error {
	// Unfinished runs first (REL-2): a restart picks up where it stopped.
	resumed, err := f.m.Resume(context.WithoutCancel(ctx))
	if err != nil {
		fmt.Fprintf(f.ios.ErrOut, "resume: %v\n", err)
	}
	if len(resumed) > 0 {
		fmt.Fprintf(f.ios.Out, "resumed %d unfinished run(s)\n", len(resumed))
	}
	// Every PR registered before whose loop never claimed a run (the
	// process died first), then the PRs named now.
	pending, err := f.unstarted(ctx)
	if err != nil && ctx.Err() == nil {
		return err
	}
	for _, r := range refs {
		pending = append(pending, r.String())
		// Every PR named is kept before the first loop starts: starting
		// twenty takes a while, and a crash meanwhile must not forget
		// the ones not yet reached (REL-2).
		if err := f.db.PutRegistration(context.WithoutCancel(ctx), r.String()); err != nil {
			return err
		}
	}
	f.registerAll(ctx, pending)
	return nil
}

func (f *fleet) started(ctx context.Context) {
	f.m.Prune(ctx) // what runs before this start left in the clone cache
}

// drain ends every loop at its next step boundary, resumable.
func (f *fleet) drain(ctx context.Context) error {
	if err := f.m.Drain(ctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	fmt.Fprintln(f.ios.Out, "drained: every unfinished run resumes at the next converge serve")
	return nil
}

// fleet is `converge serve`'s loops: the engine Manager behind the
// server's Loops, each PR run as `converge pr` runs it.
type fleet struct {
	ios      *cmdutil.IOStreams
	ps       *prSetup
	stateDir string
	db       *store.Store
	m        *engine.Manager
	shared   sync.Mutex // one run's terminal and proof print as one block
	polls    *server.Budget
}

var _ server.Loops = (*fleet)(nil)

func (f *fleet) open(ctx context.Context, secrets []string) error {
	var nonEmpty []string
	for _, s := range secrets {
		if s != "" {
			nonEmpty = append(nonEmpty, s)
		}
	}
	db, err := f.ps.opts.factory.OrDefault(f.ios).OpenStore(ctx, f.stateDir, store.WithSecrets(nonEmpty...), store.WithRedactor(f.ps.minted.Redact))
	if err != nil {
		return err
	}
	f.db = db
	f.m = engine.NewManager(engine.Config{
		Store: db, WorkDir: filepath.Join(f.stateDir, "work"), CodeOf: cmdutil.ExitCodeOf,
		Revive: map[string]engine.Reviver{"pr": prReviver(f.ios, db, filepath.Join(f.stateDir, "work"), &f.shared, f.params)},
		Polls:  f.pollGate(), Prune: f.prune,
	})
	return nil
}

// params are ref's loop parameters, its forge client and token made as
// `converge pr` makes them (with an App, a client per repository).
func (f *fleet) params(ctx context.Context, ref forge.PRRef) (loopParams, error) {
	if err := f.ps.checkRef(ref); err != nil {
		return loopParams{}, err
	}
	forges, tokens, err := prAuth(ctx, f.ios, f.ps.opts, f.ps.rest, f.ps.gql, f.ps.webHost, []forge.PRRef{ref}, f.ps.pre.values, f.ps.minted)
	if err != nil {
		return loopParams{}, err
	}
	return f.ps.params(ref, forges[0], tokens[0]), nil
}

// Register starts a loop on the PR at target, or resumes its unfinished
// run; a PR whose loop runs already is no error (PR-G5).
func (f *fleet) Register(ctx context.Context, target string) error {
	ref, err := forge.ParsePRURL(target)
	if err != nil {
		return err
	}
	if f.m.Get(ref.String()) != nil {
		return nil
	}
	// Kept before anything else, so a crash from here on still drives
	// the PR after the next start (REL-2).
	if err := f.db.PutRegistration(ctx, ref.String()); err != nil {
		return err
	}
	p, err := f.params(ctx, ref)
	if err != nil {
		return err
	}
	if err := preflight(ctx, &p); err != nil {
		return err
	}
	if p.Checker != nil {
		if err := p.Checker.Check(ctx, p.agentChecks, p.agentEnv()); err != nil {
			return err
		}
	}
	_, err = f.m.Add(context.WithoutCancel(ctx), engine.NewSpec(newPRJob(f.ios, f.db, f.m.WorkDir(), p, &f.shared)))
	if errors.Is(err, engine.ErrDraining) {
		return fmt.Errorf("%s: the server is shutting down", ref)
	}
	return err
}

// startConcurrency bounds the PR loops being set up at once: each setup
// is a few forge reads, which one at a time make a long list slow to
// start, and all at once a burst against the forge's limits.
const startConcurrency = 4

// registerAll starts a loop on every target, a few at a time; a target
// that fails says why and the rest go on.
func (f *fleet) registerAll(ctx context.Context, targets []string) {
	registerEach(ctx, f.ios, &f.shared, targets, f.Register)
}

// registerEach registers every target, startConcurrency at a time; a
// target that fails says why on ios, under mu, and the rest go on.
func registerEach(ctx context.Context, ios *cmdutil.IOStreams, mu *sync.Mutex, targets []string, register func(context.Context, string) error) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, startConcurrency)
	for _, target := range targets {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := register(ctx, target); err != nil {
				mu.Lock()
				fmt.Fprintf(ios.ErrOut, "%s: %v\n", target, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// unstarted are the registered PRs no run was ever claimed for.
func (f *fleet) unstarted(ctx context.Context) ([]string, error) {
	regs, err := f.db.Registrations(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range regs {
		if f.m.Get(t) != nil {
			continue
		}
		if _, err := f.db.LatestRunFor(ctx, t); err != nil {
			var nf *store.NotFoundError
			if !errors.As(err, &nf) {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// Wake ends the wait of target's loop; the loop re-reads the PR.
func (f *fleet) Wake(target string) {
	if ref, err := forge.ParsePRURL(target); err == nil {
		f.m.Wake(ref.String())
	}
}

// Snapshot is every loop the manager runs, as the server lists them.
func (f *fleet) Snapshot() []server.RunInfo {
	var out []server.RunInfo
	for _, r := range f.m.Snapshot() {
		out = append(out, server.RunInfo{Target: r.Target, Kind: r.Kind, RunID: r.RunID, Phase: r.Phase, Head: r.Head, Branch: r.Branch, Base: r.Base})
	}
	return out
}

// serveForge is the forge serve drives: --forge, which every URL must be
// on, else the first URL's, else GitHub.
func serveForge(flag string, refs []forge.PRRef) (forge.Kind, error) {
	kind, err := forge.ParseKind(flag)
	if err != nil {
		return kind, cmdutil.UsageErr("--forge: %v", err)
	}
	if flag == "" && len(refs) > 0 {
		kind = refs[0].Forge
	}
	for _, r := range refs {
		if r.Forge != kind {
			return kind, cmdutil.UsageErr("%s is on %s, not %s; one converge serve drives one forge's PRs, start another for the rest", r, r.Forge, kind)
		}
	}
	return kind, nil
}

// discover lists the open PRs of a watched repository that match it,
// through the forge's client.
func (f *fleet) discover(ctx context.Context, w store.RepoWatch) ([]string, error) {
	var scheme string
	if u, err := url.Parse(f.ps.rest); err == nil {
		scheme = u.Scheme
	}
	ref, err := f.ps.site.RepoRef(f.ps.webHost, scheme, w.Repo)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	forges, _, err := prAuth(ctx, f.ios, f.ps.opts, f.ps.rest, f.ps.gql, f.ps.webHost, []forge.PRRef{ref}, f.ps.pre.values, f.ps.minted)
	if err != nil {
		return nil, err
	}
	c, ok := forges[0].(provider.Client)
	if !ok {
		return nil, fmt.Errorf("the forge client cannot list pull requests")
	}
	prs, err := c.OpenPRs(ctx, ref)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, p := range prs {
		if server.WatchMatches(w, p.Author, p.Labels) {
			urls = append(urls, p.URL)
		}
	}
	return urls, nil
}
