package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/exitcode"
)

// runSandboxGitLab is `converge sandbox --forge gitlab`: the GitLab
// emulator with the demo project and merge request, Duo scripted.
func runSandboxGitLab(ctx context.Context, ios *cmdutil.IOStreams, opts *sandboxOptions, dir string, logger *slog.Logger) error {
	lab, err := fakelab.New(fakelab.Options{
		StateDir: dir,
		Addr:     opts.Addr,
		HTTP:     opts.HTTP,
		DuoDelay: opts.CopilotDelay,
		Logger:   logger,
	})
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := lab.Start(ctx); err != nil {
		return &cmdutil.ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("sandbox: cannot listen on %s: %v (pick another --addr)", opts.Addr, err)}
	}
	defer lab.Close()
	demo, err := fakelab.SeedDemoWith(ctx, lab, fakelab.DemoOptions{NoCI: opts.NoCI})
	if err != nil {
		return fmt.Errorf("sandbox: seed demo project: %w", err)
	}
	tok := lab.Tokens()
	info := sandboxInfo{
		APIURL:     lab.APIURL(),
		GraphQLURL: lab.GraphQLURL(),
		GitURL:     lab.GitURL(demo.Project),
		PRURL:      demo.MRURL,
		Tokens: sandboxTokens{
			Author: tok.Author, Reviewer: tok.Reviewer, Outsider: tok.Outsider,
			Owner: tok.Owner, Reporter: tok.Reporter, Duo: tok.Duo,
		},
		Host: lab.Host(), Repo: demo.Project, PRNumber: demo.IID,
	}
	if !opts.HTTP {
		info.CAFile = lab.CAFile()
	}
	return serveSandbox(ctx, ios, info, sandboxGuideGitLab(info))
}

// sandboxGuideGitLab tells a person at a terminal how to reach the GitLab
// sandbox with git and converge.
func sandboxGuideGitLab(info sandboxInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nServing %s with merge request !%d open: %s\n", info.Repo, info.PRNumber, info.PRURL)
	fmt.Fprintf(&b, "In another shell:\n\n")
	if info.CAFile != "" {
		fmt.Fprintf(&b, "  export SSL_CERT_FILE=%s GIT_SSL_CAINFO=%s\n", info.CAFile, info.CAFile)
	}
	fmt.Fprintf(&b, "  export GITLAB_TOKEN=%s\n", info.Tokens.Author)
	// GitLab takes a token as the password of any user name over git.
	if u, err := url.Parse(info.GitURL); err == nil {
		fmt.Fprintf(&b, "  git clone %s://oauth2:$GITLAB_TOKEN@%s%s\n", u.Scheme, u.Host, u.Path)
	}
	fmt.Fprintf(&b, "  converge pr %s --poll-min 2s --poll-max 10s\n\n", info.PRURL)
	fmt.Fprintf(&b, "The other actors' tokens (reviewer, owner, reporter, outsider, duo) are in the JSON line above. Ctrl-C stops the sandbox.\n")
	return b.String()
}
