package repo

import (
	"context"
	"fmt"
	"regexp"
)

// Credential gives git a forge token that can change during a run
// (SEC-5): a GitHub App's installation token lives an hour, and a run
// that pushes later than that with the token it began with is refused.
// A Git with a Credential asks it for the token as each network command
// (clone, fetch, push, ls-remote) starts, and once more, naming the
// refused token, when the forge refuses it (revoked, or the clocks
// disagree). The token reaches that one git process as AuthEnvFor's
// header, through its environment only (IF-2): never a file, never the
// repository's config, never another command's environment.
type Credential struct {
	// Remote is the URL the token is for; the header is scoped to its
	// origin, and a remote git would reach in clear gets none (SEC-6).
	Remote string
	// Token is the token to use now. refused, when not empty, is the
	// token the forge has just refused: Token must not hand it out again.
	Token func(ctx context.Context, refused string) (string, error)
}

// networked are the subcommands that talk to the remote; no other gets
// the token.
var networked = map[string]bool{"clone": true, "fetch": true, "push": true, "ls-remote": true, "pull": true, "remote": true, "submodule": true}

// authRefused matches git's words when the server answered 401: with no
// credential helper and prompts off, git asks for a username it cannot
// read; with a helper's credential, "Authentication failed".
var authRefused = regexp.MustCompile(`could not read (?:Username|Password)|Authentication failed|returned error: 401`)

// credEnv is the environment entries carrying c's token for a command
// with args, and the token; none for a command that does not reach the
// remote.
func (c *Credential) credEnv(ctx context.Context, args []string, refused string) ([]string, string, error) {
	if c == nil || c.Token == nil || !networked[subcommand(args)] {
		return nil, "", nil
	}
	tok, err := c.Token(ctx, refused)
	if err != nil {
		return nil, "", fmt.Errorf("git %s: credentials for %s: %w", subcommand(args), safeRemote(c.Remote), err)
	}
	return AuthEnvFor(c.Remote, tok), tok, nil
}

// safeRemote is a remote URL without its userinfo.
func safeRemote(u string) string { return urlUserinfo.ReplaceAllString(u, "${1}***@") }
