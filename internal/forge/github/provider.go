package github

import (
	"context"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/review/copilot"
)

// Provider is GitHub as converge's forge seam sees it: github.com or a
// GitHub Enterprise Server, Copilot its review bot, Apps allowed.
type Provider struct{}

var _ provider.Provider = Provider{}

func init() { provider.Register(Provider{}) }

func (Provider) Kind() forge.Kind      { return forge.GitHub }
func (Provider) DefaultHost() string   { return "github.com" }
func (Provider) GitUser() string       { return repo.GitHubUser }
func (Provider) Apps() bool            { return true }
func (Provider) ReviewBot() review.Bot { return copilot.New() }
func (Provider) TrustedBots() []string { return copilot.DefaultAllowlist() }

func (Provider) Endpoints(ref forge.PRRef, apiURL string, getenv func(string) string) (string, string, error) {
	return Endpoints(ref, apiURL, getenv)
}

func (Provider) WebHost(rest string) (string, error) { return WebHost(rest) }

func (Provider) CheckHosts(ref forge.PRRef, rest string, allowMismatch bool) error {
	return CheckHosts(ref, rest, allowMismatch)
}

func (Provider) CloneURL(rest, reported string, ref forge.PRRef) (string, error) {
	return CloneURL(rest, reported, ref.Owner, ref.Repo)
}

// ResolveToken takes --token, then CONVERGE_TOKEN and GH_TOKEN/
// GITHUB_TOKEN, then `gh auth token`, as gh does.
func (Provider) ResolveToken(host, flag string, getenv func(string) string) (string, string, error) {
	return ResolveToken(host, flag, getenv, GHAuthToken)
}

// RepoRef names OWNER/REPO on webHost.
func (Provider) RepoRef(webHost, scheme, name string) (forge.PRRef, error) {
	owner, rest, ok := strings.Cut(name, "/")
	if !ok || owner == "" || rest == "" || strings.Contains(rest, "/") {
		return forge.PRRef{}, fmt.Errorf("repo %q: want owner/name", name)
	}
	return forge.PRRef{Host: webHost, Scheme: scheme, Owner: owner, Repo: rest, Number: 1, Forge: forge.GitHub}, nil
}

// NewClient builds a Client acting with o.Token, or as o.App (a *App)
// for o.AppRepo.
func (Provider) NewClient(o provider.ClientOptions) (provider.Client, error) {
	opts := Options{APIURL: o.APIURL, GraphQLURL: o.GraphQLURL, Token: o.Token, AppRepo: o.AppRepo,
		CAFile: o.CAFile, HTTPClient: o.HTTPClient, Limiter: o.Limiter,
		Timeout: o.Limits.Timeout, MaxConcurrent: o.Limits.Concurrency}
	opts.Retry.BaseDelay, opts.Retry.MaxWait = o.Limits.Backoff, o.Limits.MaxWait
	if o.App != nil {
		app, ok := o.App.(*App)
		if !ok {
			return nil, fmt.Errorf("github: an app of type %T is no GitHub App", o.App)
		}
		opts.App = app
	}
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	return listing{c}, nil
}

// listing is the Client with OpenPRs in the provider's terms.
type listing struct{ *Client }

func (l listing) OpenPRs(ctx context.Context, ref forge.PRRef) ([]provider.OpenPR, error) {
	prs, err := l.Client.OpenPRs(ctx, ref.Owner, ref.Repo)
	if err != nil {
		return nil, err
	}
	out := make([]provider.OpenPR, len(prs))
	for i, p := range prs {
		out[i] = provider.OpenPR(p)
	}
	return out, nil
}
