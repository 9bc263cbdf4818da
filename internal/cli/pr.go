package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/secure"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/verify"
)

type prOptions struct {
	URLs []string // one loop per PR, all in this process
	// UnsafeNoSandbox runs agents uncontained (SEC-7).
	UnsafeNoSandbox bool
	// kind is the forge the PRs are on (the first PR's; all must agree),
	// set when the run's setup is made.
	kind     forge.Kind
	APIURL   string
	CAFile   string
	Token    string
	Agent    string
	AgentCmd string
	StateDir string
	JSON     bool
	Keep     bool
	Fresh    bool // a new run even when one can resume (PR-G3)
	Watch    bool // stay after the run and keep its verdict current (PR-T14)
	TakeOver bool // drive the PR although another converge holds its lease (PR-T14)
	DryRun   bool // write nothing; print what would be done (PR-M1)
	// DisposeOnly replies to and resolves open threads once (PR-M2).
	DisposeOnly bool
	// AllowHostMismatch lets a PR URL name another host than the API's
	// (SEC-6); git still clones from where the API says.
	AllowHostMismatch bool
	// The local multi-angle review (PR-S4); empty agent and command mean
	// the fixer's.
	ReviewAgent    string
	ReviewAgentCmd string
	// The recap judge (PR-G2).
	JudgeAgent    string
	JudgeAgentCmd string
	// ConfigFile replaces the base branch's .converge.yaml (PR-M4).
	ConfigFile string
	// Set holds the config fields given as flags, by key, checked.
	Set map[string]string
	// NoAgentCheck skips the agents' pre-flight check (cmdutil.AgentChecker).
	NoAgentCheck bool
	// App is GitHub App auth (SEC-5, app.go).
	App appOptions
	// limiter, when set, is shared by every forge client made from these
	// options, so a fleet's loops keep one per-host cap (REL-1).
	limiter *forgehttp.HostLimiter
	// apps, when set, keeps the GitHub App loaded once for every loop, so
	// a fleet mints tokens per installation, not per PR (SEC-5).
	apps *appCache
	// engine runs the loops here or on a Temporal cluster.
	engine engineOptions
	// factory builds the forge clients and the agents (nil: the real
	// one).
	factory *cmdutil.Factory
}

func newPRCmd(factory *cmdutil.Factory, runF func(*prOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &prOptions{Set: map[string]string{}, factory: factory}
	cmd := &cobra.Command{
		Use: "pr PR_URL [PR_URL...]",
		Example: `  # the token from gh auth login; Copilot reviews, Claude Code fixes
  converge pr https://github.com/acme/widget/pull/42 --agent claude

  # no Copilot on the repository: Codex reviews each head instead
  converge pr https://github.com/acme/widget/pull/42 --agent claude --no-copilot --review-agent codex

  # what it would do, writing nothing
  converge pr https://github.com/acme/widget/pull/42 --dry-run

  # stay after two-stable and withdraw the verdict when its facts change
  converge pr https://github.com/acme/widget/pull/42 --agent claude --watch

  # a GitLab merge request, GitLab Duo reviewing
  converge pr https://gitlab.com/group/project/-/merge_requests/7 --agent codex`,
		Short: "Drive a pull request to a proven two-stable finish",
		Long: `Drive a pull request until it is review-clean and the forge proves it:
request the forge's review bot (Copilot on GitHub), wait for its review,
fix what trusted reviewers found, build and test, commit and push one
commit per round, reply to and resolve every thread, and stop at
two-stable (or another terminal, see exit codes).

Several PR URLs run as several loops in this one process, on one state
store, one forge client and one clone cache; every line names its PR, and
the exit code is that of the first PR given that did not end two-stable.

Settings come from flags, then CONVERGE_* variables, then the
.converge.yaml on the PR's base branch (or --config FILE), then the
defaults; converge config prints them and where each came from.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmdutil.UsageErr("pr needs a PR URL, e.g. converge pr https://github.com/OWNER/REPO/pull/123")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URLs = args
			if runF != nil {
				return runF(opts)
			}
			if opts.DisposeOnly {
				// PR-M2: success exits 0, any error 2.
				if err := runPR(cmd.Context(), ios, opts); err != nil {
					var ee *cmdutil.ExitErr
					if errors.As(err, &ee) && ee.Code == exitcode.Usage {
						return err
					}
					return &cmdutil.ExitErr{Code: exitcode.Usage, Err: err}
				}
				return nil
			}
			return runPR(cmd.Context(), ios, opts)
		},
	}
	addPRFlags(cmd.Flags(), opts)
	// serve holds every PR it finished already (its --watch names
	// repositories).
	cmd.Flags().BoolVar(&opts.TakeOver, "take-over", false, "drive the PR although another converge's lease is on its head (another machine or state store); that run yields at its next look")
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "stay after the run ends and keep its verdict current: on any change to the PR a new run retracts a verdict whose facts broke (PR-T14), until the PR closes or converge is stopped")
	addEngineFlags(cmd.Flags(), &opts.engine)
	groupFlagHelp(cmd)
	return cmd
}

// addPRFlags are converge pr's flags, which converge serve takes too: each
// PR it drives runs as converge pr would run it.
func addPRFlags(f *pflag.FlagSet, opts *prOptions) {
	f.StringVar(&opts.APIURL, "api-url", "", "REST API base URL (default from the PR URL; GITHUB_API_URL)")
	f.StringVar(&opts.CAFile, "ca-file", "", "extra trusted CA certificates (PEM), for the API and git")
	f.StringVar(&opts.Token, "token", "", "forge token (default: CONVERGE_TOKEN, then the gh conventions)")
	f.StringVar(&opts.Agent, "agent", "suggest", "fixer agent: suggest (apply ```suggestion blocks), command, claude, codex, gemini or opencode")
	f.StringVar(&opts.AgentCmd, "agent-cmd", "", "with --agent command: the program to run (task JSON on stdin, status record on stdout)")
	f.StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	addSandboxFlag(f, &opts.UnsafeNoSandbox)
	f.BoolVar(&opts.JSON, "json", false, "print NDJSON events instead of lines")
	f.BoolVar(&opts.Keep, "keep", false, "keep the run's worktree and clone (PR-G6)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "write nothing to the forge or the branch: run once on the existing threads (and the local review) and print what each step would do")
	f.BoolVar(&opts.DisposeOnly, "dispose-only", false, "reply to and resolve every open thread once, fix nothing, print a JSON envelope of replied/resolved/skipped thread ids (exit 0, or 2 on any error)")
	f.BoolVar(&opts.Fresh, "fresh", false, "start a new run even when an interrupted run on this PR can resume")
	f.StringVar(&opts.ReviewAgent, "review-agent", "", "agent for the local multi-angle review: command, or claude, codex, gemini, opencode (default: the --agent backend; a suggest or command fixer has none unless given)")
	f.StringVar(&opts.ReviewAgentCmd, "review-agent-cmd", "", "with --review-agent command (implied by this flag): the program to run per angle")
	f.BoolVar(&opts.AllowHostMismatch, "allow-host-mismatch", false, "accept a PR URL on another host than the API's (git still uses the API's clone URL)")
	f.StringVar(&opts.JudgeAgent, "judge-agent", "", "agent for the recap gate's verdict (PR-G2): command, claude, codex, gemini or opencode (read-only); none: every recap hands off")
	f.StringVar(&opts.JudgeAgentCmd, "judge-agent-cmd", "", "with --judge-agent command: the program to run (recap task on stdin, verdict as its last line)")
	f.StringVar(&opts.ConfigFile, "config", "", "config file to use instead of the .converge.yaml on the PR's base branch")
	// Every config field is a flag too (PR-M4).
	for _, fd := range config.PRFields() {
		fl := f.VarPF(&cmdutil.FieldFlag{Field: fd, Values: opts.Set}, fd.Flag(), "", fd.Help)
		if fd.Kind == config.Bool {
			fl.NoOptDefVal = "true"
		}
	}
	cmdutil.AddNoAgentCheck(f, &opts.NoAgentCheck)
	addAppFlags(f, &opts.App)
	f.Var(noCopilot{opts.Set}, "no-copilot", "do not expect the forge's review bot (Copilot on GitHub): single-iteration mode (the same as --expects-copilot=false)")
	f.Lookup("no-copilot").NoOptDefVal = "true"
}

// noCopilot is --no-copilot, the short way to say expects_copilot: false.
type noCopilot struct{ set map[string]string }

func (n noCopilot) String() string { return "false" }
func (n noCopilot) Type() string   { return "bool" }
func (n noCopilot) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	n.set["expects_copilot"] = strconv.FormatBool(!b)
	return nil
}

func runPR(ctx context.Context, ios *cmdutil.IOStreams, opts *prOptions) error {
	if err := opts.engine.check(ios); err != nil {
		return err
	}
	if opts.engine.temporal() {
		if opts.Watch {
			// Not silently ignored: the fleet's serve holds finished PRs.
			return cmdutil.UsageErr("--watch runs on the local engine only; on Temporal, converge serve --engine temporal holds finished PRs")
		}
		return runPRTemporal(ctx, ios, opts)
	}
	if err := containAgents(ios, opts.UnsafeNoSandbox, opts.StateDir); err != nil {
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
	ps, err := newPRSetup(ios, opts, refs[0])
	if err != nil {
		return err
	}
	for _, r := range refs {
		if err := ps.checkRef(r); err != nil {
			return err
		}
	}
	forges, tokens, err := prAuth(ctx, ios, opts, ps.rest, ps.gql, ps.webHost, refs, ps.pre.values, ps.minted)
	if err != nil {
		return err
	}
	params := make([]loopParams, len(refs))
	for i, ref := range refs {
		params[i] = ps.params(ref, forges[i], tokens[i])
	}
	_, err = runLoops(ctx, ios, params)
	return err
}

// prSetup is what every PR of one `converge pr` (or `converge serve`)
// shares: the checked flags, environment and --config, the agents they
// make, the forge's endpoints and the state directory.
type prSetup struct {
	ios                *cmdutil.IOStreams
	opts               *prOptions
	file               *config.File
	pre                *prSettingsT
	agents             *prAgents
	site               provider.Provider
	rest, gql, webHost string
	cas                []string
	stateDir           string
	checker            *cmdutil.AgentChecker
	// minted are the tokens a GitHub App mints, redacted as they come.
	minted *secure.Secrets
}

// newPRSetup checks everything but the network: first is the PR whose
// host names the forge when --api-url does not.
func newPRSetup(ios *cmdutil.IOStreams, opts *prOptions, first forge.PRRef) (*prSetup, error) {
	ref := first
	if opts.DryRun && opts.DisposeOnly {
		return nil, cmdutil.UsageErr("--dry-run and --dispose-only exclude each other: a dry run writes nothing, a disposal writes replies")
	}
	var file *config.File
	if opts.ConfigFile != "" {
		data, err := os.ReadFile(opts.ConfigFile)
		if err != nil {
			return nil, cmdutil.UsageErr("--config: %v", err)
		}
		if file, err = config.ParseFile(config.PRFields(), opts.ConfigFile, data); err != nil {
			return nil, cmdutil.UsageErr("%v", err)
		}
	}
	if err := ios.CheckEnv(); err != nil {
		return nil, err
	}
	// Flags and the environment are checked before the network is; a
	// repository's file is checked when its base branch is read, and the
	// agents are built again with its settings then.
	ac, err := cmdutil.AgentSettings(ios, opts.Set, file)
	if err != nil {
		return nil, err
	}
	agents, err := buildPRAgents(ios, opts, ac)
	if err != nil {
		return nil, err
	}
	opts.kind = ref.Forge
	pre, err := prSettings(opts, ios, file, agents.reviewer)
	if err != nil {
		return nil, err
	}
	site, err := forgeOf(ref.Forge)
	if err != nil {
		return nil, err
	}
	rest, gql, err := site.Endpoints(ref, opts.APIURL, ios.Getenv)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	webHost, err := site.WebHost(rest)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	var cas []string
	if opts.CAFile != "" {
		cas = append(cas, opts.CAFile)
	}
	if f := ios.Getenv("SSL_CERT_FILE"); f != "" {
		cas = append(cas, f)
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = filepath.Dir(store.DefaultPath(ios.Getenv))
	}
	if err := cmdutil.WritableDir(stateDir); err != nil {
		return nil, err
	}
	var checker *cmdutil.AgentChecker
	if !opts.NoAgentCheck {
		// One for all the PRs: their agents are checked once each.
		checker = &cmdutil.AgentChecker{}
	}
	return &prSetup{
		ios: ios, opts: opts, file: file, pre: pre, agents: agents,
		site: site, rest: rest, gql: gql, webHost: webHost, cas: cas, stateDir: stateDir, checker: checker,
		minted: &secure.Secrets{},
	}, nil
}

// checkRef refuses a PR on another host than the forge's (SEC-6).
func (s *prSetup) checkRef(r forge.PRRef) error {
	if err := checkPRHost(r, s.rest, s.opts.AllowHostMismatch); err != nil {
		return err
	}
	if r.Forge != s.site.Kind() {
		return cmdutil.UsageErr("%s is on %s and the first PR on %s; one converge runs PRs of one forge, start another for the rest", r, r.Forge, s.site.Kind())
	}
	if other, _, err := s.site.Endpoints(r, s.opts.APIURL, s.ios.Getenv); err != nil || other != s.rest {
		return cmdutil.UsageErr("%s is on another forge than %s; one converge runs PRs of one forge, start another for the rest", r, s.rest)
	}
	return nil
}

// params are one PR's loop parameters, on its forge client and git
// credential.
func (s *prSetup) params(ref forge.PRRef, f forge.Forge, cred prCred) loopParams {
	ios, opts, file, agents, stateDir, checker, rest, cas := s.ios, s.opts, s.file, s.agents, s.stateDir, s.checker, s.rest, s.cas
	return loopParams{
		factory:  opts.factory,
		Ref:      ref,
		Forge:    f,
		Remote:   gitRemote(rest, ref, cred.Token, cas),
		GitToken: cred.gitToken(ref),
		Minted:   s.minted,
		StateDir: stateDir,
		Agent:    agents.fixer,
		JSON:     opts.JSON,
		Keep:     opts.Keep,
		Secrets:  repo.Secrets(cred.Token),
		Author:   "converge",
		Email:    "converge@users.noreply.github.com",

		// Until the repository's file is read (Configure), the start's
		// forge reads ride faults out on the flags' and environment's
		// budget and back-off.
		FaultBudget: s.pre.values.Duration("fault_budget"),
		PollMin:     s.pre.values.Duration("poll_min"),
		PollMax:     s.pre.values.Duration("poll_max"),

		Judge:       agents.judge,
		Checker:     checker,
		NoReviewWhy: noReviewWhy(opts),
		Fresh:       opts.Fresh,
		Watch:       opts.Watch,
		TakeOver:    opts.TakeOver,
		DryRun:      opts.DryRun,
		DisposeOnly: opts.DisposeOnly,
		// The settings are the repository's: its base branch's
		// .converge.yaml under the flags and the environment.
		Configure: func(ctx context.Context, p *loopParams, pr *forge.PullRequest) error {
			f := file
			if f == nil {
				data, found, err := prwork.ReadBaseFile(ctx, filepath.Join(p.StateDir, "work"), p.CloneURL, p.GitEnv, p.GitCred, pr, config.FileName)
				if err != nil {
					return fmt.Errorf("read %s of %s: %w", config.FileName, pr.Ref, err)
				}
				if found {
					name := fmt.Sprintf("%s (%s on %s)", config.FileName, pr.BaseRef, pr.Ref.FullName())
					if f, err = config.ParseFile(config.PRFields(), name, data); err != nil {
						return cmdutil.UsageErr("%v", err)
					}
				}
			}
			// The agents as this PR's settings make them, the forge
			// token's value kept from every one (SEC-2).
			ac, err := cmdutil.AgentSettings(ios, opts.Set, f)
			if err != nil {
				return err
			}
			ac.Secrets = append(slices.Clone(p.Secrets), p.Minted.List()...)
			agents, err := buildPRAgents(ios, opts, ac)
			if err != nil {
				return err
			}
			s, err := prSettings(opts, ios, f, agents.reviewer)
			if err != nil {
				return err
			}
			s.apply(p)
			p.Agent, p.Judge, p.AgentEnv = agents.fixer, agents.judge, ac.TaskEnv()
			p.agentChecks = agents.checks
			return nil
		},
	}
}

// prSettings is one PR's effective settings: resolved, checked across
// fields, and the loop's configuration made of them.
type prSettingsT struct {
	values   config.Values
	settings []config.Setting
	cfg      prloop.Config
	reviewer *review.Reviewer
}

func prSettings(opts *prOptions, ios *cmdutil.IOStreams, file *config.File, reviewer *review.Reviewer) (*prSettingsT, error) {
	ss, err := config.Resolve(config.PRFields(), config.Inputs{File: file, Getenv: ios.Getenv, Flags: opts.Set})
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	v := config.ValuesOf(ss)
	where := func(key string) string {
		for _, s := range ss {
			if s.Key == key {
				if s.Where != "" {
					return fmt.Sprintf("%s=%s (%s)", key, s.Value, s.Where)
				}
				return fmt.Sprintf("%s=%s (%s)", key, s.Value, s.Source)
			}
		}
		return key
	}
	if v.Duration("poll_max") < v.Duration("poll_min") {
		return nil, cmdutil.UsageErr("poll_max must be at least poll_min: %s, %s", where("poll_max"), where("poll_min"))
	}
	if v.Duration("review_wait") < v.Duration("review_start_window") {
		return nil, cmdutil.UsageErr("review_wait must be at least review_start_window: %s, %s", where("review_wait"), where("review_start_window"))
	}
	cfg := prloop.DefaultConfig()
	cfg.MaxIterations = v.Int("max_iterations")
	cfg.MaxWallClock = v.Duration("max_wall_clock")
	cfg.MaxCostUSD = v.Float("max_cost")
	if err := maxCostCheck(opts, cfg.MaxCostUSD, where("max_cost")); err != nil {
		return nil, err
	}
	cfg.DiffMultiplier = v.Float("diff_multiplier")
	cfg.MaxStructuralRounds = v.Int("max_structural_rounds")
	cfg.IdleTimeout = v.Duration("idle_timeout")
	cfg.ReviewStartWindow, cfg.ReviewWaitMax, cfg.CIWaitMax = v.Duration("review_start_window"), v.Duration("review_wait"), v.Duration("ci_wait")
	// A dry run requests no review: it works once on the threads there
	// are, as single-iteration mode does (PR-M1, PR-M3).
	cfg.ExpectsBot = v.Bool("expects_copilot") && !opts.DryRun
	cfg.ExpectNoChecks = !v.Bool("expects_github_checks")
	cfg.FixMinor = v.Bool("fix_minor")
	cfg.RecapInterval = v.Int("recap_interval")
	cfg.SyncBase = v.Bool("sync_base")
	cfg.ReviewMemory = v.Bool("review_memory")
	// The forge's review bot, its provider's: Copilot on GitHub, Duo on
	// GitLab (PR-O2, PR-O5). trusted_bots left at its default (Copilot's
	// logins) trusts the forge's own bot's instead, since a GitLab user
	// may be named like a Copilot login and must not be trusted as a bot.
	site, err := forgeOf(opts.kind)
	if err != nil {
		return nil, err
	}
	cfg.Bot, cfg.TrustedBots = site.ReviewBot(), v.List("trusted_bots")
	if f, _ := config.Lookup(config.PRFields(), "trusted_bots"); slices.Equal(cfg.TrustedBots, strings.Split(f.Default, ",")) {
		cfg.TrustedBots = site.TrustedBots()
	}
	if reviewer != nil {
		angles, err := review.ParseAngles(v.String("review_angles"))
		if err != nil {
			return nil, cmdutil.UsageErr("%s: %v", where("review_angles"), err)
		}
		rv := *reviewer
		rv.Angles, rv.InstructionsPath = angles, v.String("review_instructions")
		// PR-S4: a review after structural rounds looks harder.
		rv.Escalation = review.Escalation{Off: !v.Bool("review_escalation"), Models: v.List("review_models")}
		if more := v.String("review_escalation_angles"); more != "" {
			if rv.Escalation.Angles, err = review.ParseAngles(more); err != nil {
				return nil, cmdutil.UsageErr("%s: %v", where("review_escalation_angles"), err)
			}
		}
		reviewer = &rv
	}
	cfg.LocalReview = reviewer != nil
	if !v.Bool("expects_copilot") && reviewer == nil && !opts.DryRun && !opts.DisposeOnly {
		// Conjunct 4 is never dropped (PR-T1): with neither Copilot nor a
		// review agent the run could only end blocked, so say it now.
		return nil, cmdutil.UsageErr("%s leaves no independent review: %s; add --review-agent command --review-agent-cmd CMD", where("expects_copilot"), noReviewWhy(opts))
	}
	return &prSettingsT{values: v, settings: ss, cfg: cfg, reviewer: reviewer}, nil
}

// apply sets a loop's parameters from the settings.
func (s *prSettingsT) apply(p *loopParams) {
	v := s.values
	p.Config = s.cfg
	p.Config.Self = p.selfLogin
	p.Reviewer = s.reviewer
	p.PollMin, p.PollMax = v.Duration("poll_min"), v.Duration("poll_max")
	p.FaultBudget = v.Duration("fault_budget")
	p.AgentBudget, p.TestBudget = v.Duration("agent_timeout"), v.Duration("test_timeout")
	p.MaxFixers, p.AgentModels = v.Int("max_parallel_fixers"), v.List("agent_models")
	p.TestCmd, p.AllowUntested, p.Proof = nil, v.Bool("allow_untested"), v.String("proof")
	// PR-V3: 0 in the settings is no bound.
	noBound := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	p.Bounds = verify.Bounds{PushBytes: int64(noBound(v.Int("max_push_bytes"))), FileBytes: int64(noBound(v.Int("max_file_bytes"))), PushFiles: noBound(v.Int("max_push_files"))}
	if c := v.String("test_cmd"); c != "" {
		p.TestCmd = []string{"sh", "-c", c}
	}
}

// prAgents are the agents of a PR run: the fixer, the local review's,
// the judge's; checks are its CLI backends, for the pre-flight check.
type prAgents struct {
	fixer    agent.Agent
	reviewer *review.Reviewer
	judge    *recap.Judge
	checks   []cmdutil.CheckTarget
}

// buildPRAgents builds the agents the flags name, each CLI backend with
// ac. A missing program fails here, before the forge is touched (AG-T4).
func buildPRAgents(ios *cmdutil.IOStreams, opts *prOptions, ac cmdutil.AgentConfig) (*prAgents, error) {
	b := cmdutil.NewAgentBuilder(opts.factory.OrDefault(ios), ac)
	out := &prAgents{}
	var err error
	if out.fixer, err = pickAgent(b, opts.Agent, opts.AgentCmd, backends.RoleFix); err != nil {
		return nil, err
	}
	if out.reviewer, err = pickReviewer(b, opts); err != nil {
		return nil, err
	}
	if opts.JudgeAgent != "" {
		a, err := pickJudge(b, opts.JudgeAgent, opts.JudgeAgentCmd)
		if err != nil {
			return nil, err
		}
		out.judge = &recap.Judge{Agent: a}
	}
	out.checks = b.Built()
	return out, nil
}

// pickAgent builds the --agent in role (the fixer; a command judge).
func pickAgent(b *cmdutil.AgentBuilder, name, cmdline, role string) (agent.Agent, error) {
	switch name {
	case "suggest":
		return b.Agent(name, "", role)
	case "command":
		// A missing program fails here, before the forge is touched,
		// rather than as a failed agent run in round one (AG-T4).
		a, err := b.Agent(name, cmdline, role)
		if errors.Is(err, backends.ErrNoCommand) {
			return nil, cmdutil.UsageErr("--agent command needs --agent-cmd, e.g. --agent-cmd './fix.sh'")
		}
		if err != nil {
			return nil, cmdutil.UsageErr("--agent-cmd: %v", err)
		}
		return a, nil
	}
	if backends.Known(name) {
		a, err := b.Agent(name, "", role)
		if err != nil {
			return nil, cmdutil.UsageErr("--agent %s: %v", name, err)
		}
		return a, nil
	}
	return nil, cmdutil.UsageErr("unknown --agent %q: use suggest or command, or one of %s", name, strings.Join(backends.Names(), ", "))
}

// pickJudge builds the --judge-agent: a command, or a CLI backend whose
// judge runs are read-only and answer in their final message
// (agent.ReadOnly). A missing program fails here, before the forge is
// touched (AG-T4).
func pickJudge(b *cmdutil.AgentBuilder, name, cmdline string) (agent.Agent, error) {
	if backends.Known(name) {
		a, err := b.Agent(name, "", backends.RoleJudge)
		if err != nil {
			return nil, cmdutil.UsageErr("--judge-agent %s: %v", name, err)
		}
		return a, nil
	}
	if name != "command" {
		return nil, cmdutil.UsageErr("unknown --judge-agent %q: use command, or one of %s", name, strings.Join(backends.Names(), ", "))
	}
	a, err := pickAgent(b, "command", cmdline, backends.RoleJudge)
	if err != nil {
		return nil, cmdutil.UsageErr("--judge-agent-cmd: %v", err)
	}
	return a, nil
}

// reviewAgentName is the review agent the flags name: --review-agent,
// command when only --review-agent-cmd is given, else the fixer's
// backend. A command fixer is never its own reviewer: a fixer script
// rarely speaks the review protocol, and every angle would come back
// "not parsed" round after round.
func reviewAgentName(opts *prOptions) string {
	switch {
	case opts.ReviewAgent != "":
		return opts.ReviewAgent
	case opts.ReviewAgentCmd != "":
		return "command"
	case opts.Agent == "command":
		return ""
	}
	return opts.Agent
}

// noReviewWhy says why the flags give the run no local review.
func noReviewWhy(opts *prOptions) string {
	if reviewAgentName(opts) == "" {
		return "a command fixer is not a reviewer, and no --review-agent is given"
	}
	return "the " + reviewAgentName(opts) + " agent cannot review"
}

// pickReviewer builds the local review from the --review-* flags. It is
// nil when there is no review agent (a command fixer without
// --review-agent) or it cannot review (suggest): then the run has no
// local review, and without Copilot no independent review at all.
func pickReviewer(b *cmdutil.AgentBuilder, opts *prOptions) (*review.Reviewer, error) {
	name, cmdline := reviewAgentName(opts), opts.ReviewAgentCmd
	if cmdline != "" && name != "command" {
		return nil, cmdutil.UsageErr("--review-agent-cmd goes with --review-agent command, not --review-agent %s", name)
	}
	switch name {
	case "", "suggest":
		return nil, nil
	case "command":
		a, err := b.Agent(name, cmdline, backends.RoleReview)
		if errors.Is(err, backends.ErrNoCommand) {
			return nil, cmdutil.UsageErr("--review-agent command needs --review-agent-cmd, e.g. --review-agent-cmd './review.sh'")
		}
		if err != nil {
			return nil, cmdutil.UsageErr("--review-agent-cmd: %v", err)
		}
		// The command line is part of the cache key: another reviewer's
		// verdict on a head is not this one's.
		return &review.Reviewer{Agent: a, AgentID: cmdline}, nil
	}
	if backends.Known(name) {
		cfg := backends.Config{Name: name, Role: backends.RoleReview}
		a, err := b.Agent(name, "", backends.RoleReview)
		if err != nil {
			return nil, cmdutil.UsageErr("--review-agent %s: %v", name, err)
		}
		return &review.Reviewer{Agent: a, AgentID: backends.ID(a, cfg)}, nil
	}
	return nil, cmdutil.UsageErr("unknown --review-agent %q: use command (suggest cannot review), or one of %s", name, strings.Join(backends.Names(), ", "))
}
