package cli

import (
	"context"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/secure"
)

// checkPRHost refuses, before any request, a PR URL whose host the API at
// rest does not serve (SEC-6): with --api-url on one host and the PR on
// another, the run would otherwise clone from the PR's host with the
// API's token. allow is --allow-host-mismatch.
func checkPRHost(ref forge.PRRef, rest string, allow bool) error {
	p, err := forgeOf(ref.Forge)
	if err != nil {
		return err
	}
	if err := p.CheckHosts(ref, rest, allow); err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	return nil
}

// gitRemote returns how runLoop turns the clone URL the API reported in
// its pre-flight observation into git's remote and credentials (SEC-6,
// IF-2): the API's URL, or one derived on the API's host when it gave
// none, never the PR URL's host; and refused, not used, when the token
// would travel in clear. The token is in repo.AuthEnvFor's entry, which
// only repo.Git reads and hands to git's network commands through a
// credential helper (SEC-8); no process can be started with it.
func gitRemote(rest string, ref forge.PRRef, token string, caFiles []string) func(reported string) (string, []string, error) {
	return func(reported string) (string, []string, error) {
		p, err := forgeOf(ref.Forge)
		if err != nil {
			return "", nil, err
		}
		u, err := p.CloneURL(rest, reported, ref)
		if err != nil {
			return "", nil, cmdutil.UsageErr("%v", err)
		}
		env, err := repo.GitAuthEnvUser(u, p.GitUser(), token, caFiles...)
		if err != nil {
			return "", nil, cmdutil.UsageErr("%v", err)
		}
		return u, env, nil
	}
}

// gitCredential is git's credential on cloneURL (gitRemote's) when its
// token comes from token as each fetch and push starts (a GitHub App's,
// SEC-5); nil when token is. Refused, like gitRemote's, when the token
// would travel in clear (SEC-6).
func gitCredential(cloneURL string, token func(ctx context.Context, refused string) (string, error)) (*repo.Credential, error) {
	if token == nil {
		return nil, nil
	}
	if err := secure.CheckTokenURLString(cloneURL); err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	return &repo.Credential{Remote: cloneURL, Token: token}, nil
}
