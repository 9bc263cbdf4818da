// Package gitlab is converge's GitLab forge: GitLab.com and self-managed
// GitLab over REST v4 (reads, single writes) and GraphQL at /api/graphql
// (batched thread writes). Merge requests are converge's pull requests;
// their resolvable discussions its threads; approvals, "requested changes"
// and diff notes its reviews (observe.go says how they are synthesised).
//
// The token goes as PRIVATE-TOKEN (REST) or "Authorization: Bearer"
// (GraphQL) to the API's origin only (SEC-6).
package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/secure"
)

var (
	_ forge.Forge         = (*Client)(nil)
	_ forge.IssueEventer  = (*Client)(nil)
	_ forge.BaseComparer  = (*Client)(nil)
	_ forge.ThreadBatcher = (*Client)(nil)
)

// Options configures a Client. Zero values take sensible defaults.
type Options struct {
	// APIURL is the REST v4 base, e.g. https://gitlab.example.com/api/v4
	// (--api-url); a bare origin gets /api/v4. APIURLFor derives it from
	// a merge request's host.
	APIURL string
	// Token is a personal, project or group access token (TokenFromEnv).
	Token string
	// HTTPClient supplies the base transport; its Timeout becomes the
	// per-attempt timeout.
	HTTPClient *http.Client
	Timeout    time.Duration
	UserAgent  string
	Logger     *slog.Logger
	Retry      RetryPolicy
	// MaxConcurrent caps requests in flight to the host; ignored when
	// Limiter is given.
	MaxConcurrent int
	// Limiter, when set, is shared with other Clients of the same host.
	Limiter *HostLimiter
	// DuoLogins are GitLab Duo Code Review's usernames, whose notes are
	// read as its start (IssueEvents); default DuoUsername. A self-managed
	// GitLab whose bot user got another name lists it here.
	DuoLogins []string
}

// Client talks to one GitLab instance. It is safe for concurrent use.
type Client struct {
	http       *http.Client
	restURL    *url.URL
	graphqlURL *url.URL
	userAgent  string
	log        *slog.Logger
	now        func() time.Time
	token      string

	mu sync.Mutex
	// compares caches repository compares, immutable for a pair of SHAs.
	compares map[string]*compareResult
	// mrIDs are merge requests' global ids by ref (GraphQL batches).
	mrIDs map[forge.PRRef]int64
	// projects are projects read, by host and full path.
	projects map[string]*project

	duoLogins []string

	viewerMu sync.Mutex
	viewer   string
}

// TokenEnv lists the variables TokenFromEnv reads, in order, as glab does.
var TokenEnv = []string{"GITLAB_TOKEN", "GL_TOKEN"}

// TokenFromEnv returns the first non-empty of GITLAB_TOKEN and GL_TOKEN
// (glab's order) and the variable's name; "" when neither is set. The cli's
// --token wins over both.
func TokenFromEnv(env func(string) string) (token, source string) {
	for _, n := range TokenEnv {
		if t := strings.TrimSpace(env(n)); t != "" {
			return t, n
		}
	}
	return "", ""
}

func parseAPIURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("invalid API URL: want https://HOST/api/v4")
	}
	if u.User != nil {
		return nil, errors.New("invalid API URL: credentials in the URL are not allowed; use --token")
	}
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	if u.Path == "" {
		u.Path = "/api/v4"
	}
	return u, nil
}

// graphQLURLOf is GraphQL's endpoint for a REST base: the same origin,
// the REST path's prefix before /api/v4, then /api/graphql.
func graphQLURLOf(rest *url.URL) *url.URL {
	g := *rest
	g.Path = strings.TrimSuffix(rest.Path, "/v4")
	if !strings.HasSuffix(g.Path, "/api") {
		g.Path = "/api"
	}
	g.Path += "/graphql"
	return &g
}

// New builds a Client; it does no IO.
func New(opts Options) (*Client, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.APIURL == "" {
		return nil, errors.New("gitlab: no API URL (Endpoints derives it from the merge request)")
	}
	restURL, err := parseAPIURL(opts.APIURL)
	if err != nil {
		return nil, err
	}
	gqlURL := graphQLURLOf(restURL)
	if opts.Token != "" {
		// SEC-6: refused before any request rather than sent in clear.
		if err := secure.CheckTokenURL(restURL); err != nil {
			return nil, err
		}
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
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
	limits := opts.Limiter
	if limits == nil {
		limits = NewHostLimiter(opts.MaxConcurrent)
	}
	hc := *base
	hc.Timeout = 0
	hc.Transport = &retryTransport{
		next:    &authTransport{next: next, token: opts.Token, allowed: []*url.URL{restURL}, graphql: gqlURL},
		policy:  opts.Retry.WithDefaults(),
		timeout: timeout,
		limits:  limits,
		log:     log,
	}
	hc.Transport = crashWrites(hc.Transport) // REL-2's crash matrix; nothing unless a test arms it
	ua := opts.UserAgent
	if ua == "" {
		ua = "converge"
	}
	duo := slices.Clone(opts.DuoLogins)
	if len(duo) == 0 {
		duo = []string{DuoUsername}
	}
	return &Client{
		duoLogins: duo,
		http:      &hc, restURL: restURL, graphqlURL: gqlURL, userAgent: ua, log: log, now: time.Now, token: opts.Token,
		compares: map[string]*compareResult{}, mrIDs: map[forge.PRRef]int64{}, projects: map[string]*project{},
	}, nil
}

// RESTURL and GraphQLURL report the endpoints in use.
func (c *Client) RESTURL() string    { return c.restURL.String() }
func (c *Client) GraphQLURL() string { return c.graphqlURL.String() }

// projectPath is the REST path of ref's project: the url-escaped full
// path ("g%2Fsub%2Fp") as GitLab's :id takes it.
func projectPath(ref forge.PRRef) string {
	return "projects/" + url.PathEscape(ref.FullName())
}

func mrPath(ref forge.PRRef) string {
	return fmt.Sprintf("%s/merge_requests/%d", projectPath(ref), ref.Number)
}

// apiError is a non-2xx REST answer.
type apiError struct {
	status  int
	message string
	header  http.Header
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.status, e.message) }

// restResult is what a REST call gives besides its decoded body.
type restResult struct {
	header   http.Header
	nextPage int
}

// do sends one REST request to path (relative to the API base, with its
// query) and decodes a 2xx JSON answer into out (nil: discarded). body is
// JSON-encoded when not nil.
func (c *Client) do(ctx context.Context, method, path string, body, out any) (restResult, error) {
	u := c.restURL.String() + "/" + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return restResult{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return restResult{}, err
	}
	// An escaped project path must reach GitLab escaped ("g%2Fp").
	if pu, perr := url.Parse(u); perr == nil {
		req.URL = pu
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return restResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return restResult{}, err
	}
	res := restResult{header: resp.Header}
	if np := strings.TrimSpace(resp.Header.Get("X-Next-Page")); np != "" {
		res.nextPage, _ = strconv.Atoi(np)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return res, &apiError{status: resp.StatusCode, message: errorMessage(b), header: resp.Header}
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return res, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return res, nil
}

// errorMessage reads GitLab's {"message": …} or {"error": …}; message may
// be a string or an object of field errors.
func errorMessage(b []byte) string {
	var e struct {
		Message json.RawMessage `json:"message"`
		Error   string          `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil {
		return strings.TrimSpace(string(b[:min(len(b), 200)]))
	}
	var s string
	if json.Unmarshal(e.Message, &s) == nil {
		return s
	}
	if len(e.Message) > 0 {
		return string(e.Message)
	}
	return e.Error
}

// getAll reads every page of a list (per_page=100), in the API's order.
// A page that fails fails the whole read: a partial list is never an
// observation.
func getAll[T any](ctx context.Context, c *Client, path string, maxPages int) ([]T, bool, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var all []T
	for page := 1; page != 0; {
		if maxPages > 0 && page > maxPages {
			return all, false, nil
		}
		var items []T
		res, err := c.do(ctx, http.MethodGet, fmt.Sprintf("%s%sper_page=100&page=%d", path, sep, page), nil, &items)
		if err != nil {
			return nil, false, err
		}
		all = append(all, items...)
		if res.nextPage != 0 && res.nextPage <= page {
			return nil, false, fmt.Errorf("pagination of %s did not advance", path)
		}
		page = res.nextPage
	}
	return all, true, nil
}
