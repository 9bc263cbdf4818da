package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
)

type sandboxOptions struct {
	// Forge is the forge the sandbox emulates.
	Forge        forge.Kind
	StateDir     string
	Addr         string
	HTTP         bool
	CopilotDelay time.Duration
	// CopilotProfile is fakehub's Copilot pace: fast (CopilotDelay) or
	// real (github.com's start and review delays).
	CopilotProfile string
	Verbose        bool
	// NoCI seeds a repository on which no CI ever reports: converge's own
	// verdict is the only check on a head.
	NoCI bool
}

// sandboxInfo is the one JSON line `converge sandbox` prints.
type sandboxInfo struct {
	APIURL     string        `json:"api_url"`
	GraphQLURL string        `json:"graphql_url"`
	GitURL     string        `json:"git_url"`
	PRURL      string        `json:"pr_url"`
	CAFile     string        `json:"ca_file"`
	Tokens     sandboxTokens `json:"tokens"`
	// Host is HOST:PORT, gh's GH_HOST; Repo the seeded OWNER/NAME and
	// PRNumber its open PR.
	Host     string `json:"host"`
	Repo     string `json:"repo"`
	PRNumber int    `json:"pr_number"`
}

type sandboxTokens struct {
	Author   string `json:"author"`
	Reviewer string `json:"reviewer"`
	Outsider string `json:"outsider"`
	Copilot  string `json:"copilot,omitempty"`
	CI       string `json:"ci,omitempty"`
	// GitLab's: the project's owner, a reporter (read only) and Duo.
	Owner    string `json:"owner,omitempty"`
	Reporter string `json:"reporter,omitempty"`
	Duo      string `json:"duo,omitempty"`
}

// sandboxMarker marks a state directory as the sandbox's own, so a restart
// may wipe it but a user's directory is never emptied.
const sandboxMarker = ".converge-sandbox"

func newSandboxCmd(factory *cmdutil.Factory, runF func(*sandboxOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &sandboxOptions{}
	cmd := &cobra.Command{
		Use: "sandbox",
		Example: `  # a GitHub emulator with a demo PR; prints the URLs and tokens as one JSON line
  converge sandbox

  # a GitLab one whose project has no CI
  converge sandbox --forge gitlab --no-ci`,
		Short: "Serve a GitHub (or GitLab) emulator with a seeded demo repository and an open PR",
		Long: `Serve a GitHub emulator on loopback with a seeded demo repository and an
open pull request, a scripted Copilot reviewer and a CI runner. Prints one
JSON line with the URLs and tokens (on a terminal, also how to point gh and
git at it), then serves until interrupted.

The real gh CLI works against it as an Enterprise host: set GH_HOST,
GH_ENTERPRISE_TOKEN and SSL_CERT_FILE (the printed ca_file). git ignores
SSL_CERT_FILE: give it the same file as GIT_SSL_CAINFO.

It listens on loopback only: it hands its tokens to anyone who asks and
its certificate names only 127.0.0.1 and ::1, so another --addr is
refused (reach it from elsewhere through a tunnel, e.g. ssh -L).

With --forge gitlab it serves a GitLab emulator (REST v4, GraphQL, git)
instead: a project in a subgroup with an open merge request, GitLab Duo
Code Review scripted as its review bot, and pipelines running its tests.
Point converge at the merge request URL with CONVERGE_TOKEN (or
GITLAB_TOKEN) and SSL_CERT_FILE set to the printed ca_file.

With --copilot-profile real the scripted Copilot keeps github.com's pace
instead of the demo's: it starts a requested review about 30 seconds later
(until then it is only requested: no copilot_work_started event) and
posts the review about 2 minutes after that (--copilot-delay is then
ignored). The default, fast, starts at once and reviews after
--copilot-delay. GitHub only.

With --no-ci no CI ever reports on the repository (GitHub: no check run or
status; GitLab: no pipeline), as on many repositories. converge pr waits
for CI unless told the repository has none: run it with
--expects-github-checks=false (or expects_github_checks: false in the
base branch's .converge.yaml), and it proves its verdict without CI.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runSandbox(cmd.Context(), ios, opts)
		},
	}
	cmd.Flags().Var(forgeFlag{&opts.Forge}, "forge", "the emulated forge: github, or gitlab (a merge request, GitLab Duo as the review bot)")
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "directory for the emulator's repositories (default: a temporary directory removed on exit)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "address to listen on: loopback only (127.0.0.1:PORT, [::1]:PORT or localhost:PORT); any other is refused")
	cmd.Flags().BoolVar(&opts.HTTP, "http", false, "serve plain http instead of https")
	cmd.Flags().DurationVar(&opts.CopilotDelay, "copilot-delay", 3*time.Second, "how long the scripted Copilot takes to review")
	cmd.Flags().Var(copilotProfileFlag{&opts.CopilotProfile}, "copilot-profile", "the scripted Copilot's pace: fast (starts at once, reviews after --copilot-delay) or real (github.com's: starts ~30s after the request, reviews ~2m later)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "log requests to stderr")
	cmd.Flags().BoolVar(&opts.NoCI, "no-ci", false, "seed a repository on which no CI ever reports (no check run, status or pipeline but converge's own)")
	return cmd
}

func runSandbox(ctx context.Context, ios *cmdutil.IOStreams, opts *sandboxOptions) error {
	if err := loopbackAddr(opts.Addr); err != nil {
		return err
	}
	if opts.Forge == forge.GitLab && opts.CopilotProfile == fakehub.CopilotProfileReal {
		return cmdutil.UsageErr("sandbox: --copilot-profile real paces GitHub's Copilot; the GitLab sandbox has none (pace Duo with --copilot-delay)")
	}
	dir, cleanup, err := sandboxDir(opts.StateDir)
	if err != nil {
		return err
	}
	defer cleanup()

	level := slog.LevelWarn
	if opts.Verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: level}))
	if opts.Forge == forge.GitLab {
		return runSandboxGitLab(ctx, ios, opts, dir, logger)
	}
	hub, err := fakehub.New(fakehub.Options{
		StateDir:       dir,
		Addr:           opts.Addr,
		HTTP:           opts.HTTP,
		CopilotDelay:   opts.CopilotDelay,
		CopilotProfile: opts.CopilotProfile,
		Logger:         logger,
	})
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := hub.Start(ctx); err != nil {
		return &cmdutil.ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("sandbox: cannot listen on %s: %v (pick another --addr)", opts.Addr, err)}
	}
	defer hub.Close()

	demo, err := fakehub.SeedDemoWith(ctx, hub, fakehub.DemoOptions{NoCI: opts.NoCI})
	if err != nil {
		return fmt.Errorf("sandbox: seed demo repository: %w", err)
	}
	tok := hub.Tokens()
	info := sandboxInfo{
		APIURL:     hub.APIURL(),
		GraphQLURL: hub.GraphQLURL(),
		GitURL:     hub.GitURL(demo.Owner, demo.Repo),
		PRURL:      demo.PRURL,
		CAFile:     hub.CAFile(),
		Tokens: sandboxTokens{
			Author: tok.Author, Reviewer: tok.Reviewer, Outsider: tok.Outsider,
			Copilot: tok.Copilot, CI: tok.CI,
		},
		Host: hub.Host(), Repo: demo.Owner + "/" + demo.Repo, PRNumber: demo.Number,
	}
	return serveSandbox(ctx, ios, info, sandboxGuide(info, opts.HTTP))
}

// serveSandbox prints the sandbox's JSON line (and, on a terminal, the
// guide) and serves until interrupted.
func serveSandbox(ctx context.Context, ios *cmdutil.IOStreams, info sandboxInfo, guide string) error {
	line, err := json.Marshal(info)
	if err != nil {
		return err
	}
	fmt.Fprintln(ios.Out, string(line))
	if ios.IsTTY {
		fmt.Fprint(ios.ErrOut, guide)
	}
	<-ctx.Done()
	return nil
}

// sandboxDir returns the directory the emulator keeps its repositories in.
// A directory given with --state must be empty or a previous sandbox's.
func sandboxDir(want string) (string, func(), error) {
	if want == "" {
		dir, err := os.MkdirTemp("", "converge-sandbox-")
		if err != nil {
			return "", nil, fmt.Errorf("sandbox: create temporary directory: %w", err)
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	entries, err := os.ReadDir(want)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return "", nil, cmdutil.UsageErr("sandbox: cannot read --state %s: %v", want, err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(want, sandboxMarker)); err != nil {
			return "", nil, cmdutil.UsageErr("sandbox: --state %s is not empty and not a sandbox directory; name an empty or new directory", want)
		}
		// A previous sandbox's state: the emulator starts fresh each time.
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(want, e.Name())); err != nil {
				return "", nil, fmt.Errorf("sandbox: clear %s: %w", want, err)
			}
		}
	}
	if err := os.MkdirAll(want, 0o755); err != nil {
		return "", nil, cmdutil.UsageErr("sandbox: cannot create --state %s: %v", want, err)
	}
	if err := os.WriteFile(filepath.Join(want, sandboxMarker), []byte("converge sandbox state\n"), 0o644); err != nil {
		return "", nil, fmt.Errorf("sandbox: mark %s: %w", want, err)
	}
	return want, func() {}, nil
}

// loopbackAddr refuses a listen address off loopback (IF-1: exit 2): an
// empty host or 0.0.0.0 binds every interface.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cmdutil.UsageErr("--addr %s: %v; give HOST:PORT on loopback, e.g. 127.0.0.1:0", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return cmdutil.UsageErr("--addr %s is not a loopback address: the sandbox gives its tokens to anyone who can reach it and its certificate names only 127.0.0.1 and ::1; listen on 127.0.0.1:PORT and tunnel to it (ssh -L) to reach it from elsewhere", addr)
}

// sandboxGuide tells a person at a terminal how to reach the sandbox with
// gh, git and converge; stdout stays the one JSON line.
func sandboxGuide(info sandboxInfo, plainHTTP bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nServing %s with pull request #%d open: %s\n", info.Repo, info.PRNumber, info.PRURL)
	if plainHTTP {
		fmt.Fprintf(&b, "Plain http: gh talks to an Enterprise host over https only (run without --http to use gh). In another shell:\n\n")
		fmt.Fprintf(&b, "  export TOKEN=%s\n", info.Tokens.Author)
		fmt.Fprintf(&b, "  git -c http.extraHeader=\"Authorization: Bearer $TOKEN\" clone %s\n", info.GitURL)
		fmt.Fprintf(&b, "  CONVERGE_TOKEN=$TOKEN converge pr %s --api-url %s --poll-min 2s --poll-max 10s\n\n", info.PRURL, info.APIURL)
	} else {
		fmt.Fprintf(&b, "In another shell (git ignores SSL_CERT_FILE: it reads GIT_SSL_CAINFO):\n\n")
		fmt.Fprintf(&b, "  export GH_HOST=%s GH_ENTERPRISE_TOKEN=%s \\\n    SSL_CERT_FILE=%s GIT_SSL_CAINFO=%s\n", info.Host, info.Tokens.Author, info.CAFile, info.CAFile)
		fmt.Fprintf(&b, "  gh pr view %d -R %s/%s\n", info.PRNumber, info.Host, info.Repo)
		fmt.Fprintf(&b, "  git -c http.extraHeader=\"Authorization: Bearer $GH_ENTERPRISE_TOKEN\" clone %s\n", info.GitURL)
		fmt.Fprintf(&b, "  CONVERGE_TOKEN=$GH_ENTERPRISE_TOKEN converge pr %s --api-url %s --ca-file %s --poll-min 2s --poll-max 10s\n\n", info.PRURL, info.APIURL, info.CAFile)
	}
	fmt.Fprintf(&b, "The other actors' tokens (reviewer, copilot, ci, outsider) are in the JSON line above. Ctrl-C stops the sandbox.\n")
	return b.String()
}
