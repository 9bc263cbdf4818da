package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/secure"
)

const (
	dotComREST    = "https://api.github.com"
	dotComGraphQL = "https://api.github.com/graphql"
)

// IsDotCom reports whether host (host[:port] of a web or API URL) is
// github.com itself.
func IsDotCom(host string) bool {
	h := strings.ToLower(host)
	return h == "github.com" || h == "www.github.com" || h == "api.github.com" ||
		h == "github.com:443" || h == "api.github.com:443"
}

// isTenancy reports a GHE.com data-residency host (octo.ghe.com), whose API
// lives on api.octo.ghe.com as on github.com.
func isTenancy(host string) bool {
	return strings.HasSuffix(strings.ToLower(hostname(host)), ".ghe.com")
}

// Endpoints derives the REST base and GraphQL URL for ref (IF-3).
//
// apiURLFlag (--api-url) always wins. GITHUB_API_URL is honoured only when
// it names the PR's own host: in GitHub Actions it is always set, and a run
// there against another host (an emulator, an Enterprise server) must not be
// sent to api.github.com. Without either, the host comes from the PR URL,
// keeping its scheme so an http emulator works.
func Endpoints(ref forge.PRRef, apiURLFlag string, env func(string) string) (rest, graphql string, err error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	raw, from := strings.TrimSpace(apiURLFlag), "--api-url"
	if raw == "" {
		if e := strings.TrimSpace(env("GITHUB_API_URL")); e != "" {
			if u, perr := parseAPIURL(e); perr == nil && apiHostMatches(u.Host, ref.Host) {
				raw, from = e, "GITHUB_API_URL"
			}
		}
	}
	if raw != "" {
		u, err := parseAPIURL(raw)
		if err != nil {
			return "", "", fmt.Errorf("invalid %s %q: %v; want https://HOST/api/v3 or https://api.github.com", from, safeURL(raw), err)
		}
		rest, graphql = endpointsFromAPIURL(u)
		return rest, graphql, nil
	}

	if ref.Host == "" {
		return "", "", errors.New("no host: give a PR URL or --api-url")
	}
	if IsDotCom(ref.Host) {
		return dotComREST, dotComGraphQL, nil
	}
	scheme := ref.Scheme
	if scheme == "" {
		scheme = "https"
	}
	if isTenancy(ref.Host) {
		api := scheme + "://api." + ref.Host
		return api, api + "/graphql", nil
	}
	base := scheme + "://" + ref.Host
	return base + "/api/v3", base + "/api/graphql", nil
}

// parseAPIURL accepts a full URL or a bare host ("ghe.example.com").
func parseAPIURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("no host")
	}
	if u.User != nil {
		// Credentials in a URL end up in logs and error messages (SEC-3).
		return nil, errors.New("credentials in the URL are not allowed; use --token")
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// safeURL shows a URL the user gave without any credentials in it.
func safeURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if strings.Contains(raw, "@") {
		return "(unparseable URL)"
	}
	return raw
}

func endpointsFromAPIURL(u *url.URL) (rest, graphql string) {
	host := strings.ToLower(u.Hostname())
	apiHost := strings.HasPrefix(host, "api.") || strings.Contains(host, ".api.")
	switch {
	case strings.HasSuffix(u.Path, "/api/v3"):
		rest = u.String()
		gq := *u
		gq.Path = strings.TrimSuffix(u.Path, "/v3") + "/graphql"
		return rest, gq.String()
	case u.Path == "" && apiHost:
		// api.github.com and api.TENANT.ghe.com serve REST at the root.
		rest = u.String()
		return rest, rest + "/graphql"
	case u.Path == "":
		// A bare Enterprise or emulator host.
		u.Path = "/api/v3"
		rest = u.String()
		gq := *u
		gq.Path = "/api/graphql"
		return rest, gq.String()
	default:
		// A custom prefix (a proxy): REST where told, GraphQL beside it.
		rest = u.String()
		gq := *u
		if apiHost {
			gq.Path = u.Path + "/graphql"
		} else {
			gq.Path = "/api/graphql"
		}
		return rest, gq.String()
	}
}

// apiHostMatches reports whether an API host serves the PR web host.
func apiHostMatches(apiHost, webHost string) bool {
	return SameHost(webHostOf(apiHost), webHost)
}

// WebHost is the host[:port] that serves web pages and git for the API at
// apiURL (a REST base as Endpoints returns it). GitHub splits the two:
// api.github.com serves github.com, api.TENANT.ghe.com serves TENANT.ghe.com.
// Enterprise Server and the emulator serve both from one host. Credentials
// follow this mapping (SEC-6), so it is explicit rather than guessed from an
// "api." prefix.
func WebHost(apiURL string) (string, error) {
	u, err := parseAPIURL(apiURL)
	if err != nil {
		return "", fmt.Errorf("invalid API URL %q: %v", safeURL(apiURL), err)
	}
	return webHostOf(u.Host), nil
}

func webHostOf(apiHost string) string {
	h := canonHost(apiHost)
	switch {
	case IsDotCom(h):
		return "github.com"
	case strings.HasPrefix(h, "api.") && isTenancy(h):
		return strings.TrimPrefix(h, "api.")
	}
	return h
}

// SameHost reports whether two host[:port] name the same web host: case
// and a default port aside, and www.github.com being github.com.
func SameHost(a, b string) bool {
	if IsDotCom(a) || IsDotCom(b) {
		return IsDotCom(a) && IsDotCom(b) && !isAPIDotCom(a) && !isAPIDotCom(b)
	}
	return canonHost(a) == canonHost(b)
}

func isAPIDotCom(h string) bool { return strings.HasPrefix(strings.ToLower(h), "api.") }

// canonHost lower-cases host[:port] and drops the port when it is the
// default of http or https: a PR URL and an API URL may spell either.
func canonHost(h string) string {
	h = strings.ToLower(h)
	for _, p := range []string{":443", ":80"} {
		h = strings.TrimSuffix(h, p)
	}
	return h
}

// CheckHosts refuses a PR whose web host is not the one the API at apiURL
// serves (SEC-6): the token resolved for the API must not be spent on, or
// git pointed at, a host the API does not vouch for. allowMismatch is the
// user's explicit word that the API does serve that PR; the clone URL then
// still comes from the API.
func CheckHosts(ref forge.PRRef, apiURL string, allowMismatch bool) error {
	web, err := WebHost(apiURL)
	if err != nil {
		return err
	}
	if allowMismatch || SameHost(ref.Host, web) {
		return nil
	}
	return &HostMismatchError{PRHost: ref.Host, APIHost: web}
}

// HostMismatchError is a PR URL on another host than the API's.
type HostMismatchError struct {
	PRHost  string // from the PR URL
	APIHost string // the web host the API serves
}

func (e *HostMismatchError) Error() string {
	return fmt.Sprintf("PR URL host %s is not the API's host %s (--api-url): "+
		"give a PR URL on %s or an --api-url for %s, or pass --allow-host-mismatch if %s really serves this PR",
		e.PRHost, e.APIHost, e.APIHost, e.PRHost, e.APIHost)
}

// CloneURL checks the clone URL the API reported for owner/repo, or derives
// one on the API's web host when it reported none, and returns the URL git
// may be given the token for (SEC-6): on the API's own web host, https, or
// plain http to a loopback address only.
func CloneURL(apiURL, reported, owner, repo string) (string, error) {
	api, err := parseAPIURL(apiURL)
	if err != nil {
		return "", fmt.Errorf("invalid API URL %q: %v", safeURL(apiURL), err)
	}
	web := webHostOf(api.Host)
	if strings.TrimSpace(reported) == "" {
		reported = fmt.Sprintf("%s://%s/%s/%s.git", api.Scheme, web, owner, repo)
	}
	u, err := url.Parse(reported)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the API reported an unusable clone URL %q", safeURL(reported))
	}
	if u.User != nil {
		return "", fmt.Errorf("the API reported a clone URL with credentials in it (%s); refusing it", u.Redacted())
	}
	if !SameHost(u.Host, web) {
		return "", fmt.Errorf("the API reported clone URL %s on %s, not on %s which the API serves; refusing to send the token there", u.Redacted(), u.Host, web)
	}
	if err := secure.CheckTokenURL(u); err != nil {
		return "", err
	}
	return u.String(), nil
}

func hostname(hostport string) string {
	u := url.URL{Host: hostport}
	return u.Hostname()
}

// SourceFlag is the source ResolveToken reports for a --token value.
const SourceFlag = "--token"

const ghAuthTimeout = 10 * time.Second

// ResolveToken finds the token for host (the PR's web host, host[:port]) by
// IF-2's precedence and names where it came from, never the token itself.
//
// ghAuthToken asks the gh CLI (nil skips it); GHAuthToken is the real one.
func ResolveToken(host, flagToken string, env func(string) string, ghAuthToken func(ctx context.Context, host string) (string, error)) (token, source string, err error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	if t := strings.TrimSpace(flagToken); t != "" {
		return t, SourceFlag, nil
	}
	try := func(names ...string) (string, string) {
		for _, n := range names {
			if t := strings.TrimSpace(env(n)); t != "" {
				return t, n
			}
		}
		return "", ""
	}
	if t, src := try("CONVERGE_TOKEN"); t != "" {
		return t, src, nil
	}

	dotCom := IsDotCom(host)
	if dotCom {
		if t, src := try("GH_TOKEN", "GITHUB_TOKEN"); t != "" {
			return t, src, nil
		}
	} else {
		if t, src := try("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"); t != "" {
			return t, src, nil
		}
		// In Actions on an Enterprise server GITHUB_TOKEN belongs to the
		// host GITHUB_API_URL names; anywhere else it is a github.com token.
		if api := env("GITHUB_API_URL"); api != "" {
			if u, perr := parseAPIURL(api); perr == nil && apiHostMatches(u.Host, host) {
				if t, src := try("GITHUB_TOKEN"); t != "" {
					return t, src, nil
				}
			}
		}
	}

	ghCmd := "gh auth token"
	if !dotCom {
		ghCmd += " --hostname " + host
	}
	if ghAuthToken != nil {
		// A hung gh (a keyring prompt) must not hang the run.
		ctx, cancel := context.WithTimeout(context.Background(), ghAuthTimeout)
		t, gerr := ghAuthToken(ctx, host)
		cancel()
		if t = strings.TrimSpace(t); gerr == nil && t != "" {
			return t, ghCmd, nil
		}
	}

	if dotCom {
		return "", "", &forge.Error{Kind: forge.KindAuth, Op: "resolve token",
			Msg: "no token for github.com: set CONVERGE_TOKEN or GH_TOKEN, or run gh auth login"}
	}
	return "", "", &forge.Error{Kind: forge.KindAuth, Op: "resolve token",
		Msg: fmt.Sprintf("no token for %s: set CONVERGE_TOKEN or GH_ENTERPRISE_TOKEN, or run gh auth login --hostname %s", host, host)}
}

// GHAuthToken asks the gh CLI for its stored token for host; a missing gh
// or a host gh is not logged in to yields an error, never a prompt.
func GHAuthToken(ctx context.Context, host string) (string, error) {
	path, err := exec.LookPath("gh")
	if err != nil {
		return "", fmt.Errorf("gh not found: %w", err)
	}
	args := []string{"auth", "token"}
	if !IsDotCom(host) {
		args = append(args, "--hostname", host)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// gh's stderr names the host, never the token.
		return "", fmt.Errorf("gh auth token: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
