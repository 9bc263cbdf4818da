package fakehub

// GitHub Apps (SEC-5): an App registers its public key; a JWT signed with
// its private key (RS256, iss = the App's id, exp at most 10 minutes
// ahead) reads the App and the installation of a repository and mints
// installation access tokens, which then work on REST, GraphQL and git
// until they expire, and are refused with GitHub's 401 after.

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AppTokenTTL is how long an installation token lives, as on GitHub.
const AppTokenTTL = time.Hour

// App is a GitHub App registered with the hub, installed on every
// repository under one installation.
type App struct {
	ID           int64
	Slug         string
	Installation int64
	// KeyFile is the private key's PEM file, in the state directory,
	// when the hub made the key (CreateApp).
	KeyFile string
}

// Login is the App's bot in GraphQL; REST says Login()+"[bot]".
func (a App) Login() string { return a.Slug }

type hubApp struct {
	App
	pub *rsa.PublicKey
	bot *user
}

type appTok struct {
	app     *hubApp
	expires time.Time
}

// apps is the hub's App registry; its own lock, since the App endpoints
// and the token lookup run outside h.mu.
type apps struct {
	mu     sync.Mutex
	byID   map[int64]*hubApp
	tokens map[string]*appTok
	clock  time.Duration // added to the wall clock (AdvanceAppClock)
	ttl    time.Duration // 0: AppTokenTTL
	minted int
	nextID int64
}

func (h *Hub) appReg() *apps {
	h.appsOnce.Do(func() {
		h.apps = &apps{byID: map[int64]*hubApp{}, tokens: map[string]*appTok{}, nextID: 900000}
	})
	return h.apps
}

// appNow is the clock JWTs and installation tokens are judged by.
func (h *Hub) appNow() time.Time {
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Now().Add(a.clock)
}

// AdvanceAppClock moves the clock App credentials are judged by: a test
// makes a token expire without waiting an hour.
func (h *Hub) AdvanceAppClock(d time.Duration) {
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clock += d
}

// SetAppTokenTTL sets the life of installation tokens minted from now on
// (0: AppTokenTTL).
func (h *Hub) SetAppTokenTTL(d time.Duration) {
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ttl = d
}

// ExpireAppTokens ends every installation token minted so far, as an
// early expiry or a revocation does: the holders' clocks still call them
// fresh.
func (h *Hub) ExpireAppTokens() {
	now := h.appNow()
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tokens {
		t.expires = now
	}
}

// AppTokensMinted counts the installation tokens minted so far.
func (h *Hub) AppTokensMinted() int {
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.minted
}

// AppTokens are every installation token minted so far, expired ones
// included: a test looks for them where no token may be (SEC-3).
func (h *Hub) AppTokens() []string {
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.tokens))
	for t := range a.tokens {
		out = append(out, t)
	}
	return out
}

// RegisterApp registers an App with pub as its public key.
func (h *Hub) RegisterApp(slug string, pub *rsa.PublicKey) (App, error) {
	if !regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`).MatchString(slug) {
		return App{}, fmt.Errorf("app slug %q: lower-case letters, digits and dashes", slug)
	}
	if pub == nil {
		return App{}, errors.New("app " + slug + ": no public key")
	}
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.byID {
		if x.Slug == slug {
			return App{}, fmt.Errorf("app %s exists", slug)
		}
	}
	a.nextID++
	id := a.nextID
	ha := &hubApp{App: App{ID: id, Slug: slug, Installation: id + 50000}, pub: pub,
		bot: &user{login: slug, restLogin: slug + "[bot]", id: id, typ: "Bot", perm: "write"}}
	a.byID[id] = ha
	return ha.App, nil
}

// CreateApp makes an RSA key, writes its private half to the state
// directory (mode 0600) and registers the App with the public half.
func (h *Hub) CreateApp(slug string) (App, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return App{}, fmt.Errorf("app key: %w", err)
	}
	app, err := h.RegisterApp(slug, &key.PublicKey)
	if err != nil {
		return App{}, err
	}
	dir := filepath.Join(h.opts.StateDir, "apps")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return App{}, fmt.Errorf("app key: %w", err)
	}
	app.KeyFile = filepath.Join(dir, slug+".pem")
	der := x509.MarshalPKCS1PrivateKey(key)
	if err := os.WriteFile(app.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return App{}, fmt.Errorf("app key: %w", err)
	}
	return app, nil
}

// appTokenUser is the App bot an unexpired installation token acts as;
// nil for anything else, an expired token included (a 401, as GitHub
// answers).
func (h *Hub) appTokenUser(tok string) *user {
	if !strings.HasPrefix(tok, "ghs_") {
		return nil
	}
	now := h.appNow()
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tokens[tok]
	if t == nil || !now.Before(t.expires) {
		return nil
	}
	return t.app.bot
}

// isAppBot reports whether u is a registered App's bot, as an
// installation token authenticates it.
func (h *Hub) isAppBot(u *user) bool {
	if u == nil || u.typ != "Bot" {
		return false
	}
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	app := a.byID[u.id]
	return app != nil && app.bot == u
}

var (
	appInstallationPath = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/installation$`)
	appTokensPath       = regexp.MustCompile(`^/api/v3/app/installations/([0-9]+)/access_tokens$`)
)

// serveApp answers the endpoints a JWT authenticates; false for any
// other path.
func (h *Hub) serveApp(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	var mInst, mTok []string
	switch {
	case p == "/api/v3/app" && r.Method == http.MethodGet:
	case r.Method == http.MethodGet && appInstallationPath.MatchString(p):
		mInst = appInstallationPath.FindStringSubmatch(p)
	case r.Method == http.MethodPost && appTokensPath.MatchString(p):
		mTok = appTokensPath.FindStringSubmatch(p)
	default:
		return false
	}
	app, status, msg := h.verifyAppJWT(r)
	var by *user
	if app != nil {
		by = app.bot
	}
	h.mu.Lock()
	h.countLocked("rest", by)
	h.tallyRESTLocked(by, r.Method, false)
	h.mu.Unlock()
	if app == nil {
		writeJSON(w, status, map[string]any{"message": msg, "documentation_url": docURL})
		return true
	}
	appJSON := map[string]any{"id": app.ID, "slug": app.Slug, "node_id": fmt.Sprintf("A_fh%d", app.ID), "name": app.Slug,
		"owner": map[string]any{"login": LoginAuthor, "type": "User"}, "permissions": map[string]any{"checks": "write", "contents": "write", "pull_requests": "write", "issues": "write", "statuses": "write"}}
	instJSON := map[string]any{"id": app.Installation, "app_id": app.ID, "app_slug": app.Slug, "target_type": "User", "repository_selection": "all",
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", h.APIURL(), app.Installation)}
	switch {
	case mInst != nil:
		h.mu.RLock()
		rp := h.repoLocked(mInst[1], mInst[2])
		h.mu.RUnlock()
		if rp == nil {
			writeJSON(w, http.StatusNotFound, notFoundBody())
			return true
		}
		instJSON["account"] = map[string]any{"login": rp.owner}
		writeJSON(w, http.StatusOK, instJSON)
	case mTok != nil:
		id, _ := strconv.ParseInt(mTok[1], 10, 64)
		if id != app.Installation {
			writeJSON(w, http.StatusNotFound, notFoundBody())
			return true
		}
		tok, exp := h.mintAppToken(app)
		writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": exp.UTC().Format(time.RFC3339),
			"permissions": appJSON["permissions"], "repository_selection": "all"})
	default:
		writeJSON(w, http.StatusOK, appJSON)
	}
	return true
}

func (h *Hub) mintAppToken(app *hubApp) (string, time.Time) {
	now := h.appNow()
	a := h.appReg()
	a.mu.Lock()
	defer a.mu.Unlock()
	ttl := a.ttl
	if ttl <= 0 {
		ttl = AppTokenTTL
	}
	tok := randomToken("ghs_")
	exp := now.Add(ttl).Truncate(time.Second)
	a.tokens[tok] = &appTok{app: app, expires: exp}
	a.minted++
	return tok, exp
}

// verifyAppJWT checks the bearer JWT as GitHub does: RS256 by a
// registered App's key, iss its id, iat not in the future, exp in the
// future and at most 10 minutes ahead. The refusals are GitHub's words.
func (h *Hub) verifyAppJWT(r *http.Request) (*hubApp, int, string) {
	const undecodable = "A JSON web token could not be decoded"
	auth := r.Header.Get("Authorization")
	if len(auth) < 7 || !strings.EqualFold(auth[:7], "bearer ") {
		return nil, http.StatusUnauthorized, undecodable
	}
	raw := strings.TrimSpace(auth[7:])
	now := h.appNow()
	var app *hubApp
	tok, err := jwt.Parse(raw, func(t *jwt.Token) (any, error) {
		iss, err := t.Claims.GetIssuer()
		if err != nil {
			return nil, err
		}
		id, err := strconv.ParseInt(iss, 10, 64)
		if err != nil {
			return nil, err
		}
		a := h.appReg()
		a.mu.Lock()
		app = a.byID[id]
		a.mu.Unlock()
		if app == nil {
			return nil, errors.New("no such app")
		}
		return app.pub, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, http.StatusUnauthorized, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return nil, http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	case err != nil || !tok.Valid || app == nil:
		return nil, http.StatusUnauthorized, undecodable
	}
	exp, _ := tok.Claims.GetExpirationTime()
	if exp.Sub(now) > 10*time.Minute {
		return nil, http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future"
	}
	return app, 0, ""
}

// CheckRunState is one check run as tests read it at the hub.
type CheckRunState struct {
	ID         int64
	Name       string
	Status     string
	Conclusion string
	Title      string
	Summary    string
	App        string // the REST login of the App that made it
	AppID      int64
}

// CheckRuns are every check run on sha, oldest first (not only the
// latest per name).
func (h *Hub) CheckRuns(owner, repoName, sha string) ([]CheckRunState, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return nil, fmt.Errorf("no repo %s/%s", owner, repoName)
	}
	var out []CheckRunState
	for _, cr := range rp.checkRuns {
		if cr.sha != sha {
			continue
		}
		s := CheckRunState{ID: cr.id, Name: cr.name, Status: cr.status, Conclusion: cr.conclusion, Title: cr.title, Summary: cr.summary}
		if cr.app != nil {
			s.App, s.AppID = cr.app.restLogin, cr.app.id
		}
		out = append(out, s)
	}
	return out, nil
}

// StatusState is one commit status as tests read it at the hub.
type StatusState struct {
	Context     string
	State       string
	Description string
	Creator     string
}

// Statuses are every commit status on sha, oldest first.
func (h *Hub) Statuses(owner, repoName, sha string) ([]StatusState, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return nil, fmt.Errorf("no repo %s/%s", owner, repoName)
	}
	var out []StatusState
	for _, s := range rp.statuses {
		if s.sha == sha {
			st := StatusState{Context: s.context, State: s.state, Description: s.description}
			if s.creator != nil {
				st.Creator = s.creator.restLogin
			}
			out = append(out, st)
		}
	}
	return out, nil
}
