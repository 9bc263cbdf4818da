package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
)

type demoOptions struct {
	StateDir string
	// UnsafeNoSandbox runs the demo's builds and tests uncontained (SEC-7).
	UnsafeNoSandbox bool
	JSON            bool
	Keep            bool
	CopilotDelay    time.Duration
	// Forge is the emulator the demo runs on.
	Forge forge.Kind
	// factory builds the forge client and the agent (nil: the real one).
	factory *cmdutil.Factory
	// atForge, in tests, reads the GitLab emulator after the loop and
	// before it closes, so the outcome is checked at the forge.
	atForge func(*fakelab.Lab, fakelab.DemoInfo)
}

func newDemoCmd(factory *cmdutil.Factory, runF func(*demoOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &demoOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "demo",
		Example: `  # offline, on the built-in GitHub emulator
  converge demo

  # the same on the GitLab emulator, as NDJSON events
  converge demo --forge gitlab --json`,
		Short: "Run the whole loop offline against a built-in GitHub or GitLab emulator",
		Long: `Start the GitHub emulator in-process with a small Go repository whose
pull request has real defects, and drive it to a proven two-stable finish:
the scripted Copilot reviewer finds the defects over two rounds, converge
applies the suggestions, runs the tests, commits, pushes, replies to and
resolves every thread, and prints the proof.

With --forge gitlab the same repository is a merge request on the GitLab
emulator, without GitLab Duo: converge's local review of each head (an
offline reviewer that knows the demo's defects) is the independent review,
and the loop fixes what it finds until a head reviews clean and its
pipeline passes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runDemo(cmd.Context(), ios, opts)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default: a temporary directory removed on exit)")
	addSandboxFlag(cmd.Flags(), &opts.UnsafeNoSandbox)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print NDJSON events instead of lines")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the state directory and worktree")
	cmd.Flags().DurationVar(&opts.CopilotDelay, "copilot-delay", time.Second, "how long the scripted Copilot takes to review")
	cmd.Flags().Var(forgeFlag{&opts.Forge}, "forge", "the emulated forge: github (Copilot reviews) or gitlab (the local review is the independent reviewer)")
	return cmd
}

func runDemo(ctx context.Context, ios *cmdutil.IOStreams, opts *demoOptions) error {
	dir := opts.StateDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "converge-demo-")
		if err != nil {
			return fmt.Errorf("demo: create temporary directory: %w", err)
		}
		dir = tmp
		if !opts.Keep {
			defer os.RemoveAll(tmp)
		}
	}
	if err := containAgents(ios, opts.UnsafeNoSandbox, dir); err != nil {
		return err
	}
	if opts.Forge == forge.GitLab {
		return runDemoGitLab(ctx, ios, opts, dir)
	}
	hub, err := fakehub.New(fakehub.Options{
		StateDir:     dir + "/forge",
		CopilotDelay: opts.CopilotDelay,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := hub.Start(ctx); err != nil {
		return fmt.Errorf("demo: start emulator: %w", err)
	}
	defer hub.Close()
	demo, err := fakehub.SeedDemo(ctx, hub)
	if err != nil {
		return fmt.Errorf("demo: seed repository: %w", err)
	}
	ref, err := forge.ParsePRURL(demo.PRURL)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	token := hub.Tokens().Author
	site, err := forgeOf(ref.Forge)
	if err != nil {
		return err
	}
	client, err := opts.factory.OrDefault(ios).ForgeClient(site, provider.ClientOptions{
		APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), Token: token, CAFile: hub.CAFile(),
	})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !opts.JSON {
		fmt.Fprintf(ios.Out, "converge demo: GitHub emulator at %s, PR %s\n", hub.APIURL(), demo.PRURL)
	}

	events, cancel := hub.Subscribe()
	defer cancel()
	wake := wakeOn(events)

	cfg := prloop.DefaultConfig()
	cfg.Bot, cfg.TrustedBots = site.ReviewBot(), site.TrustedBots()
	cfg.ReviewStartWindow = 30 * time.Second
	cfg.ReviewWaitMax = 2 * time.Minute
	cfg.CIWaitMax = 2 * time.Minute
	fixer, err := opts.factory.OrDefault(ios).Agent(backends.Config{}, backends.Suggest, "", backends.RoleFix)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return demoLoop(ctx, ios, opts, client, loopParams{
		Ref:      ref,
		Forge:    client,
		CloneURL: hub.GitURL(demo.Owner, demo.Repo),
		GitEnv:   repo.AuthEnvFor(hub.GitURL(demo.Owner, demo.Repo), token, hub.CAFile()),
		StateDir: dir,
		Agent:    fixer,
		Config:   cfg,
		PollMin:  250 * time.Millisecond,
		PollMax:  2 * time.Second,
		Wake:     wake,
		JSON:     opts.JSON,
		Keep:     opts.Keep,
		Secrets:  repo.Secrets(token),
		Author:   "converge",
		Email:    "converge@users.noreply.github.com",
	})
}

// demoLoop runs the demo's loop and then reads the forge once more: the
// proof must match what the forge shows.
func demoLoop(ctx context.Context, ios *cmdutil.IOStreams, opts *demoOptions, f forge.Forge, p loopParams) error {
	term, err := runLoop(ctx, ios, p)
	if term != nil && term.Proof != nil && !opts.JSON {
		pr, oerr := f.Observe(ctx, p.Ref)
		if oerr == nil {
			fmt.Fprintf(ios.Out, "forge check: emulator head %s, proof head %s, match=%v\n", pr.HeadSHA, term.Proof.HeadSHA, pr.HeadSHA == term.Proof.HeadSHA)
		}
	}
	return err
}

// wakeOn is a loop's wake channel fed by an emulator's events: any
// number of events while the loop works is one wake (the loop reads the
// whole forge anyway). It ends when events is closed.
func wakeOn[E any](events <-chan E) chan struct{} {
	wake := make(chan struct{}, 1)
	go func() {
		for range events {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return wake
}
