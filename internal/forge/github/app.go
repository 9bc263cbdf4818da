package github

// GitHub App auth (SEC-5): the App's id and private key sign a short JWT
// (RS256) that asks which installation holds a repository and mints that
// installation's access token; the token, cached per installation and
// minted again before it expires, is what REST, GraphQL and git send for
// the repository.
//
// Written on golang-jwt rather than ghinstallation: converge needs the
// installation looked up per repository, a refresh margin of minutes, a
// clock tests can move, and a fresh token after a 401 (a token revoked or
// expired early); ghinstallation has none of these and would bring a
// second go-github major version with it.

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/secure"
)

// AppTokenRefresh is how long before its expiry an installation token is
// replaced: a request that starts with it must not outlive it.
const AppTokenRefresh = 5 * time.Minute

// appJWTLife bounds a JWT's exp from its iat; GitHub refuses an exp more
// than 10 minutes ahead, and iat is set a minute back for clock drift.
const (
	appJWTBackdate = 60 * time.Second
	appJWTLife     = 10 * time.Minute
)

// AppOptions configure an App.
type AppOptions struct {
	// ID is the App's id (its settings page, "App ID").
	ID int64
	// Key is the App's private key (LoadAppKey reads its PEM file).
	Key *rsa.PrivateKey
	// Installation, when non-zero, is the installation every repository
	// is in; otherwise it is looked up per repository.
	Installation int64
	// APIURL is the REST base the JWT and the tokens go to, and nowhere
	// else (SEC-6).
	APIURL string
	// HTTPClient supplies the transport (a CA); its Timeout bounds each
	// request of the App's own (default 30s).
	HTTPClient *http.Client
	// Now is the clock token expiry is judged by (default time.Now).
	Now func() time.Time
	// OnToken, when set, is told each installation token as it is
	// minted, before anything can use it: the caller's redaction learns
	// it there (SEC-3), the tokens minted after start included.
	OnToken func(token string)
}

// App mints installation tokens for one GitHub App on one API host. It is
// safe for concurrent use and meant to be shared by the Clients of every
// repository it serves.
type App struct {
	id      int64
	key     *rsa.PrivateKey
	fixed   int64
	restURL *url.URL
	hc      *http.Client
	now     func() time.Time
	onToken func(string)

	mu     sync.Mutex
	byRepo map[string]int64      // "owner/name" (lower case) -> installation
	tokens map[int64]*appToken   // by installation
	mint   map[int64]*sync.Mutex // one mint at a time per installation
	slug   string
	issued []string // every token minted, for redaction
}

type appToken struct {
	value   string
	expires time.Time
}

// LoadAppKey reads a GitHub App private key (the PEM file GitHub lets an
// App owner download). Its errors name the file and the fix, never the
// key.
func LoadAppKey(path string) (*rsa.PrivateKey, error) {
	if strings.TrimSpace(path) == "" {
		return nil, errors.New("no GitHub App private key: give --app-key FILE (CONVERGE_APP_KEY) with --app-id")
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("GitHub App private key %s does not exist; give the .pem file downloaded from the App's settings (--app-key, CONVERGE_APP_KEY)", path)
	case err != nil:
		return nil, fmt.Errorf("cannot read the GitHub App private key %s: %v; make it readable by this user", path, pathErrReason(err))
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(b)
	if err != nil {
		return nil, fmt.Errorf("GitHub App private key %s is not a PEM RSA private key (%v); give the .pem file downloaded from the App's settings (--app-key)", path, keyErrReason(err))
	}
	return key, nil
}

// pathErrReason is an os error without the path it repeats.
func pathErrReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func keyErrReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrKeyMustBePEMEncoded):
		return "no PEM block"
	case errors.Is(err, jwt.ErrNotRSAPrivateKey):
		return "not an RSA key"
	}
	return "unparseable key"
}

// NewApp checks the options; it does no IO.
func NewApp(o AppOptions) (*App, error) {
	if o.ID <= 0 {
		return nil, fmt.Errorf("invalid GitHub App id %d: give the App's numeric id (--app-id, CONVERGE_APP_ID)", o.ID)
	}
	if o.Key == nil {
		return nil, errors.New("no GitHub App private key: give --app-key FILE (CONVERGE_APP_KEY)")
	}
	if o.Installation < 0 {
		return nil, fmt.Errorf("invalid GitHub App installation id %d", o.Installation)
	}
	apiURL := o.APIURL
	if apiURL == "" {
		apiURL = dotComREST
	}
	u, err := parseAPIURL(apiURL)
	if err != nil {
		return nil, fmt.Errorf("invalid API URL %q: %v", safeURL(apiURL), err)
	}
	// SEC-6: the JWT is a credential like any token.
	if err := secure.CheckTokenURL(u); err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c := *hc
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	// A redirect could carry the JWT elsewhere: the App's own requests
	// follow none.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &App{
		id: o.ID, key: o.Key, fixed: o.Installation, restURL: u, hc: &c, now: now, onToken: o.OnToken,
		byRepo: map[string]int64{}, tokens: map[int64]*appToken{}, mint: map[int64]*sync.Mutex{},
	}, nil
}

// ID is the App's id.
func (a *App) ID() int64 { return a.id }

// JWT signs a token that authenticates as the App itself: iat a minute
// back (clock drift), exp ten minutes after iat.
func (a *App) JWT() (string, error) {
	iat := a.now().Add(-appJWTBackdate).Truncate(time.Second)
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(a.id, 10),
		IssuedAt:  jwt.NewNumericDate(iat),
		ExpiresAt: jwt.NewNumericDate(iat.Add(appJWTLife)),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("sign the GitHub App JWT: %w", err)
	}
	return s, nil
}

// Token is the installation access token for owner/repo: the cached one
// while it has more than AppTokenRefresh left, else a new one.
func (a *App) Token(ctx context.Context, owner, repo string) (string, error) {
	inst, err := a.installation(ctx, owner, repo)
	if err != nil {
		return "", err
	}
	return a.installationToken(ctx, inst, "")
}

// GitToken is Token for git, as repo.Credential asks (SEC-5): git gets
// the token current when each fetch or push starts, not the one the run
// began with; refused, when set, is a token git was just refused with
// (revoked, or the clocks disagree), replaced as a 401 replaces it for
// the API.
func (a *App) GitToken(ctx context.Context, owner, repo, refused string) (string, error) {
	inst, err := a.installation(ctx, owner, repo)
	if err != nil {
		return "", err
	}
	return a.installationToken(ctx, inst, refused)
}

// Secrets are the tokens minted so far, for redaction (SEC-3).
func (a *App) Secrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.issued...)
}

// Slug is the App's slug (GET /app): its bot acts as "SLUG[bot]" in REST
// and as SLUG in GraphQL.
func (a *App) Slug(ctx context.Context) (string, error) {
	a.mu.Lock()
	s := a.slug
	a.mu.Unlock()
	if s != "" {
		return s, nil
	}
	var out struct {
		Slug string `json:"slug"`
	}
	if err := a.call(ctx, "read the GitHub App", http.MethodGet, "app", &out); err != nil {
		return "", err
	}
	if out.Slug == "" {
		return "", &forge.Error{Kind: forge.KindOther, Op: "read the GitHub App", Msg: a.restURL.Host + " answered without the App's slug"}
	}
	a.mu.Lock()
	a.slug = out.Slug
	a.mu.Unlock()
	return out.Slug, nil
}

func (a *App) installation(ctx context.Context, owner, repo string) (int64, error) {
	if a.fixed != 0 {
		return a.fixed, nil
	}
	key := strings.ToLower(owner + "/" + repo)
	a.mu.Lock()
	id, ok := a.byRepo[key]
	a.mu.Unlock()
	if ok {
		return id, nil
	}
	var out struct {
		ID int64 `json:"id"`
	}
	op := "find the GitHub App's installation on " + owner + "/" + repo
	if err := a.call(ctx, op, http.MethodGet, "repos/"+url.PathEscape(owner)+"/"+url.PathEscape(repo)+"/installation", &out); err != nil {
		if forge.KindOf(err) == forge.KindNotFound {
			return 0, &forge.Error{Kind: forge.KindAuth, Op: op,
				Msg: fmt.Sprintf("GitHub App %d is not installed on %s/%s; install it there (the App's settings, Install App) or pass --app-installation", a.id, owner, repo)}
		}
		return 0, err
	}
	if out.ID <= 0 {
		return 0, &forge.Error{Kind: forge.KindOther, Op: op, Msg: a.restURL.Host + " answered without an installation id"}
	}
	a.mu.Lock()
	a.byRepo[key] = out.ID
	a.mu.Unlock()
	return out.ID, nil
}

// installationToken returns inst's cached token unless it is stale or is
// refused (the one a 401 answered); one mint runs at a time per
// installation, and callers waiting on it share its token.
func (a *App) installationToken(ctx context.Context, inst int64, refused string) (string, error) {
	a.mu.Lock()
	m := a.mint[inst]
	if m == nil {
		m = &sync.Mutex{}
		a.mint[inst] = m
	}
	a.mu.Unlock()
	m.Lock()
	defer m.Unlock()
	a.mu.Lock()
	t := a.tokens[inst]
	a.mu.Unlock()
	if t != nil && t.value != refused && a.now().Add(AppTokenRefresh).Before(t.expires) {
		return t.value, nil
	}
	var out struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	op := fmt.Sprintf("mint a token for GitHub App installation %d", inst)
	if err := a.call(ctx, op, http.MethodPost, fmt.Sprintf("app/installations/%d/access_tokens", inst), &out); err != nil {
		return "", err
	}
	if out.Token == "" || out.ExpiresAt.IsZero() {
		return "", &forge.Error{Kind: forge.KindOther, Op: op, Msg: a.restURL.Host + " answered without a token and its expiry"}
	}
	// Redacted before it is used, so no log line or record of its use
	// can hold it (SEC-3).
	if a.onToken != nil {
		a.onToken(out.Token)
	}
	a.mu.Lock()
	a.tokens[inst] = &appToken{value: out.Token, expires: out.ExpiresAt}
	a.issued = append(a.issued, out.Token)
	a.mu.Unlock()
	return out.Token, nil
}

// call is one request authenticated as the App (the JWT), to the API host
// only; out receives the JSON answer.
func (a *App) call(ctx context.Context, op, method, path string, out any) error {
	tok, err := a.JWT()
	if err != nil {
		return err
	}
	u := a.restURL.JoinPath(path)
	var body io.Reader
	if method == http.MethodPost {
		body = bytes.NewReader([]byte("{}"))
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("User-Agent", defaultUserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s: %w", op, err)
		}
		msg := err.Error()
		if m, ok := netMessage(err); ok {
			msg = m
		}
		return &forge.Error{Kind: forge.KindUnreachable, Op: op, Msg: fmt.Sprintf("cannot reach %s: %s; check --api-url", a.restURL.Host, msg)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &e)
		msg := strings.TrimSpace(e.Message)
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		kind := forge.KindOther
		switch {
		case isRateLimit(resp, b):
			// The App's own limit (its JWT's, or the installation's), a
			// 403 or 429 as on every other endpoint: ridden out, never
			// read as GitHub refusing the App (REL-1, REL-4).
			kind = forge.KindRateLimited
			wait := "later"
			if d, ok := retryAfter(resp.Header, time.Now()); ok {
				wait = "in " + d.String()
			} else if reset, ok := rateReset(resp.Header); ok {
				wait = "after " + reset.UTC().Format(time.RFC3339)
			}
			msg = fmt.Sprintf("%s rate-limited GitHub App %d: %s; converge tries again %s", a.restURL.Host, a.id, msg, wait)
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			kind = forge.KindAuth
			msg = fmt.Sprintf("%s refused GitHub App %d: %s; check --app-id and that --app-key is one of the App's current private keys", a.restURL.Host, a.id, msg)
		case resp.StatusCode == http.StatusNotFound:
			kind = forge.KindNotFound
			msg = fmt.Sprintf("%s: %s", a.restURL.Host, msg)
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			kind = forge.KindUnreachable
			msg = fmt.Sprintf("%s answered %d %s; try again later", a.restURL.Host, resp.StatusCode, msg)
		default:
			msg = fmt.Sprintf("%s answered %d: %s", a.restURL.Host, resp.StatusCode, msg)
		}
		return &forge.Error{Kind: kind, Op: op, Msg: msg}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &forge.Error{Kind: forge.KindOther, Op: op, Msg: a.restURL.Host + " did not answer with JSON; check --api-url"}
	}
	return nil
}

// appTransport authenticates a Client's requests with the installation
// token of its repository, to the API and GraphQL origins only (SEC-6);
// a 401 answer drops the token and the request is sent once more with a
// new one.
type appTransport struct {
	next        http.RoundTripper
	app         *App
	owner, repo string
	allowed     []*url.URL
}

func (t *appTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.allows(req.URL) {
		r := req.Clone(req.Context())
		r.Header.Del("Authorization")
		return t.next.RoundTrip(r)
	}
	ctx := req.Context()
	inst, err := t.app.installation(ctx, t.owner, t.repo)
	if err != nil {
		return nil, err
	}
	tok, err := t.app.installationToken(ctx, inst, "")
	if err != nil {
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, err
	}
	// Refused though not stale by our clock: revoked, or the clocks
	// disagree. One new token, one more try.
	fresh, err := t.app.installationToken(ctx, inst, tok)
	if err != nil || fresh == tok {
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	r2 := req.Clone(ctx)
	if req.GetBody != nil {
		if r2.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.send(r2, fresh)
}

func (t *appTransport) send(req *http.Request, tok string) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+tok)
	return t.next.RoundTrip(r)
}

func (t *appTransport) allows(u *url.URL) bool { return credentialsAllowed(u, t.allowed) }

// checkAppOptions refuses an App next to a token, an App without its
// repository, and an App of another API host than the Client's.
func checkAppOptions(opts Options, restURL *url.URL) error {
	if opts.App == nil {
		return nil
	}
	if opts.Token != "" {
		return errors.New("a GitHub App and a token were both given: use one (the App's installation tokens, or --token)")
	}
	owner, repo, ok := strings.Cut(opts.AppRepo, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return fmt.Errorf("a GitHub App client needs its repository as owner/name, not %q", opts.AppRepo)
	}
	if !sameOrigin(opts.App.restURL, restURL) {
		return fmt.Errorf("the GitHub App is set up for %s, not %s: its tokens go only to the API host they are for (SEC-6)", opts.App.restURL.Host, restURL.Host)
	}
	return nil
}

// tokenRedactor keeps the Client's token, or every token its App minted
// so far, out of its messages (SEC-3).
func tokenRedactor(opts Options) redactor {
	r := redactor{secrets: []string{opts.Token}}
	if opts.App != nil {
		r.live = opts.App.Secrets
	}
	return r
}

// appAuth puts the App's installation tokens under the Client's transport
// when it has an App.
func appAuth(opts Options, next http.RoundTripper, restURL, graphqlURL *url.URL) http.RoundTripper {
	if opts.App == nil {
		return next
	}
	owner, repo, _ := strings.Cut(opts.AppRepo, "/")
	return &appTransport{next: next, app: opts.App, owner: owner, repo: repo, allowed: []*url.URL{restURL, graphqlURL}}
}

// appViewer is the App's bot as GraphQL names authors (SLUG, where REST
// says SLUG[bot]): the observation reads comments through GraphQL, and
// markers are believed only from converge's own login. GET /user refuses
// installation tokens.
func (c *Client) appViewer(ctx context.Context) (string, error) {
	return c.app.Slug(ctx)
}

// IsApp reports whether the Client authenticates as a GitHub App.
func (c *Client) IsApp() bool { return c.app != nil }
