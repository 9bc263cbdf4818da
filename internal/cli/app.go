package cli

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/secure"
)

// appOptions are GitHub App auth's settings (SEC-5): flags, else
// CONVERGE_APP_ID, CONVERGE_APP_KEY, CONVERGE_APP_INSTALLATION. They are
// the operator's, so a repository's .converge.yaml cannot set them.
type appOptions struct {
	ID           string
	KeyFile      string
	Installation string
}

func addAppFlags(f *pflag.FlagSet, o *appOptions) {
	f.StringVar(&o.ID, "app-id", "", "GitHub App id: act as the App's installation, and publish the verdict as a converge check run (CONVERGE_APP_ID; needs --app-key)")
	f.StringVar(&o.KeyFile, "app-key", "", "the GitHub App's private key, a PEM file (CONVERGE_APP_KEY)")
	f.StringVar(&o.Installation, "app-installation", "", "the App's installation id (CONVERGE_APP_INSTALLATION; default: looked up per repository)")
}

// resolve fills unset flags from the environment and reports whether an
// App is configured at all.
func (o *appOptions) resolve(getenv func(string) string) bool {
	or := func(v *string, env string) {
		if *v == "" {
			*v = strings.TrimSpace(getenv(env))
		}
	}
	or(&o.ID, "CONVERGE_APP_ID")
	or(&o.KeyFile, "CONVERGE_APP_KEY")
	or(&o.Installation, "CONVERGE_APP_INSTALLATION")
	return o.ID != "" || o.KeyFile != "" || o.Installation != ""
}

// load makes the App for the API at rest; nil when none is configured.
// Bad settings are usage errors (exit 2), each one line with its fix.
// Each token the App mints joins minted, in every form git and the API
// send it, before it is used (SEC-3).
func (o *appOptions) load(ios *cmdutil.IOStreams, rest, caFile string, minted *secure.Secrets) (*ghclient.App, error) {
	if !o.resolve(ios.Getenv) {
		return nil, nil
	}
	if o.ID == "" {
		return nil, cmdutil.UsageErr("--app-key or --app-installation without --app-id: give the GitHub App's id (--app-id, CONVERGE_APP_ID)")
	}
	id, err := strconv.ParseInt(o.ID, 10, 64)
	if err != nil || id <= 0 {
		return nil, cmdutil.UsageErr("--app-id %q is not a GitHub App id: give the App's numeric id from its settings page", o.ID)
	}
	var inst int64
	if o.Installation != "" {
		if inst, err = strconv.ParseInt(o.Installation, 10, 64); err != nil || inst <= 0 {
			return nil, cmdutil.UsageErr("--app-installation %q is not an installation id: give the number, or leave it out to look it up per repository", o.Installation)
		}
	}
	key, err := ghclient.LoadAppKey(o.KeyFile)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	hc, err := ghclient.HTTPClientWithCA(caFile)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	app, err := ghclient.NewApp(ghclient.AppOptions{ID: id, Key: key, Installation: inst, APIURL: rest, HTTPClient: hc,
		OnToken: func(tok string) { minted.Add(repo.Secrets(tok)...) }})
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	return app, nil
}

// prCred is how one PR's git authenticates: the token's, or a GitHub
// App's installation token asked for as each fetch and push starts.
type prCred struct {
	Token string
	app   *ghclient.App
}

// gitToken is the App's token source for ref's repository (repo.
// Credential); nil with a personal token, which GitEnv carries.
func (c prCred) gitToken(ref forge.PRRef) func(ctx context.Context, refused string) (string, error) {
	if c.app == nil {
		return nil
	}
	app := c.app
	return func(ctx context.Context, refused string) (string, error) {
		return app.GitToken(ctx, ref.Owner, ref.Repo, refused)
	}
}

// appCache loads the App once and hands every caller the same one; a
// nil cache loads it on every call.
type appCache struct {
	mu   sync.Mutex
	done bool
	app  *ghclient.App
	err  error
}

func (c *appCache) load(load func() (*ghclient.App, error)) (*ghclient.App, error) {
	if c == nil {
		return load()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.app, c.err = load()
		c.done = c.err == nil // a refusal is tried again by the next caller
	}
	return c.app, c.err
}

// prAuth is each PR's forge client and git credential: with a GitHub
// App, a client per repository on the App's installation tokens, a token
// minted now for each repository, so refused App credentials end the
// command before anything is recorded (exit 6), and every token the App
// mints added to minted; else the token's one client for all. The forge's
// provider builds the clients; a forge without Apps refuses --app-id.
func prAuth(ctx context.Context, ios *cmdutil.IOStreams, opts *prOptions, rest, gql, webHost string, refs []forge.PRRef, limits config.Values, minted *secure.Secrets) ([]forge.Forge, []prCred, error) {
	p, err := forgeOf(refs[0].Forge)
	if err != nil {
		return nil, nil, err
	}
	var app *ghclient.App
	if p.Apps() {
		if app, err = opts.apps.load(func() (*ghclient.App, error) { return opts.App.load(ios, rest, opts.CAFile, minted) }); err != nil {
			return nil, nil, err
		}
	} else if opts.App.ID != "" || ios.Getenv("CONVERGE_APP_ID") != "" {
		return nil, nil, cmdutil.UsageErr("--app-id is for GitHub Apps: on %s converge acts with a token (--token, CONVERGE_TOKEN or the forge's own variable)", p.Kind())
	}
	build := func(o provider.ClientOptions) (forge.Forge, error) {
		o.APIURL, o.GraphQLURL, o.CAFile, o.Limiter, o.Limits = rest, gql, opts.CAFile, opts.limiter, limitsOf(limits)
		c, err := opts.factory.OrDefault(ios).ForgeClient(p, o)
		if err != nil {
			return nil, cmdutil.UsageErr("%v", err)
		}
		return c, nil
	}
	forges, creds := make([]forge.Forge, len(refs)), make([]prCred, len(refs))
	if app == nil {
		token, _, err := p.ResolveToken(webHost, opts.Token, ios.Getenv)
		if err != nil {
			return nil, nil, err
		}
		client, err := build(provider.ClientOptions{Token: token})
		if err != nil {
			return nil, nil, err
		}
		for i := range refs {
			forges[i], creds[i] = client, prCred{Token: token}
		}
		return forges, creds, nil
	}
	if opts.Token != "" {
		return nil, nil, cmdutil.UsageErr("--token and --app-id exclude each other: converge acts either with a token or as a GitHub App")
	}
	byRepo := map[string]forge.Forge{}
	for i, ref := range refs {
		full := ref.Owner + "/" + ref.Repo
		c := byRepo[strings.ToLower(full)]
		if c == nil {
			if c, err = build(provider.ClientOptions{App: app, AppRepo: full}); err != nil {
				return nil, nil, err
			}
			byRepo[strings.ToLower(full)] = c
		}
		// Git asks the App as each fetch and push starts (an
		// installation token lives an hour; a run may last longer).
		if _, err = app.Token(ctx, ref.Owner, ref.Repo); err != nil {
			return nil, nil, err
		}
		forges[i], creds[i] = c, prCred{app: app}
	}
	return forges, creds, nil
}
