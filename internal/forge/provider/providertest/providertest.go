// Package providertest is the contract every forge provider passes, as
// forgetest is its client's: a new forge's package calls Run from its
// tests with its Provider and a world on its emulator.
package providertest

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
)

// World is one open PR on the forge's emulator.
type World struct {
	// APIURL and GraphQLURL are the emulator's endpoints; HTTPClient
	// reaches them (its CA trusted).
	APIURL, GraphQLURL string
	HTTPClient         *http.Client
	// Token acts as converge; PRURL is the PR's web URL.
	Token, PRURL string
}

// Run checks p against the contract; world starts a fresh world.
func Run(t *testing.T, p provider.Provider, world func(t *testing.T) World) {
	t.Run("Registered", func(t *testing.T) { registered(t, p) })
	t.Run("HostsOfTheDefaultHost", func(t *testing.T) { defaultHost(t, p) })
	t.Run("SEC_6_TokenStaysOnTheAPIHost", func(t *testing.T) { tokenStays(t, p) })
	t.Run("IF_2_TokenFromFlagThenEnvironment", func(t *testing.T) { tokens(t, p) })
	t.Run("ReviewBotTrustsItsOwnLogins", func(t *testing.T) { bot(t, p) })
	t.Run("RepoNamesOfItsShape", func(t *testing.T) { repoNames(t, p) })
	t.Run("SEC_4_WebhooksRefuseUnprovenDeliveries", func(t *testing.T) { webhooks(t, p) })
	t.Run("ClientObservesAndListsThePR", func(t *testing.T) { client(t, p, world(t)) })
}

func registered(t *testing.T, p provider.Provider) {
	got, err := provider.For(p.Kind())
	if err != nil {
		t.Fatalf("provider.For(%s): %v: register the provider in its package's init", p.Kind(), err)
	}
	if got.Kind() != p.Kind() {
		t.Fatalf("provider.For(%s) is %s's provider", p.Kind(), got.Kind())
	}
	k, err := forge.ParseKind(p.Kind().String())
	if err != nil || k != p.Kind() {
		t.Fatalf("--forge %s reads as %q, %v; want the forge's kind", p.Kind(), k, err)
	}
	if !slices.Contains(provider.Names(), p.Kind().String()) {
		t.Fatalf("provider.Names() = %v lacks %s: --forge's completion would not offer it", provider.Names(), p.Kind())
	}
	if p.GitUser() == "" {
		t.Fatal("GitUser is empty: git would carry the token as no user")
	}
}

// repoRef is a ref into sample on host, failing the test on an error.
func repoRef(t *testing.T, p provider.Provider, host string) forge.PRRef {
	t.Helper()
	ref, err := p.RepoRef(host, "https", "acme/widget")
	if err != nil {
		t.Fatalf("RepoRef(%s, acme/widget): %v", host, err)
	}
	if ref.Forge != p.Kind() || ref.Host != host {
		t.Fatalf("RepoRef(%s, acme/widget) = %+v: not on the forge's host", host, ref)
	}
	return ref
}

func noEnv(string) string { return "" }

func defaultHost(t *testing.T, p provider.Provider) {
	ref := repoRef(t, p, p.DefaultHost())
	rest, _, err := p.Endpoints(ref, "", noEnv)
	if err != nil {
		t.Fatalf("Endpoints of a PR on %s: %v", p.DefaultHost(), err)
	}
	if web, err := p.WebHost(rest); err != nil || web != p.DefaultHost() {
		t.Fatalf("WebHost(%s) = %q, %v; want %s", rest, web, err, p.DefaultHost())
	}
	if err := p.CheckHosts(ref, rest, false); err != nil {
		t.Fatalf("CheckHosts refused a PR on the API's own host: %v", err)
	}
	u, err := p.CloneURL(rest, "", ref)
	if err != nil {
		t.Fatalf("CloneURL derived none: %v", err)
	}
	if cu, err := url.Parse(u); err != nil || cu.Scheme != "https" || cu.Host != p.DefaultHost() {
		t.Fatalf("derived clone URL %q: want https on %s", u, p.DefaultHost())
	}
}

func tokenStays(t *testing.T, p provider.Provider) {
	ref := repoRef(t, p, p.DefaultHost())
	rest, _, err := p.Endpoints(ref, "", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	other := repoRef(t, p, "evil.example")
	if err := p.CheckHosts(other, rest, false); err == nil {
		t.Fatalf("CheckHosts let a PR on evil.example run on %s's token", rest)
	}
	if err := p.CheckHosts(other, rest, true); err != nil {
		t.Fatalf("CheckHosts refused a mismatch it was told to allow: %v", err)
	}
	for _, reported := range []string{"https://evil.example/acme/widget.git", "http://" + p.DefaultHost() + "/acme/widget.git"} {
		if u, err := p.CloneURL(rest, reported, ref); err == nil {
			t.Fatalf("CloneURL accepted %q (gave %q): the token would leave the API's host or travel in clear", reported, u)
		}
	}
}

func tokens(t *testing.T, p provider.Provider) {
	host := p.DefaultHost()
	tok, src, err := p.ResolveToken(host, "flag-token-123", noEnv)
	if err != nil || tok != "flag-token-123" || src == "" {
		t.Fatalf("ResolveToken with --token = %q, %q, %v; want the flag's token and its source", tok, src, err)
	}
	env := func(k string) string {
		if k == "CONVERGE_TOKEN" {
			return "env-token-456"
		}
		return ""
	}
	tok, src, err = p.ResolveToken(host, "", env)
	if err != nil || tok != "env-token-456" || !strings.Contains(src, "CONVERGE_TOKEN") {
		t.Fatalf("ResolveToken from CONVERGE_TOKEN = %q, %q, %v; want its token, named", tok, src, err)
	}
	if tok, _, err := p.ResolveToken(host, "flag-token-123", env); err != nil || tok != "flag-token-123" {
		t.Fatalf("--token must beat the environment: got %q, %v", tok, err)
	}
}

func bot(t *testing.T, p provider.Provider) {
	b := p.ReviewBot()
	if b == nil || b.Name() == "" {
		t.Fatal("the forge has no named review bot")
	}
	trusted := p.TrustedBots()
	if len(trusted) == 0 {
		t.Fatal("no logins are trusted by default: the bot's own findings would be distrusted")
	}
	for _, login := range trusted {
		if !b.Is(login) {
			t.Fatalf("trusted login %q is not %s: a default-trusted login must be the forge's own bot", login, b.Name())
		}
	}
	if b.Is("octocat") || b.Is("") {
		t.Fatalf("%s claims an ordinary user's login", b.Name())
	}
}

func repoNames(t *testing.T, p provider.Provider) {
	for _, bad := range []string{"", "widget", "/widget", "acme/", "acme//widget"} {
		if ref, err := p.RepoRef(p.DefaultHost(), "https", bad); err == nil {
			t.Errorf("RepoRef accepted %q as %+v", bad, ref)
		}
	}
}

func webhooks(t *testing.T, p provider.Provider) {
	hooks := p.Webhooks()
	if hooks == nil {
		t.Fatal("no webhooks: serve could not read the forge's deliveries")
	}
	none := http.Header{}
	if hooks.Claims(none) {
		t.Fatal("the forge claims a delivery with no headers: every forge would")
	}
	body := []byte(`{"hello":"world"}`)
	if err := hooks.Verify(nil, none, body); !errors.Is(err, provider.ErrUnsigned) {
		t.Fatalf("Verify with no secret = %v, want ErrUnsigned: an empty secret verifies nothing", err)
	}
	if err := hooks.Verify([]byte("s3cret"), none, body); err == nil {
		t.Fatal("Verify accepted a delivery with no proof")
	}
	if _, err := hooks.Delivery(none, body); err == nil {
		t.Fatal("Delivery gave an id to a delivery that carries none")
	}
	if _, err := hooks.Read("push", []byte("not json")); err == nil || errors.Is(err, provider.ErrIgnored) {
		t.Fatalf("Read of a broken payload = %v, want a malformed-payload error", err)
	}
}

func client(t *testing.T, p provider.Provider, w World) {
	ref, err := forge.ParsePRURL(w.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Forge != p.Kind() {
		t.Fatalf("the world's PR %s reads as a %s PR", w.PRURL, ref.Forge)
	}
	if _, err := p.NewClient(provider.ClientOptions{APIURL: w.APIURL, GraphQLURL: w.GraphQLURL, Token: w.Token, HTTPClient: w.HTTPClient, App: struct{}{}}); err == nil {
		t.Fatal("NewClient took an app that is none of the forge's")
	}
	c, err := p.NewClient(provider.ClientOptions{APIURL: w.APIURL, GraphQLURL: w.GraphQLURL, Token: w.Token, HTTPClient: w.HTTPClient})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	ctx := context.Background()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatalf("Observe %s: %v", ref, err)
	}
	if pr.HeadSHA == "" {
		t.Fatalf("Observe %s read no head", ref)
	}
	repo, err := p.RepoRef(ref.Host, ref.Scheme, ref.FullName())
	if err != nil {
		t.Fatal(err)
	}
	open, err := c.OpenPRs(ctx, repo)
	if err != nil {
		t.Fatalf("OpenPRs %s: %v", repo.FullName(), err)
	}
	if !slices.ContainsFunc(open, func(o provider.OpenPR) bool { return o.Number == ref.Number && o.URL == w.PRURL }) {
		t.Fatalf("OpenPRs %s = %+v: lacks the open PR %s", repo.FullName(), open, w.PRURL)
	}
}
