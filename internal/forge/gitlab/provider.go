package gitlab

import (
	"context"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/review/duo"
)

// Provider is GitLab as converge's forge seam sees it: gitlab.com or a
// self-managed instance, Duo Code Review its review bot, no Apps (a
// project, group or personal access token acts as converge).
type Provider struct{}

var _ provider.Provider = Provider{}

func init() { provider.Register(Provider{}) }

func (Provider) Kind() forge.Kind      { return forge.GitLab }
func (Provider) DefaultHost() string   { return "gitlab.com" }
func (Provider) GitUser() string       { return repo.GitLabUser }
func (Provider) Apps() bool            { return false }
func (Provider) ReviewBot() review.Bot { return duo.New() }
func (Provider) TrustedBots() []string { return duo.DefaultAllowlist() }

func (Provider) Endpoints(ref forge.PRRef, apiURL string, _ func(string) string) (string, string, error) {
	return Endpoints(ref, apiURL)
}

func (Provider) WebHost(rest string) (string, error) { return WebHost(rest) }

func (Provider) CheckHosts(ref forge.PRRef, rest string, allowMismatch bool) error {
	return CheckHosts(ref, rest, allowMismatch)
}

func (Provider) CloneURL(rest, reported string, ref forge.PRRef) (string, error) {
	return CloneURL(rest, reported, ref)
}

// ResolveToken takes --token, then CONVERGE_TOKEN, GITLAB_TOKEN and
// GL_TOKEN.
func (Provider) ResolveToken(host, flag string, getenv func(string) string) (string, string, error) {
	return ResolveToken(host, flag, getenv)
}

// RepoRef names a project by its full path, GROUP[/SUBGROUP...]/PROJECT.
func (Provider) RepoRef(webHost, scheme, name string) (forge.PRRef, error) {
	i := strings.LastIndex(name, "/")
	if i <= 0 || i == len(name)-1 || strings.Contains(name, "//") || strings.HasPrefix(name, "/") {
		return forge.PRRef{}, fmt.Errorf("repo %q: want GROUP[/SUBGROUP...]/PROJECT", name)
	}
	return forge.PRRef{Host: webHost, Scheme: scheme, Owner: name[:i], Repo: name[i+1:], Number: 1, Forge: forge.GitLab}, nil
}

// NewClient builds a Client acting with o.Token; GitLab has no Apps.
func (Provider) NewClient(o provider.ClientOptions) (provider.Client, error) {
	if o.App != nil {
		return nil, fmt.Errorf("gitlab: no apps: converge acts with a token")
	}
	hc := o.HTTPClient
	if hc == nil {
		var cas []string
		if o.CAFile != "" {
			cas = append(cas, o.CAFile)
		}
		var err error
		if hc, err = forgehttp.HTTPClientWithCA(cas...); err != nil {
			return nil, fmt.Errorf("ca file: %w", err)
		}
	}
	opts := Options{APIURL: o.APIURL, Token: o.Token, HTTPClient: hc, Limiter: o.Limiter,
		Timeout: o.Limits.Timeout, MaxConcurrent: o.Limits.Concurrency}
	opts.Retry.BaseDelay, opts.Retry.MaxWait = o.Limits.Backoff, o.Limits.MaxWait
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	return listing{c}, nil
}

// listing is the Client with OpenPRs in the provider's terms.
type listing struct{ *Client }

func (l listing) OpenPRs(ctx context.Context, ref forge.PRRef) ([]provider.OpenPR, error) {
	mrs, err := l.OpenMRs(ctx, ref.FullName())
	if err != nil {
		return nil, err
	}
	out := make([]provider.OpenPR, len(mrs))
	for i, m := range mrs {
		out[i] = provider.OpenPR(m)
	}
	return out, nil
}
