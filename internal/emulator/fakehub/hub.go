// Package fakehub is a GitHub emulator for tests, the demo and
// `converge sandbox`: REST under /api/v3, GraphQL under /api/graphql (served
// from our own SDL, a checked subset of GitHub's public schema) and git smart
// HTTP over real bare repositories, on loopback, with https by default so the
// real gh CLI and go-github's Enterprise mode talk to it unchanged.
//
// Reviewers are scripted (Copilot) and CI runs a real test command on every
// new head, so a whole review loop can run against it end to end.
package fakehub

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
	graphqlgo "github.com/graph-gophers/graphql-go"
)

// Options configure a Hub.
type Options struct {
	// StateDir holds the bare repositories and ca.pem; a temporary
	// directory (removed by Close) when empty.
	StateDir string
	// Addr to listen on; default 127.0.0.1:0.
	Addr string
	// HTTP serves plain http instead of https.
	HTTP bool
	// CopilotDelay is how long a requested Copilot review takes; default 1s.
	// Negative means immediately.
	CopilotDelay time.Duration
	// CopilotStartDelay is how long Copilot takes to start a requested
	// review (its copilot_work_started event); 0 starts it at once.
	CopilotStartDelay time.Duration
	// CopilotProfile "real" paces Copilot as on github.com: it starts a
	// requested review about RealCopilotStartDelay later and posts it
	// about RealCopilotReviewDelay after that, by the hub's clock
	// (AdvanceClock moves it on). It overrides CopilotDelay and
	// CopilotStartDelay. "" or "fast" keeps them (the demo's pace).
	CopilotProfile string
	// MergeabilityDelay is how long after a push (or a PR's creation)
	// GitHub's background job takes to compute a PR's mergeability, by
	// the hub's clock: until then, or until a read after the first one
	// that found it unknown, the PR reads mergeable null (REST) and
	// UNKNOWN (GraphQL). 0 is DefaultMergeabilityDelay; negative computes
	// it at once, on the first read.
	MergeabilityDelay time.Duration
	// Logger receives request and background-work logs; discarded when nil.
	Logger *slog.Logger
	// ReviewLag turns the lag fault on from the start (see ReviewLag).
	ReviewLag ReviewLag
	// Faults turns seeded API faults on from the start (see Faults).
	Faults Faults
}

// Tokens are the per-hub secrets, one per identity.
type Tokens struct {
	Author   string // octo-author: opens PRs, write access
	Reviewer string // octo-reviewer: a human reviewer with write access
	Outsider string // outsider: read only
	Copilot  string // the Copilot reviewer bot
	CI       string // github-actions[bot]
}

// Logins of the built-in identities.
const (
	LoginAuthor   = "octo-author"
	LoginReviewer = "octo-reviewer"
	LoginOutsider = "outsider"
	// LoginCopilot is Copilot's GraphQL login; REST reviews say
	// LoginCopilotREST, inline comments, events and requested reviewers say
	// LoginCopilotShort (PR-O2).
	LoginCopilot      = "copilot-pull-request-reviewer"
	LoginCopilotREST  = "copilot-pull-request-reviewer[bot]"
	LoginCopilotShort = "Copilot"
	// LoginCI is the CI app's GraphQL login; REST says LoginCIREST.
	LoginCI     = "github-actions"
	LoginCIREST = "github-actions[bot]"
)

// Hub is one running emulator.
type Hub struct {
	// Server is the hub as a server: state directory, CA, listener and
	// background work (Host, URL, CAFile, HTTPClient, Connections, ...).
	*fakegit.Server
	opts   Options
	wlog   writeLog
	log    *slog.Logger
	tokens Tokens

	schema *graphqlgo.Schema

	// mu guards the model. A GraphQL query holds it for reading for its
	// whole execution so it reads one snapshot; a mutation holds it for
	// writing. Resolvers therefore never lock it themselves.
	mu      sync.RWMutex
	users   map[string]*user // by token
	byLogin map[string]*user // by any login variant, lower-case
	repos   map[string]*repo // "owner/name"
	nodes   map[string]any   // node id -> object
	nextID  int64
	subs    map[int]chan Event
	nextSub int
	faults  []*fault
	// outageUntil: every API request answers 503 until then (Outage).
	outageUntil time.Time
	lag         ReviewLag
	seeded      *seededFaults // faults.go
	seededOnce  sync.Once
	counts      RequestCounts
	tally       tally                  // by kind and points (counts.go)
	rate        map[string]*rateWindow // by login

	git    gitCache
	closed bool // no new background work once set

	rest     *http.ServeMux
	restOnce sync.Once

	hooks webhooks // the configured webhook and its deliveries (webhooks.go)

	apps     *apps // GitHub Apps (app.go)
	appsOnce sync.Once

	clock hubClock

	// lazyMu guards every PR's lazy mergeability (pr.lazy), which reads
	// advance under h.mu's read lock.
	lazyMu sync.Mutex
}

// New prepares a hub: state directory, CA and tokens. Start serves it.
func New(opts Options) (*Hub, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.CopilotDelay == 0 {
		opts.CopilotDelay = time.Second
	}
	switch opts.CopilotProfile {
	case "", CopilotProfileFast:
	case CopilotProfileReal:
		opts.CopilotStartDelay, opts.CopilotDelay = RealCopilotStartDelay, RealCopilotReviewDelay
	default:
		return nil, fmt.Errorf("copilot profile %q: want %s or %s", opts.CopilotProfile, CopilotProfileFast, CopilotProfileReal)
	}
	if opts.MergeabilityDelay == 0 {
		opts.MergeabilityDelay = DefaultMergeabilityDelay
	}
	h := &Hub{
		opts:    opts,
		log:     opts.Logger,
		users:   map[string]*user{},
		byLogin: map[string]*user{},
		repos:   map[string]*repo{},
		nodes:   map[string]any{},
		subs:    map[int]chan Event{},
		rate:    map[string]*rateWindow{},
		nextID:  1000,
		lag:     opts.ReviewLag,
	}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := fakegit.NewServer("fakehub", h.opts.StateDir, opts.HTTP)
	if err != nil {
		return nil, err
	}
	h.Server, h.opts.StateDir = srv, srv.StateDir()
	h.makeUsers()
	s, err := graphqlgo.ParseSchema(schemaSDL, &rootResolver{h: h}, graphqlgo.MaxParallelism(1))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	h.schema = s
	if opts.Faults.Rate > 0 {
		h.SetFaults(opts.Faults)
	}
	return h, nil
}

// Start listens and serves until Close (or ctx ends).
func (h *Hub) Start(ctx context.Context) error {
	return h.Listen(ctx, h.opts.Addr, h, h.log)
}

// Close stops serving, cancels background work (Copilot, CI) and waits for
// it; a temporary state directory is removed.
func (h *Hub) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.Stop()
	h.mu.Lock()
	for id, ch := range h.subs {
		close(ch)
		delete(h.subs, id)
	}
	h.mu.Unlock()
	return h.RemoveState()
}

// BaseURL is scheme://host.
func (h *Hub) BaseURL() string { return h.URL() }

// APIURL is the REST base, Enterprise style.
func (h *Hub) APIURL() string { return h.BaseURL() + "/api/v3" }

// GraphQLURL is the GraphQL endpoint, Enterprise style.
func (h *Hub) GraphQLURL() string { return h.BaseURL() + "/api/graphql" }

// GitURL is the smart-HTTP clone URL of a repository.
func (h *Hub) GitURL(owner, repo string) string {
	return fmt.Sprintf("%s/%s/%s.git", h.BaseURL(), owner, repo)
}

// PRURL is a pull request's web URL.
func (h *Hub) PRURL(owner, repo string, number int) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", h.BaseURL(), owner, repo, number)
}

// Tokens returns the identities' tokens.
func (h *Hub) Tokens() Tokens { return h.tokens }

// GitEnv is the environment git needs to talk to the hub with token: the CA
// and an Authorization header passed as config through the environment, as
// converge does (IF-2), so nothing lands on disk.
func (h *Hub) GitEnv(token string) []string {
	env := h.Server.GitEnv()
	if token != "" {
		env = append(env, "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: Bearer "+token)
	}
	return env
}

// ServeHTTP routes the three surfaces: REST, GraphQL and git.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: 200}
	defer func() {
		h.log.Debug("fakehub request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "dur", time.Since(start))
	}()
	// GitHub dates every answer by its own clock, the one its timestamps
	// use; net/http would date it by the wall clock.
	w.Header().Set("Date", h.now().Format(http.TimeFormat))
	p := r.URL.Path
	if h.inOutage() && strings.HasPrefix(p, "/api/") {
		writeJSON(rec, http.StatusServiceUnavailable, map[string]any{"message": "Service Unavailable", "documentation_url": docURL})
		return
	}
	if f := h.takeFault(p); f != nil {
		writeJSON(rec, f.status, map[string]any{"message": http.StatusText(f.status), "documentation_url": docURL})
		return
	}
	if f, ok := h.drawFault(r); ok {
		h.serveFault(rec, r, f, h.route)
		return
	}
	h.route(rec, r)
}

// route serves one request by its surface.
func (h *Hub) route(rec http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/api/graphql" || p == "/api/graphql/":
		h.serveGraphQL(rec, r)
	case strings.HasPrefix(p, "/api/v3"):
		h.serveREST(rec, r)
	case strings.Contains(p, ".git/") || strings.HasSuffix(p, ".git"):
		h.serveGit(rec, r)
	default:
		h.serveWeb(rec, r)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush lets git's streamed responses through.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// serveWeb answers the PR web URL with a minimal page so links resolve.
func (h *Hub) serveWeb(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) >= 4 && parts[2] == "pull" {
		h.mu.RLock()
		rp := h.repos[parts[0]+"/"+parts[1]]
		var title string
		if rp != nil {
			for _, pr := range rp.prs {
				if fmt.Sprint(pr.number) == parts[3] {
					title = pr.title
				}
			}
		}
		h.mu.RUnlock()
		if title != "" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1>\n", htmlEscape(title), htmlEscape(title))
			return
		}
	}
	writeJSON(w, http.StatusNotFound, notFoundBody())
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

// Event is one change in the hub, for subscribers that want to wake early
// instead of polling.
type Event struct {
	Kind   string // push, pr_opened, edited, review, comment, thread_resolved, thread_unresolved, check, status, label, state, review_requested, copilot_started, copilot_finished
	Owner  string
	Repo   string
	Number int    // 0 when not tied to a PR
	SHA    string // the commit involved, when any
	Actor  string
	Detail string // e.g. the check conclusion or the label name
	At     time.Time
}

// Subscribe delivers every later Event until cancel. Slow subscribers lose
// events (the channel is buffered) rather than stall the hub.
func (h *Hub) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 256)
	h.mu.Lock()
	id := h.nextSub
	h.nextSub++
	h.subs[id] = ch
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			if c, ok := h.subs[id]; ok {
				delete(h.subs, id)
				close(c)
			}
			h.mu.Unlock()
		})
	}
}

// publishLocked sends ev to subscribers; h.mu must be held.
func (h *Hub) publishLocked(ev Event) {
	if ev.At.IsZero() {
		ev.At = h.now()
	}
	for _, ch := range h.subs {
		select {
		case ch <- ev:
		default:
		}
	}
	h.hookLocked(ev)
}

// now is the hub's clock, by GitHub's granularity: every timestamp it
// writes and every answer's Date.
func (h *Hub) now() time.Time {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	t := time.Now().Add(h.clock.shift)
	if !h.clock.frozen.IsZero() {
		t = h.clock.frozen
	}
	return t.UTC().Truncate(time.Second)
}

// hubClock moves the hub's clock for tests (AdvanceClock, FreezeClock).
type hubClock struct {
	mu     sync.Mutex
	shift  time.Duration
	frozen time.Time
	// moved is closed (and replaced) when AdvanceClock moves the clock,
	// waking what waits on it (sleepClock).
	moved chan struct{}
}

// AdvanceClock moves the hub's clock forward by d: a test lets time pass
// (as it does between the polls of an idle PR) without waiting for it.
func (h *Hub) AdvanceClock(d time.Duration) {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	if h.clock.moved != nil {
		close(h.clock.moved)
		h.clock.moved = nil
	}
	if !h.clock.frozen.IsZero() {
		h.clock.frozen = h.clock.frozen.Add(d)
		return
	}
	h.clock.shift += d
}

// FreezeClock stops the hub's clock where it is until AdvanceClock moves
// it: every change from now on falls within one second, as GitHub's
// second-granular timestamps see changes made fast enough.
func (h *Hub) FreezeClock() {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	if h.clock.frozen.IsZero() {
		h.clock.frozen = time.Now().Add(h.clock.shift)
	}
}

// newIDLocked hands out increasing database ids shared by all objects, as
// GitHub's are increasing per kind.
func (h *Hub) newIDLocked() int64 {
	h.nextID++
	return h.nextID
}

type fault struct {
	prefix string
	// field, when set, limits a GraphQL fault to requests naming it as
	// their operation or selecting it as a field.
	field  string
	status int
	count  int
}

// InjectFault makes the next count requests whose path starts with
// pathPrefix (e.g. "/api/graphql", "/api/v3/repos/o/r/issues") fail with
// status and a GitHub-style body.
func (h *Hub) InjectFault(pathPrefix string, status, count int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, &fault{prefix: pathPrefix, status: status, count: count})
}

// InjectGraphQLFault makes the next count GraphQL requests that select
// field (e.g. "requestReviewsByLogin") or are the operation named field
// fail, before anything executes. A 5xx status answers as GitHub's front
// end does; status 200 answers as GitHub does when a query blew up inside:
// no data and one untyped "Something went wrong" error.
func (h *Hub) InjectGraphQLFault(field string, status, count int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, &fault{prefix: "/api/graphql", field: field, status: status, count: count})
}

// Outage makes every API request answer 503 for d from now, as GitHub
// does in an incident; git keeps serving. A zero d ends it.
func (h *Hub) Outage(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outageUntil = time.Now().Add(d)
}

func (h *Hub) inOutage() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return time.Now().Before(h.outageUntil)
}

func (h *Hub) takeFault(path string) *fault {
	return h.takeFaultMatching(func(f *fault) bool { return f.field == "" && strings.HasPrefix(path, f.prefix) })
}

// takeGraphQLFault finds a field-targeted fault for one GraphQL request.
func (h *Hub) takeGraphQLFault(req gqlRequest) *fault {
	return h.takeFaultMatching(func(f *fault) bool {
		return f.field != "" && (req.OperationName == f.field || selectsField(req.Query, f.field))
	})
}

func (h *Hub) takeFaultMatching(match func(*fault) bool) *fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, f := range h.faults {
		if match(f) {
			f.count--
			if f.count <= 0 {
				h.faults = append(h.faults[:i], h.faults[i+1:]...)
			}
			return f
		}
	}
	return nil
}

// RequestCounts counts API requests so tests and benchmarks can hold
// converge to a request budget.
type RequestCounts struct {
	REST        int            // REST requests answered (including 304s)
	NotModified int            // of which 304 Not Modified
	GraphQL     int            // GraphQL requests
	Git         int            // git smart-HTTP requests
	ByLogin     map[string]int // REST+GraphQL by the token's login
}

// Total is REST + GraphQL.
func (c RequestCounts) Total() int { return c.REST + c.GraphQL }

// RequestCount returns a copy of the counters.
func (h *Hub) RequestCount() RequestCounts {
	h.mu.RLock()
	defer h.mu.RUnlock()
	c := h.counts
	c.ByLogin = map[string]int{}
	for k, v := range h.counts.ByLogin {
		c.ByLogin[k] = v
	}
	return c
}

// ResetRequestCounts zeroes the counters.
func (h *Hub) ResetRequestCounts() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts = RequestCounts{}
	h.tally = tally{}
}

func (h *Hub) countLocked(kind string, u *user) {
	if h.counts.ByLogin == nil {
		h.counts.ByLogin = map[string]int{}
	}
	switch kind {
	case "rest":
		h.counts.REST++
	case "304":
		h.counts.REST++
		h.counts.NotModified++
	case "graphql":
		h.counts.GraphQL++
	case "git":
		h.counts.Git++
		return
	}
	if u != nil {
		h.counts.ByLogin[u.login]++
	}
}

// rateWindow is a token's primary rate-limit hour.
type rateWindow struct {
	reset       time.Time
	used        int
	graphqlUsed int
}

const rateLimit = 5000

func (h *Hub) rateLocked(u *user) *rateWindow {
	rw := h.rate[u.login]
	if rw == nil || time.Now().After(rw.reset) {
		rw = &rateWindow{reset: time.Now().Add(time.Hour).Truncate(time.Second)}
		h.rate[u.login] = rw
	}
	return rw
}
