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
// does (SEC-8): through a credential helper scoped to Remote's origin,
// fed on an inherited descriptor; never an environment, argv, a file,
// the repository's config, or another command.
type Credential struct {
	// Remote is the URL the token is for; the helper is scoped to its
	// origin, and a remote git would reach in clear gets none (SEC-6).
	Remote string
	// User is the credential's user name; "" is GitHubUser.
	User string
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

// credAuth is c's token for a command with args, as a gitAuth; nil for
// a command that does not reach the remote.
func (c *Credential) credAuth(ctx context.Context, args []string, refused string) (*gitAuth, error) {
	if c == nil || c.Token == nil || !networked[subcommand(args)] {
		return nil, nil
	}
	tok, err := c.Token(ctx, refused)
	if err != nil {
		return nil, fmt.Errorf("git %s: credentials for %s: %w", subcommand(args), safeRemote(c.Remote), err)
	}
	// nil for a remote git would reach in clear (SEC-6): no helper, and
	// nothing to retry.
	return authFor(c.Remote, c.User, tok), nil
}

// safeRemote is a remote URL without its userinfo.
func safeRemote(u string) string { return urlUserinfo.ReplaceAllString(u, "${1}***@") }
