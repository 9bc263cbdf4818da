// Package dashboard serves a web view of the state store (UX-2): the runs,
// each run's rounds as a timeline chart, its threads, decision log and
// proof, kept live with server-sent events. Its page and script are
// embedded in the binary (no CDN, no build step) and render every stored
// value as text, never as markup: PR titles and finding bodies are
// written by others.
//
// It binds to loopback by default; off loopback it requires a token
// (SEC-4), as a bearer header or, for a browser, ?token=.
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
)

// Source is what the dashboard reads: *store.Store, or anything that
// answers the same reads.
type Source interface {
	ListRuns(ctx context.Context, o store.ListOptions) ([]store.Run, error)
	GetRun(ctx context.Context, id string) (store.Run, error)
	Rounds(ctx context.Context, runID string) ([]store.Round, error)
	Findings(ctx context.Context, runID string) ([]store.Finding, error)
	Events(ctx context.Context, runID string) ([]store.Event, error)
	Actions(ctx context.Context, runID string) ([]store.Action, error)
}

var _ Source = (*store.Store)(nil)

// Options configure a Handler.
type Options struct {
	// Addr is the address the handler is served on: off loopback, Token
	// is required (New refuses an empty one).
	Addr string
	// Token, when set, is required on every request, loopback or not.
	Token string
	// Poll is how often a live page's stream reads the store for a
	// change; default DefaultPoll.
	Poll time.Duration
}

// DefaultPoll keeps a live page within half a second of the store.
const DefaultPoll = 500 * time.Millisecond

// keepAlive spaces the comments that keep an idle stream open through
// proxies.
const keepAlive = 15 * time.Second

//go:embed assets
var assetFS embed.FS

// Handler serves the dashboard. Close ends its live streams, so that an
// http.Server's Shutdown does not wait on them.
type Handler struct {
	src      Source
	opts     Options
	needAuth bool
	mux      *http.ServeMux
	done     chan struct{}
	once     sync.Once
}

// New checks opts and makes a Handler over src.
func New(src Source, opts Options) (*Handler, error) {
	if src == nil {
		return nil, errors.New("dashboard: no store")
	}
	loopback := server.IsLoopback(opts.Addr)
	if !loopback && opts.Token == "" {
		return nil, fmt.Errorf("dashboard: %s is not a loopback address, so the dashboard needs a token: set one, or bind to 127.0.0.1", opts.Addr)
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	h := &Handler{src: src, opts: opts, needAuth: !loopback || opts.Token != "", done: make(chan struct{})}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, fmt.Errorf("dashboard assets: %w", err)
	}
	files := http.FileServerFS(sub)
	h.mux = http.NewServeMux()
	// The page, its script and style hold no data: they are served
	// without the token, since a browser asks for them without the
	// page's ?token=; the script then carries it to every data request.
	h.mux.Handle("GET /{$}", files)
	h.mux.Handle("GET /app.js", files)
	h.mux.Handle("GET /style.css", files)
	h.mux.Handle("GET /favicon.svg", files)
	h.mux.Handle("GET /api/runs", h.auth(h.serveRuns))
	h.mux.Handle("GET /api/runs/{id}", h.auth(h.serveRun))
	h.mux.Handle("GET /api/stream", h.auth(h.serveStream))
	return h, nil
}

// auth lets a data request through only when authorized.
func (h *Handler) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.authorized(w, r) {
			next(w, r)
		}
	})
}

// Close ends the live streams; the handler still answers other requests.
func (h *Handler) Close() { h.once.Do(func() { close(h.done) }) }

// ServeHTTP routes; the data endpoints check the token or the loopback
// host (auth).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// The page builds its DOM from text nodes only; the policy makes an
	// injected script or style inert even if that ever slipped.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	// A ?token= in the address must not leak to the links' targets.
	hd.Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

// authorized applies SEC-4 as `converge serve`'s API does: with a token
// (required off loopback) the request must carry it, as
// "Authorization: Bearer T" or, since a browser's address bar and
// EventSource cannot set headers, ?token=T; both are compared in constant
// time. Without one, on loopback, a request naming the server by a
// non-loopback host is refused (DNS rebinding).
func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	if !h.needAuth {
		if !server.IsLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("host %q: address the dashboard by 127.0.0.1, ::1 or localhost", r.Host), http.StatusForbidden)
			return false
		}
		return true
	}
	want := []byte(h.opts.Token)
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got = r.URL.Query().Get("token")
	}
	if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="converge"`)
		http.Error(w, "missing or wrong token: open the dashboard with ?token=TOKEN or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
		return false
	}
	return true
}

func (h *Handler) serveRuns(w http.ResponseWriter, r *http.Request) {
	runs, err := listRuns(r.Context(), h.src)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, runs)
}

func (h *Handler) serveRun(w http.ResponseWriter, r *http.Request) {
	d, err := runDetail(r.Context(), h.src, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, d)
}

// serveStream sends a "change" event whenever what the page shows
// changed in the store: the run list, and with ?run=ID that run's
// rounds, findings, events and actions. It polls the store, so changes
// by other processes (a converge pr writing the same file) show too. The
// first event goes out at once: the page re-reads then, so nothing that
// changed between its first read and the stream's start is missed.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	run := r.URL.Query().Get("run")
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	ctx := r.Context()
	tick := time.NewTicker(h.opts.Poll)
	defer tick.Stop()
	last, idle := "", time.Now()
	for {
		v, err := version(ctx, h.src, run)
		switch {
		case err != nil && ctx.Err() == nil:
			// Said once per failing poll as an event the page shows; the
			// stream stays up for the store to come back.
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			fmt.Fprintf(w, "event: failure\ndata: %s\n\n", b)
			fl.Flush()
		case err == nil && v != last:
			last, idle = v, time.Now()
			b, _ := json.Marshal(map[string]string{"version": v})
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", b)
			fl.Flush()
		case time.Since(idle) > keepAlive:
			idle = time.Now()
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
		select {
		case <-ctx.Done():
			return
		case <-h.done:
			return
		case <-tick.C:
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// encoding/json escapes <, > and & too: the JSON is inert even if a
	// browser were talked into reading it as HTML.
	_ = json.NewEncoder(w).Encode(v)
}
