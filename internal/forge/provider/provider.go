// Package provider is converge's one forge seam: a Provider per forge,
// registered by its kind, answers everything a command needs to know of
// a forge before and around its client — the API's endpoints, the hosts a
// token may go to (SEC-6), where the token comes from, the user git
// carries it as, the review bot, the shape of a watched repository's
// name — and builds the client. A new forge is one package implementing
// Provider, registering itself in its init, and a blank import in the
// binary; it passes providertest's contract and forgetest's.
//
// The loops never see a Provider: they take a forge.Forge and a
// review.Bot, so no forge is named inside them.
package provider

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/review"
)

// Provider is one forge as converge drives it.
type Provider interface {
	// Kind is the forge's kind, the value of --forge and of PRRef.Forge.
	Kind() forge.Kind
	// DefaultHost is the public forge's web host (github.com), used when
	// neither a PR nor --api-url names one.
	DefaultHost() string
	// GitUser is the user name git's credential carries with the token.
	GitUser() string
	// Endpoints are the REST and GraphQL URLs for ref, from apiURL
	// (--api-url) when given, else from the environment or ref's host.
	Endpoints(ref forge.PRRef, apiURL string, getenv func(string) string) (rest, gql string, err error)
	// WebHost is the web host the API at rest serves.
	WebHost(rest string) (string, error)
	// CheckHosts refuses a PR on another host than the API's (SEC-6),
	// unless allowMismatch.
	CheckHosts(ref forge.PRRef, rest string, allowMismatch bool) error
	// CloneURL checks the clone URL the API reported for ref's
	// repository, or derives one when reported is empty, so git gets the
	// token only on the API's host (SEC-6).
	CloneURL(rest, reported string, ref forge.PRRef) (string, error)
	// ResolveToken finds converge's token for host by the forge's own
	// precedence (flag, environment, the forge's CLI) and names where it
	// came from.
	ResolveToken(host, flag string, getenv func(string) string) (token, source string, err error)
	// ReviewBot is the forge's independent review bot (Copilot, Duo).
	ReviewBot() review.Bot
	// TrustedBots are the logins trusted as bots by default: the review
	// bot's own, so a user named like another forge's bot is not.
	TrustedBots() []string
	// RepoRef is a reference into the repository named repo (as a watch
	// names it: OWNER/REPO, or a GitLab project's full path) on webHost,
	// numbered 1, for listing it; an error when repo has not the forge's
	// shape.
	RepoRef(webHost, scheme, repo string) (forge.PRRef, error)
	// Apps reports whether converge may act on the forge as an installed
	// app rather than with a token (GitHub Apps, SEC-5).
	Apps() bool
	// NewClient builds the forge's client.
	NewClient(o ClientOptions) (Client, error)
	// Webhooks reads the forge's webhook deliveries.
	Webhooks() Webhooks
}

// ClientOptions is what every forge's client is built from.
type ClientOptions struct {
	// APIURL is the REST base; GraphQLURL the GraphQL endpoint, derived
	// from APIURL when empty.
	APIURL, GraphQLURL string
	// Token acts as converge. Empty with App.
	Token string
	// App is an app installation acting for AppRepo instead of Token,
	// on a forge whose Apps is true (a *github.App); others refuse one.
	App     any
	AppRepo string
	// CAFile adds a trusted CA; ignored when HTTPClient is given.
	CAFile string
	// HTTPClient supplies the base transport (an emulator's).
	HTTPClient *http.Client
	// Limiter is the per-host discipline shared by every client of the
	// process (REL-1); nil gives the client its own.
	Limiter *forgehttp.HostLimiter
	// Limits are REL-1's settings: zero fields keep the client's defaults.
	Limits Limits
}

// Limits are REL-1's settings every forge client takes.
type Limits struct {
	// Timeout bounds one HTTP attempt.
	Timeout time.Duration
	// Backoff is the first retry's delay.
	Backoff time.Duration
	// MaxWait is the longest rate-limit wait sat out in-process.
	MaxWait time.Duration
	// Concurrency caps requests in flight to the host.
	Concurrency int
}

// Client is a forge's client: the loop's forge.Forge, plus the listing
// serve's watches discover PRs with.
type Client interface {
	forge.Forge
	// OpenPRs lists the open PRs of the repository ref names (its Number
	// is ignored), every page.
	OpenPRs(ctx context.Context, ref forge.PRRef) ([]OpenPR, error)
}

// OpenPR is one open PR (on GitLab a merge request) as a listing shows it.
type OpenPR struct {
	Number int    // on GitLab the iid
	URL    string // the web URL
	Author string
	Labels []string
}

var (
	mu        sync.RWMutex
	providers = map[forge.Kind]Provider{}
)

// Register makes p the provider of its kind. Registering a kind twice is
// a programming error.
func Register(p Provider) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := providers[p.Kind()]; dup {
		panic(fmt.Sprintf("provider.Register: forge %s registered twice", p.Kind()))
	}
	providers[p.Kind()] = p
}

// For is the provider of kind.
func For(kind forge.Kind) (Provider, error) {
	mu.RLock()
	p, ok := providers[kind]
	mu.RUnlock()
	if ok {
		return p, nil
	}
	return nil, fmt.Errorf("forge %s is not built into this converge (known: %s)", kind, strings.Join(Names(), ", "))
}

// Of is the provider of ref's forge.
func Of(ref forge.PRRef) (Provider, error) { return For(ref.Forge) }

// Names are the registered forges' names, sorted: --forge's values.
func Names() []string {
	var names []string
	for _, p := range All() {
		names = append(names, p.Kind().String())
	}
	slices.Sort(names)
	return names
}

// All are the registered providers, in the order of their names.
func All() []Provider {
	mu.RLock()
	defer mu.RUnlock()
	all := make([]Provider, 0, len(providers))
	for _, p := range providers {
		all = append(all, p)
	}
	slices.SortFunc(all, func(a, b Provider) int { return strings.Compare(a.Kind().String(), b.Kind().String()) })
	return all
}
