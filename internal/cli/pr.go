package cli

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/agent/suggest"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/store"
)

type prOptions struct {
	URLs         []string // one loop per PR, all in this process
	APIURL       string
	CAFile       string
	Token        string
	Agent        string
	AgentCmd     string
	TestCmd      string
	AgentTimeout time.Duration // per agent run (AG-T1)
	TestTimeout  time.Duration // per build/test run (AG-T5)
	MaxIter      int
	MaxWallClock time.Duration
	// Waits of a round (PR-S1, PR-S2): GitHub's Copilot takes minutes.
	ReviewStartWindow time.Duration
	ReviewWait        time.Duration
	CIWait            time.Duration
	PollMin           time.Duration
	PollMax           time.Duration
	StateDir          string
	JSON              bool
	Keep              bool
	NoCopilot         bool
	Fresh             bool          // a new run even when one can resume (PR-G3)
	DryRun            bool          // write nothing; print what would be done (PR-M1)
	DisposeOnly       bool          // reply to and resolve open threads once (PR-M2)
	FaultBudget       time.Duration // how long forge faults are ridden out (REL-1)
	// AllowHostMismatch lets a PR URL name another host than the API's
	// (SEC-6); git still clones from where the API says.
	AllowHostMismatch bool
	// The local multi-angle review (PR-S4); empty agent and command mean
	// the fixer's.
	ReviewAgent    string
	ReviewAgentCmd string
	ReviewAngles   string
}

func newPRCmd(ios *IOStreams) *cobra.Command {
	opts := &prOptions{}
	def := prloop.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "pr PR_URL [PR_URL...]",
		Short: "Drive a pull request to a proven two-stable finish",
		Long: `Drive a pull request until it is review-clean and the forge proves it:
request the Copilot review, wait for it, fix what trusted reviewers found,
build and test, commit and push one commit per round, reply to and resolve
every thread, and stop at two-stable (or another terminal, see exit codes).

Several PR URLs run as several loops in this one process, on one state
store, one forge client and one clone cache; every line names its PR, and
the exit code is that of the first PR given that did not end two-stable.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("pr needs a PR URL, e.g. converge pr https://github.com/OWNER/REPO/pull/123")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URLs = args
			if opts.DisposeOnly {
				// PR-M2: success exits 0, any error 2.
				if err := runPR(cmd.Context(), ios, opts); err != nil {
					var ee *ExitErr
					if errors.As(err, &ee) && ee.Code == exitcode.Usage {
						return err
					}
					return &ExitErr{Code: exitcode.Usage, Err: err}
				}
				return nil
			}
			return runPR(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.APIURL, "api-url", "", "REST API base URL (default from the PR URL; GITHUB_API_URL)")
	f.StringVar(&opts.CAFile, "ca-file", "", "extra trusted CA certificates (PEM), for the API and git")
	f.StringVar(&opts.Token, "token", "", "forge token (default: CONVERGE_TOKEN, then the gh conventions)")
	f.StringVar(&opts.Agent, "agent", "suggest", "fixer agent: suggest (apply ```suggestion blocks) or command")
	f.StringVar(&opts.AgentCmd, "agent-cmd", "", "with --agent command: the program to run (task JSON on stdin, status record on stdout)")
	f.StringVar(&opts.TestCmd, "test-cmd", "", "test command (default: discovered from the repository)")
	f.DurationVar(&opts.AgentTimeout, "agent-timeout", agent.DefaultBudget, "time-box of one agent run; at it the agent is stopped, and a run without a status record is retried once")
	f.DurationVar(&opts.TestTimeout, "test-timeout", prloop.DefaultTestBudget, "time-box of one build/test run; a run stopped at it counts as failing")
	f.IntVar(&opts.MaxIter, "max-iterations", def.MaxIterations, "maximum rounds")
	f.DurationVar(&opts.MaxWallClock, "max-wall-clock", def.MaxWallClock, "maximum wall-clock time")
	f.DurationVar(&opts.ReviewStartWindow, "review-start-window", def.ReviewStartWindow, "how long a requested Copilot review may take to start before Copilot's latest review of the head is taken instead")
	f.DurationVar(&opts.ReviewWait, "review-wait", def.ReviewWaitMax, "longest wait for a requested Copilot review to land")
	f.DurationVar(&opts.CIWait, "ci-wait", def.CIWaitMax, "longest wait for CI to settle on a head")
	f.DurationVar(&opts.PollMin, "poll-min", 60*time.Second, "first wait between polls")
	f.DurationVar(&opts.PollMax, "poll-max", 600*time.Second, "longest wait between polls (back-off cap)")
	f.StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	f.BoolVar(&opts.JSON, "json", false, "print NDJSON events instead of lines")
	f.BoolVar(&opts.Keep, "keep", false, "keep the run's worktree")
	f.BoolVar(&opts.NoCopilot, "no-copilot", false, "do not expect Copilot: single-iteration mode")
	f.BoolVar(&opts.DryRun, "dry-run", false, "write nothing to the forge or the branch: run once on the existing threads (and the local review) and print what each step would do")
	f.BoolVar(&opts.DisposeOnly, "dispose-only", false, "reply to and resolve every open thread once, fix nothing, print a JSON envelope of replied/resolved/skipped thread ids (exit 0, or 2 on any error)")
	f.BoolVar(&opts.Fresh, "fresh", false, "start a new run even when an interrupted run on this PR can resume")
	f.DurationVar(&opts.FaultBudget, "fault-budget", prloop.DefaultFaultBudget, "how long forge outages and rate limits are ridden out before the run ends errored")
	f.StringVar(&opts.ReviewAgent, "review-agent", "", "agent for the local multi-angle review: command (default: the same as --agent; suggest cannot review)")
	f.StringVar(&opts.ReviewAgentCmd, "review-agent-cmd", "", "with --review-agent command: the program to run per angle (default: --agent-cmd)")
	f.StringVar(&opts.ReviewAngles, "review-angles", review.DefaultAngleNames(), "comma-separated angles of the local review, one agent run each")
	f.BoolVar(&opts.AllowHostMismatch, "allow-host-mismatch", false, "accept a PR URL on another host than the API's (git still uses the API's clone URL)")
	return cmd
}

func runPR(ctx context.Context, ios *IOStreams, opts *prOptions) error {
	var refs []forge.PRRef
	for _, u := range opts.URLs {
		ref, err := forge.ParsePRURL(u)
		if err != nil {
			return usageErr("%v", err)
		}
		if slices.Contains(refs, ref) {
			return usageErr("%s is given twice; one loop runs per PR (PR-G5)", u)
		}
		refs = append(refs, ref)
	}
	ref := refs[0]
	if opts.MaxIter < 1 {
		return usageErr("--max-iterations must be at least 1, got %d", opts.MaxIter)
	}
	if opts.PollMin <= 0 || opts.PollMax < opts.PollMin {
		return usageErr("--poll-min must be positive and --poll-max at least --poll-min")
	}
	if opts.AgentTimeout <= 0 || opts.TestTimeout <= 0 {
		return usageErr("--agent-timeout and --test-timeout must be positive")
	}
	if opts.ReviewStartWindow <= 0 || opts.ReviewWait < opts.ReviewStartWindow || opts.CIWait <= 0 {
		return usageErr("--review-start-window and --ci-wait must be positive and --review-wait at least --review-start-window")
	}
	ag, err := pickAgent(opts.Agent, opts.AgentCmd)
	if err != nil {
		return err
	}
	reviewer, err := pickReviewer(opts)
	if err != nil {
		return err
	}
	if opts.DryRun && opts.DisposeOnly {
		return usageErr("--dry-run and --dispose-only exclude each other: a dry run writes nothing, a disposal writes replies")
	}
	if opts.NoCopilot && reviewer == nil && !opts.DryRun && !opts.DisposeOnly {
		// Conjunct 4 is never dropped (PR-T1): with neither Copilot nor a
		// review agent the run could only end blocked, so say it now.
		return usageErr("--no-copilot leaves no independent review: the %s agent cannot review; add --review-agent command --review-agent-cmd CMD", reviewAgentName(opts))
	}
	rest, gql, err := ghclient.Endpoints(ref, opts.APIURL, ios.Getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	for _, r := range refs {
		if err := checkPRHost(r, rest, opts.AllowHostMismatch); err != nil {
			return err
		}
		if other, _, err := ghclient.Endpoints(r, opts.APIURL, ios.Getenv); err != nil || other != rest {
			return usageErr("%s is on another forge than %s; one converge pr runs PRs of one forge, start another for the rest", r, ref)
		}
	}
	webHost, err := ghclient.WebHost(rest)
	if err != nil {
		return usageErr("%v", err)
	}
	token, _, err := ghclient.ResolveToken(webHost, opts.Token, ios.Getenv, ghclient.GHAuthToken)
	if err != nil {
		return err
	}
	var cas []string
	if opts.CAFile != "" {
		cas = append(cas, opts.CAFile)
	}
	if f := ios.Getenv("SSL_CERT_FILE"); f != "" {
		cas = append(cas, f)
	}
	client, err := ghclient.New(ghclient.Options{APIURL: rest, GraphQLURL: gql, Token: token, CAFile: opts.CAFile})
	if err != nil {
		return usageErr("%v", err)
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = filepath.Dir(store.DefaultPath(ios.Getenv))
	}
	var testCmd []string
	if opts.TestCmd != "" {
		testCmd = []string{"sh", "-c", opts.TestCmd}
	}
	cfg := prloop.DefaultConfig()
	cfg.MaxIterations = opts.MaxIter
	cfg.MaxWallClock = opts.MaxWallClock
	cfg.ReviewStartWindow, cfg.ReviewWaitMax, cfg.CIWaitMax = opts.ReviewStartWindow, opts.ReviewWait, opts.CIWait
	// A dry run requests no review: it works once on the threads there
	// are, as single-iteration mode does (PR-M1, PR-M3).
	cfg.ExpectsBot = !opts.NoCopilot && !opts.DryRun
	// GitHub's review bot is Copilot (PR-O2, PR-O5).
	cfg.Bot, cfg.TrustedBots = copilot.New(), copilot.DefaultAllowlist()
	cfg.LocalReview = reviewer != nil
	params := make([]loopParams, len(refs))
	for i, ref := range refs {
		params[i] = loopParams{
			Ref:      ref,
			Forge:    client,
			Remote:   gitRemote(rest, ref, token, cas),
			StateDir: stateDir,
			Agent:    ag,
			Reviewer: reviewer,
			TestCmd:  testCmd,
			Config:   cfg,
			PollMin:  opts.PollMin,
			PollMax:  opts.PollMax,
			JSON:     opts.JSON,
			Keep:     opts.Keep,
			Secrets:  repo.Secrets(token),
			Author:   "converge",
			Email:    "converge@users.noreply.github.com",

			Fresh:       opts.Fresh,
			DryRun:      opts.DryRun,
			DisposeOnly: opts.DisposeOnly,
			FaultBudget: opts.FaultBudget,
			AgentBudget: opts.AgentTimeout,
			TestBudget:  opts.TestTimeout,
		}
	}
	_, err = runLoops(ctx, ios, params)
	return err
}

func pickAgent(name, cmdline string) (agent.Agent, error) {
	switch name {
	case "suggest":
		return suggest.New(), nil
	case "command":
		if strings.TrimSpace(cmdline) == "" {
			return nil, usageErr("--agent command needs --agent-cmd, e.g. --agent-cmd './fix.sh'")
		}
		// A missing program fails here, before the forge is touched,
		// rather than as a failed agent run in round one (AG-T4).
		if err := command.Preflight(cmdline); err != nil {
			return nil, usageErr("--agent-cmd: %v", err)
		}
		a, err := command.New([]string{"sh", "-c", command.AbsProgram(cmdline)}, command.Options{})
		if err != nil {
			return nil, usageErr("--agent-cmd: %v", err)
		}
		return a, nil
	}
	return nil, usageErr("unknown --agent %q: use suggest or command", name)
}

func reviewAgentName(opts *prOptions) string {
	if opts.ReviewAgent != "" {
		return opts.ReviewAgent
	}
	return opts.Agent
}

// pickReviewer builds the local review from the --review-* flags. It is
// nil when the review agent cannot review (suggest): then the run has no
// local review, and without Copilot no independent review at all.
func pickReviewer(opts *prOptions) (*review.Reviewer, error) {
	angles, err := review.ParseAngles(opts.ReviewAngles)
	if err != nil {
		return nil, usageErr("--review-angles: %v", err)
	}
	name, cmdline := opts.ReviewAgent, opts.ReviewAgentCmd
	if name == "" {
		name = opts.Agent
	}
	if cmdline == "" {
		cmdline = opts.AgentCmd
	}
	switch name {
	case "suggest":
		return nil, nil
	case "command":
		if strings.TrimSpace(cmdline) == "" {
			return nil, usageErr("--review-agent command needs --review-agent-cmd (or --agent-cmd), e.g. --review-agent-cmd './review.sh'")
		}
		if err := command.Preflight(cmdline); err != nil {
			return nil, usageErr("--review-agent-cmd: %v", err)
		}
		a, err := command.New([]string{"sh", "-c", command.AbsProgram(cmdline)}, command.Options{Name: "review-command"})
		if err != nil {
			return nil, usageErr("--review-agent-cmd: %v", err)
		}
		// The command line is part of the cache key: another reviewer's
		// verdict on a head is not this one's.
		return &review.Reviewer{Agent: a, Angles: angles, AgentID: cmdline}, nil
	}
	return nil, usageErr("unknown --review-agent %q: use command (suggest cannot review)", name)
}
