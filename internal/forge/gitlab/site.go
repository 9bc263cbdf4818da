package gitlab

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// What converge needs of a GitLab instance before it has a client: its API
// endpoints, which host a token may go to (SEC-6), where git clones from,
// and the token. GitLab.com and self-managed instances are alike: the API
// lives on the web host under /api/v4 (or under a relative URL root, e.g.
// https://example.com/gitlab/api/v4), GraphQL at /api/graphql beside it.

// Endpoints are the REST and GraphQL URLs for a merge request: from
// --api-url when given (an instance's REST root, https://HOST[/ROOT]/api/v4;
// its origin alone is taken as that), else on the merge request's own host.
func Endpoints(ref forge.PRRef, apiURLFlag string) (rest, graphql string, err error) {
	raw := strings.TrimSpace(apiURLFlag)
	if raw == "" {
		if ref.Host == "" {
			return "", "", fmt.Errorf("no host: give a merge request URL or --api-url")
		}
		scheme := ref.Scheme
		if scheme == "" {
			scheme = "https"
		}
		raw = scheme + "://" + ref.Host
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("invalid --api-url %q: want https://HOST/api/v4 (a self-managed GitLab's API root)", redact(raw))
	}
	root := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v4")
	base := u.Scheme + "://" + u.Host + root
	return base + "/api/v4", base + "/api/graphql", nil
}

// WebHost is the host[:port] the REST URL rest is on: a GitLab instance
// serves its web pages, API and git on one host.
func WebHost(rest string) (string, error) {
	u, err := url.Parse(rest)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("invalid API URL %q", redact(rest))
	}
	return u.Host, nil
}

// TokenSourceFlag is the source ResolveToken reports for a --token value.
const TokenSourceFlag = "--token"

// ResolveToken finds converge's GitLab token as glab does, and names where
// it came from, never the token itself: --token, then CONVERGE_TOKEN (as
// on GitHub), then GITLAB_TOKEN, then GL_TOKEN. With none it is an
// authentication error (exit 6) saying what to set.
func ResolveToken(host, flagToken string, env func(string) string) (token, source string, err error) {
	if t := strings.TrimSpace(flagToken); t != "" {
		return t, TokenSourceFlag, nil
	}
	if env == nil {
		env = func(string) string { return "" }
	}
	if t := strings.TrimSpace(env("CONVERGE_TOKEN")); t != "" {
		return t, "CONVERGE_TOKEN", nil
	}
	if t, src := TokenFromEnv(env); t != "" {
		return t, src, nil
	}
	return "", "", &forge.Error{Kind: forge.KindAuth, Op: "resolve token",
		Msg: fmt.Sprintf("no token for %s: set CONVERGE_TOKEN or GITLAB_TOKEN (a personal, project or group access token with the api scope), or pass --token", host)}
}

// redact drops any userinfo from a URL for an error message.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}
