// Package github is converge's GitHub forge: one GraphQL query per PR
// observation, GraphQL mutations for review requests and threads, REST (via
// go-github) for issue events, labels, comments, statuses and permissions.
// It serves github.com, GitHub Enterprise Server and the fakehub emulator.
package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/secure"
)

var (
	_ forge.Forge        = (*Client)(nil)
	_ forge.CheckRunner  = (*Client)(nil)
	_ forge.IssueEventer = (*Client)(nil)
	_ forge.BaseComparer = (*Client)(nil)
)

// Options configures a Client. Zero values take sensible defaults.
type Options struct {
	// APIURL is the REST base (https://api.github.com, https://HOST/api/v3).
	APIURL string
	// GraphQLURL defaults to the one Endpoints derives from APIURL.
	GraphQLURL string
	// Token is sent as "Authorization: token …", to the API and GraphQL
	// origins only.
	Token string
	// App, instead of Token, authenticates every request with the
	// installation token of AppRepo ("owner/name"), GitHub App auth
	// (SEC-5, app.go); the Client then publishes verdicts as check runs.
	App     *App
	AppRepo string
	// CAFile adds a trusted CA (ignored when HTTPClient is given; build that
	// with HTTPClientWithCA).
	CAFile string
	// HTTPClient supplies the base transport; its Timeout becomes the
	// per-attempt timeout, since a whole-call timeout would cut retries.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt (default 30s).
	Timeout   time.Duration
	UserAgent string
	Logger    *slog.Logger
	Retry     RetryPolicy
	// MaxConcurrent caps requests in flight to the host (default
	// DefaultMaxConcurrent); ignored when Limiter is given.
	MaxConcurrent int
	// Limiter, when set, is shared with other Clients of the same hosts
	// (one token, many loops): see HostLimiter.
	Limiter *HostLimiter
}

// Client talks to one GitHub host. It is safe for concurrent use.
type Client struct {
	rest       *gh.Client
	http       *http.Client
	restURL    *url.URL
	graphqlURL *url.URL
	userAgent  string
	log        *slog.Logger
	now        func() time.Time
	redact     redactor

	mu    sync.Mutex
	etags map[string]cachedPage
	// probes are the change probe's last whole reads (probe.go).
	probes map[forge.PRRef]*probeEntry

	viewerMu sync.Mutex
	viewer   string

	app *App // GitHub App auth (app.go); nil with a token
	// appOwner and appRepo are the repository whose installation the
	// App's tokens are for (RateIdentity).
	appOwner, appRepo string
}

const defaultUserAgent = "converge"

// New builds a Client; it does no IO.
func New(opts Options) (*Client, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	apiURL := opts.APIURL
	if apiURL == "" {
		apiURL = dotComREST
	}
	u, err := parseAPIURL(apiURL)
	if err != nil {
		return nil, fmt.Errorf("invalid API URL %q: %v", safeURL(apiURL), err)
	}
	restStr, gqlStr := u.String(), opts.GraphQLURL
	if gqlStr == "" {
		_, gqlStr = endpointsFromAPIURL(u)
	}
	gu, err := url.Parse(gqlStr)
	if err != nil || gu.Host == "" || (gu.Scheme != "https" && gu.Scheme != "http") || gu.User != nil {
		return nil, fmt.Errorf("invalid GraphQL URL %q", safeURL(gqlStr))
	}
	restURL, _ := url.Parse(restStr)
	if err := checkAppOptions(opts, restURL); err != nil {
		return nil, err
	}
	if opts.Token != "" || opts.App != nil {
		// SEC-6: refused here, before any request, rather than sent; a
		// local emulator on loopback keeps its plain http.
		for _, u := range []*url.URL{restURL, gu} {
			if err := secure.CheckTokenURL(u); err != nil {
				return nil, err
			}
		}
	}

	base := opts.HTTPClient
	if base == nil {
		base, err = HTTPClientWithCA(opts.CAFile)
		if err != nil {
			return nil, err
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = base.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	next = appAuth(opts, next, restURL, gu)
	authHeader := ""
	if opts.Token != "" {
		authHeader = "token " + opts.Token
	}
	hc := *base
	hc.Timeout = 0
	rt := &retryTransport{
		next: &authTransport{
			next:    next,
			header:  authHeader,
			allowed: []*url.URL{restURL, gu},
			log:     log,
		},
		policy:  opts.Retry.WithDefaults(),
		timeout: timeout,
		log:     log,
		redact:  tokenRedactor(opts),
		limits:  opts.Limiter,
	}
	if opts.Limiter == nil {
		rt.limits = NewHostLimiter(opts.MaxConcurrent)
	}
	hc.Transport = rt
	hc.Transport = crashWrites(hc.Transport) // REL-2's crash matrix; nothing unless a test arms it

	ua := opts.UserAgent
	if ua == "" {
		ua = defaultUserAgent
	}
	ghOpts := []gh.ClientOptionsFunc{
		gh.WithHTTPClient(&hc),
		gh.WithUserAgent(ua),
		// Waiting is REL-1's job in retryTransport; go-github's pre-emptive
		// refusal would turn one spent window into errors without a request.
		gh.WithDisableRateLimitCheck(),
	}
	if restStr != dotComREST {
		// WithURLs, not WithEnterpriseURLs: Endpoints already settled the
		// exact base, and a proxy prefix must not grow an /api/v3.
		ghOpts = append(ghOpts, gh.WithURLs(&restStr, &restStr))
	}
	appOwner, appRepoName, _ := strings.Cut(opts.AppRepo, "/")
	rc, err := gh.NewClient(ghOpts...)
	if err != nil {
		return nil, fmt.Errorf("github client: %w", err)
	}
	return &Client{
		rest:       rc,
		http:       &hc,
		restURL:    restURL,
		graphqlURL: gu,
		userAgent:  ua,
		log:        log,
		now:        time.Now,
		redact:     tokenRedactor(opts),
		etags:      map[string]cachedPage{},
		app:        opts.App,
		appOwner:   appOwner,
		appRepo:    appRepoName,
	}, nil
}

// RESTURL and GraphQLURL report the endpoints in use.
func (c *Client) RESTURL() string    { return c.restURL.String() }
func (c *Client) GraphQLURL() string { return c.graphqlURL.String() }

type gqlRequest struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables,omitempty"`
	OperationName string         `json:"operationName,omitempty"`
}

type gqlError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

var opNameRE = regexp.MustCompile(`(?m)^\s*(?:query|mutation)\s+([_A-Za-z][_0-9A-Za-z]*)`)

func operationName(doc string) string {
	if m := opNameRE.FindStringSubmatch(doc); m != nil {
		return m[1]
	}
	return ""
}

// graphQL posts one document and decodes data into out. GraphQL errors
// come back as *gqlErrors for the caller to map; they are never partial
// successes, since a half-read PR is worse than none.
func (c *Client) graphQL(ctx context.Context, op, doc string, vars map[string]any, mutation bool, out any) (http.Header, error) {
	body, err := json.Marshal(gqlRequest{Query: doc, Variables: vars, OperationName: operationName(doc)})
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", op, err)
	}
	kind := kindGraphQLQuery
	if mutation {
		kind = kindGraphQLMutation
	}
	req, err := http.NewRequestWithContext(withKind(ctx, kind), http.MethodPost, c.graphqlURL.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)

	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.mapErr(op, c.graphqlURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, c.mapErr(op, c.graphqlURL, err)
	}
	c.log.Debug("github: graphql", "op", op, "status", resp.StatusCode, "bytes", len(b))

	var r struct {
		Data    json.RawMessage `json:"data"`
		Errors  []gqlError      `json:"errors"`
		Message string          `json:"message"`
	}
	jerr := json.Unmarshal(b, &r)
	if resp.StatusCode != http.StatusOK {
		msg := r.Message
		if msg == "" && len(r.Errors) > 0 {
			msg = r.Errors[0].Message
		}
		if resp.StatusCode == http.StatusNotFound {
			// A 404 on the endpoint itself means a wrong URL, not a
			// missing PR (GraphQL reports those inside a 200).
			return nil, c.fail(forge.KindUnreachable, op,
				fmt.Sprintf("no GraphQL endpoint at %s (404); check --api-url", c.graphqlURL), nil)
		}
		return nil, c.statusErr(op, c.graphqlURL, resp.StatusCode, msg, resp.Header, nil)
	}
	if jerr != nil {
		return nil, c.fail(forge.KindUnreachable, op,
			fmt.Sprintf("%s did not answer with GraphQL JSON; check --api-url", c.graphqlURL), jerr)
	}
	if len(r.Errors) > 0 {
		if p, ok := out.(*partialData); ok {
			p.data = r.Data // per-item answers of a batch (batch.go)
		}
		return resp.Header, &gqlErrors{errs: r.Errors, header: resp.Header}
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			return nil, c.fail(forge.KindOther, op, "decode GraphQL answer: "+err.Error(), err)
		}
	}
	return resp.Header, nil
}

// gqlErrors is GitHub's `errors` array on a 200 answer.
type gqlErrors struct {
	errs   []gqlError
	header http.Header
}

func (e *gqlErrors) Error() string {
	msgs := make([]string, 0, len(e.errs))
	for _, x := range e.errs {
		msgs = append(msgs, x.Message)
	}
	return strings.Join(msgs, "; ")
}

func (e *gqlErrors) has(typ string) bool {
	for _, x := range e.errs {
		if x.Type == typ {
			return true
		}
	}
	return false
}

// rateLimited reports GitHub's GraphQL primary rate limit in every shape
// it gives: today's `type: "RATE_LIMIT"` with `code: "graphql_rate_limit"`
// (x-ratelimit-remaining not always 0: a query may cost more than what is
// left), and the older `type: "RATE_LIMITED"` (REL-1). Never a refusal.
func (e *gqlErrors) rateLimited() bool {
	for _, x := range e.errs {
		if x.Type == "RATE_LIMITED" || x.Type == "RATE_LIMIT" || strings.EqualFold(x.Code, "graphql_rate_limit") {
			return true
		}
	}
	return false
}

// gqlFail maps GraphQL errors by GitHub's `type`.
func (c *Client) gqlFail(op string, err error) error {
	ge, ok := err.(*gqlErrors)
	if !ok {
		return err
	}
	host := c.graphqlURL.Host
	switch {
	case ge.rateLimited():
		note := ""
		if reset, ok := rateReset(ge.header); ok {
			note = resetNote(reset)
		}
		return c.fail(forge.KindRateLimited, op, fmt.Sprintf("GraphQL rate limit of %s spent%s", host, note), ge)
	case ge.has("NOT_FOUND"):
		return c.fail(forge.KindNotFound, op, ge.Error(), ge)
	case ge.has("FORBIDDEN"):
		return c.fail(forge.KindAuth, op, fmt.Sprintf("token rejected by %s: %s", host, ge.Error()), ge)
	case ge.transient():
		// GitHub's own failure (REL-1): a write may have landed, so the
		// engine observes again rather than repeating it.
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("%s failed the request: %s; try again later", host, ge.Error()), ge)
	}
	return c.fail(forge.KindInvalid, op, fmt.Sprintf("%s refused the request: %s", host, ge.Error()), ge)
}
