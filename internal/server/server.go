// Package server is converge's server mode: GitHub webhooks verified by
// HMAC SHA-256, and GitLab webhooks by their secret token (GitLab signs
// nothing), deduplicated by delivery id (SEC-4), wake the loop of the PR
// or merge request they concern at once, coalescing bursts (PR-S2); a JSON API
// registers PRs and whole repositories and lists the loops; /metrics
// speaks Prometheus and /healthz answers load balancers. A Budget hands
// out fallback poll permits under a fleet-wide request budget.
//
// The server never acts on what a delivery says beyond choosing which
// loop to wake: the loop observes the forge itself, so a forged or stale
// payload can at worst cost one observation.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// Loops is what the server drives: in `converge serve`, the engine
// manager.
type Loops interface {
	// Wake ends the wait of target's loop early; an unknown target or a
	// loop that is not waiting ignores it. It must not block: wakes are
	// sent one after another.
	Wake(target string)
	// Register starts a loop on the PR whose web URL is target, or
	// resumes its unfinished run; registering a PR twice is no error.
	Register(ctx context.Context, target string) error
	// Snapshot lists the loops the manager holds.
	Snapshot() []RunInfo
}

// RunInfo is one loop as the server sees it.
type RunInfo struct {
	Target string `json:"target"` // the PR's web URL
	Kind   string `json:"kind,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	Phase  string `json:"phase"` // e.g. waiting, fixing, done
	// Head, Branch and Base are the PR's head SHA, head branch and base
	// branch as the loop last observed them, so a check run, status or
	// push naming a commit or a branch wakes the right loop. Left empty
	// (not observed yet), any such event of the repository wakes it.
	Head   string `json:"head,omitempty"`
	Branch string `json:"branch,omitempty"`
	Base   string `json:"base,omitempty"`
}

// Store is the part of the store the server needs.
type Store interface {
	RecordDelivery(ctx context.Context, id, event string) (bool, error)
	PruneDeliveries(ctx context.Context, age time.Duration) (int, error)
	PutRepoWatch(ctx context.Context, w store.RepoWatch) error
	RepoWatches(ctx context.Context) ([]store.RepoWatch, error)
	// Registrations are the PRs registered to be served, by web URL.
	Registrations(ctx context.Context) ([]string, error)
	// LatestRunFor is target's newest run (a *store.NotFoundError when
	// none).
	LatestRunFor(ctx context.Context, target string) (store.Run, error)
}

var _ Store = (*store.Store)(nil)

// Clock is the server's time source; tests inject a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Stats are the fleet's totals since start, read at every scrape.
type Stats struct {
	// AgentCostUSD is the agents' cost as their CLIs reported it, summed
	// over the runs the store holds (a CLI that reports no price adds
	// nothing: AgentRuns and AgentPricedRuns say how much is known).
	AgentCostUSD               float64
	AgentRuns, AgentPricedRuns int
	// Identities are what each identity (a GitHub App's installation,
	// else the token's user) spent on each rate limit, as the forge's
	// answers said it, with the limit as the last answer said it.
	Identities []store.ForgeSpend
}

// Options configure a Server.
type Options struct {
	Loops Loops
	Store Store
	// Secret is the webhook secret: GitHub's HMAC key, GitLab's secret
	// token. With none, every delivery is refused.
	Secret []byte
	// Addr is the address the server is bound to. Off loopback the API
	// and /metrics require Token, and New refuses an empty one.
	Addr string
	// Token is the API's bearer token; when set it is required even on
	// loopback.
	Token string
	// Window is how long events for one PR are gathered into one wake;
	// default DefaultWindow.
	Window time.Duration
	// Discover lists the web URLs of the open PRs a watched repository
	// holds that match its watch; without it POST /api/repos answers 501.
	Discover func(ctx context.Context, w store.RepoWatch) ([]string, error)
	// Forge is the forge Discover lists: POST /api/repos takes a GitHub
	// owner/name, or a GitLab group[/sub...]/project, and refuses a
	// repository of another forge. The zero value is GitHub.
	Forge forge.Kind
	// Stats feeds /metrics; nil reports no forge or agent figures.
	Stats func() Stats
	// Budget, when set, reports its available permits on /metrics.
	Budget *Budget
	Clock  Clock
	Logger *slog.Logger
}

// DefaultWindow gathers a burst (a review's comments, a push's checks)
// into one wake while keeping webhook-to-decision latency low.
const DefaultWindow = 50 * time.Millisecond

// keepDeliveries is how long a delivery id is remembered: GitHub
// redelivers only deliveries of the last three days, and GitLab lists
// (and resends) only those of the last two.
const keepDeliveries = 7 * 24 * time.Hour

// pruneEvery spaces the pruning of old delivery ids.
const pruneEvery = time.Hour

// maxBody is GitHub's cap on a webhook payload.
const maxBody = 25 << 20

// Server serves webhooks, the API, /metrics and /healthz.
type Server struct {
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	wakes    *coalescer
	discover *coalescer
	rearm    *coalescer
	needAuth bool
	metrics  *metrics
	refs     refCache
	runOnce  sync.Once
	// pruneMu guards lastPrune, when delivery ids were last pruned.
	pruneMu   sync.Mutex
	lastPrune time.Time
	ctxMu     sync.Mutex
	runCtx    context.Context
	// pending is news on PRs whose loop was live when it came, by target
	// (deferRearm), read once the loop ends.
	pendMu   sync.Mutex
	pending  map[string]*pendingRearm
	pendKick chan struct{}
}

// New checks opts and makes a Server; Run starts its background work.
func New(opts Options) (*Server, error) {
	if opts.Loops == nil || opts.Store == nil {
		return nil, errors.New("server: Loops and Store are required")
	}
	loopback := IsLoopback(opts.Addr)
	if !loopback && opts.Token == "" {
		return nil, fmt.Errorf("server: %s is not a loopback address, so the API needs a token: set one, or bind to 127.0.0.1", opts.Addr)
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	s := &Server{opts: opts, log: opts.Logger, needAuth: !loopback || opts.Token != "", runCtx: context.Background(), pendKick: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.metrics = newMetrics(s)
	s.wakes = newCoalescer(opts.Clock, opts.Window, func(target string) {
		s.metrics.wakes.Inc()
		opts.Loops.Wake(target)
	})
	s.discover = newCoalescer(opts.Clock, opts.Window, func(repo string) {
		s.discoverRepo(s.ctx(), repo)
	})
	s.rearm = newCoalescer(opts.Clock, opts.Window, func(pr string) {
		s.rearmPR(s.ctx(), pr)
	})
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /webhook", s.serveWebhook)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	s.mux.Handle("GET /metrics", s.auth(s.metrics.handler()))
	s.mux.Handle("POST /api/prs", s.auth(http.HandlerFunc(s.servePostPR)))
	s.mux.Handle("POST /api/repos", s.auth(http.HandlerFunc(s.servePostRepo)))
	s.mux.Handle("GET /api/runs", s.auth(http.HandlerFunc(s.serveRuns)))
	return s, nil
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Run delivers coalesced wakes and repository discoveries until ctx ends.
// It runs once; later calls return at once.
func (s *Server) Run(ctx context.Context) error {
	ran := false
	s.runOnce.Do(func() {
		ran = true
		s.ctxMu.Lock()
		s.runCtx = ctx
		s.ctxMu.Unlock()
		s.prune(ctx, true)
		var wg sync.WaitGroup
		wg.Add(4)
		go func() { defer wg.Done(); s.wakes.run(ctx) }()
		go func() { defer wg.Done(); s.discover.run(ctx) }()
		go func() { defer wg.Done(); s.rearm.run(ctx) }()
		go func() { defer wg.Done(); s.runPending(ctx) }()
		wg.Wait()
	})
	if !ran {
		return errors.New("server: Run called twice")
	}
	return ctx.Err()
}

// prune forgets delivery ids too old to be redelivered, at most once per
// pruneEvery unless forced. It keeps no timer: deliveries drive it.
func (s *Server) prune(ctx context.Context, force bool) {
	now := s.opts.Clock.Now()
	s.pruneMu.Lock()
	due := force || now.Sub(s.lastPrune) >= pruneEvery
	if due {
		s.lastPrune = now
	}
	s.pruneMu.Unlock()
	if !due {
		return
	}
	if _, err := s.opts.Store.PruneDeliveries(ctx, keepDeliveries); err != nil {
		s.log.Warn("prune deliveries", "err", err)
	}
}

func (s *Server) ctx() context.Context {
	s.ctxMu.Lock()
	defer s.ctxMu.Unlock()
	return s.runCtx
}

// Registry is the server's Prometheus registry, for callers that add
// their own collectors.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// IsLoopback reports whether addr (host:port, or a host) binds loopback
// only. An empty host binds every interface, so it is not loopback.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
