package fakehub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FaultKind is one kind of seeded forge fault (REL-1).
type FaultKind string

// The seeded fault kinds, each as GitHub shows it.
const (
	// Fault5xx answers 500, 502 or 503 with GitHub's error body.
	Fault5xx FaultKind = "5xx"
	// FaultReset drops the connection without an answer.
	FaultReset FaultKind = "reset"
	// FaultSlow holds the answer for Faults.Slow, past the client's
	// timeout; the request itself is served at once.
	FaultSlow FaultKind = "slow"
	// FaultPartial is a GraphQL 200 with data and GitHub's own untyped
	// error beside it ("Something went wrong…"); REST requests drawn it
	// get a 502 instead.
	FaultPartial FaultKind = "partial"
	// FaultPrimary is the primary limit spent: REST 403 with
	// x-ratelimit-remaining 0; GraphQL 200 with today's RATE_LIMIT error
	// (code graphql_rate_limit, points left) or, every other draw, the
	// older RATE_LIMITED one (remaining 0); the reset Faults.ResetIn from
	// now; the token stays refused until then.
	FaultPrimary FaultKind = "primary"
	// FaultSecondary is a secondary limit: 403 or 429 with retry-after
	// Faults.RetryAfter; the token stays refused until then.
	FaultSecondary FaultKind = "secondary"
)

// AllFaultKinds lists every kind, in a fixed order.
var AllFaultKinds = []FaultKind{Fault5xx, FaultReset, FaultSlow, FaultPartial, FaultPrimary, FaultSecondary}

// Faults are seeded API faults: each API request by a faulted token
// draws, from Seed and its position among that token's requests, whether
// it fails (with probability Rate) and how. The same seed and the same
// request order meet the same faults. A write may fail after it landed
// (a 5xx or reset drawn "after", a slow answer, a partial error), as on
// GitHub: the client cannot tell, and must not write it again. Git is
// never faulted. The zero value is off.
type Faults struct {
	Seed int64
	Rate float64 // 0..1
	// Kinds drawn from; empty: AllFaultKinds.
	Kinds []FaultKind
	// Logins whose requests are faulted (REST logins, e.g. LoginAuthor);
	// empty: every token's.
	Logins []string
	// Slow is how long a slow answer is held (default 3s).
	Slow time.Duration
	// RetryAfter is a secondary limit's wait, whole seconds (default 1s).
	RetryAfter time.Duration
	// ResetIn is how far ahead a primary limit resets (default 1s).
	ResetIn time.Duration
}

// FaultHit is one fault the hub injected.
type FaultHit struct {
	N      int // the request's position among the faulted token's requests
	Kind   FaultKind
	After  bool // the request was served before the fault hid the answer
	Login  string
	Method string
	Path   string
	Op     string // GraphQL operation, when any
	Write  bool
}

func (f FaultHit) String() string {
	what := f.Method + " " + f.Path
	if f.Op != "" {
		what += " " + f.Op
	}
	when := "before"
	if f.After {
		when = "after"
	}
	return fmt.Sprintf("#%d %s (%s) %s", f.N, f.Kind, when, what)
}

// seededFaults is the hub's fault state.
type seededFaults struct {
	mu     sync.Mutex
	cfg    Faults
	n      map[string]int // requests drawn per login
	closed map[string]limitWindow
	hits   []FaultHit
	// refused counts requests refused in a spent limit's window.
	refused int
}

// limitWindow is a token refused until a time, the way it was refused.
type limitWindow struct {
	until time.Time
	kind  FaultKind
}

// SetFaults turns seeded faults on (or off, with a zero Faults) for every
// later request; the draw count and FaultHits start over.
func (h *Hub) SetFaults(f Faults) {
	sf := h.faultState()
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if len(f.Kinds) == 0 {
		f.Kinds = AllFaultKinds
	}
	if f.Slow <= 0 {
		f.Slow = 3 * time.Second
	}
	if f.RetryAfter <= 0 {
		f.RetryAfter = time.Second
	}
	if f.ResetIn <= 0 {
		f.ResetIn = time.Second
	}
	sf.cfg = f
	sf.n = map[string]int{}
	sf.closed = map[string]limitWindow{}
	sf.hits, sf.refused = nil, 0
}

// FaultRefusals counts the requests refused, undrawn, because a limit
// drawn earlier was still spent.
func (h *Hub) FaultRefusals() int {
	sf := h.faultState()
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.refused
}

// FaultHits lists the faults injected so far, oldest first.
func (h *Hub) FaultHits() []FaultHit {
	sf := h.faultState()
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return slices.Clone(sf.hits)
}

func (h *Hub) faultState() *seededFaults {
	h.seededOnce.Do(func() { h.seeded = &seededFaults{} })
	return h.seeded
}

// apiRequest is what the fault layer knows of a request.
type apiRequest struct {
	login   string
	graphQL bool
	write   bool
	op      string
}

func (h *Hub) describe(r *http.Request) (apiRequest, bool) {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/api/") {
		return apiRequest{}, false
	}
	u := h.authenticate(r)
	if u == nil {
		return apiRequest{}, false
	}
	a := apiRequest{login: u.restLogin}
	if p == "/api/graphql" || p == "/api/graphql/" {
		a.graphQL = true
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req gqlRequest
		if err == nil && json.Unmarshal(body, &req) == nil {
			a.write = isMutation(req.Query)
			a.op = req.OperationName
			if a.write {
				a.op = mutationName(req.Query)
			}
		}
		return a, true
	}
	a.write = r.Method != http.MethodGet && r.Method != http.MethodHead
	return a, true
}

// drawFault decides whether r meets a seeded fault, and records it.
func (h *Hub) drawFault(r *http.Request) (FaultHit, bool) {
	sf := h.faultState()
	sf.mu.Lock()
	on := sf.cfg.Rate > 0
	sf.mu.Unlock()
	if !on {
		return FaultHit{}, false
	}
	a, ok := h.describe(r)
	if !ok {
		return FaultHit{}, false
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	cfg := sf.cfg
	if len(cfg.Logins) > 0 && !slices.ContainsFunc(cfg.Logins, func(l string) bool { return strings.EqualFold(l, a.login) }) {
		return FaultHit{}, false
	}
	hit := FaultHit{Login: a.login, Method: r.Method, Path: r.URL.Path, Op: a.op, Write: a.write}
	// A spent limit refuses every request until it resets, undrawn.
	if w, ok := sf.closed[a.login]; ok {
		if time.Now().Before(w.until) {
			hit.N, hit.Kind = -1, w.kind
			sf.refused++
			return hit, true
		}
		delete(sf.closed, a.login)
	}
	n := sf.n[a.login]
	sf.n[a.login] = n + 1
	// Mixed, not raw: PCG streams of neighbouring seeds start alike, and
	// faults would come in runs.
	rng := rand.New(rand.NewPCG(splitmix(uint64(cfg.Seed)), splitmix(uint64(n)^0x9e3779b97f4a7c15)))
	if rng.Float64() >= cfg.Rate {
		return FaultHit{}, false
	}
	hit.N = n
	hit.Kind = cfg.Kinds[rng.IntN(len(cfg.Kinds))]
	if hit.Kind == FaultPartial && !a.graphQL {
		hit.Kind = Fault5xx
	}
	switch hit.Kind {
	case Fault5xx, FaultReset:
		hit.After = a.write && rng.IntN(2) == 0
	case FaultSlow, FaultPartial:
		hit.After = true
	case FaultPrimary:
		sf.closed[a.login] = limitWindow{until: time.Now().Add(cfg.ResetIn), kind: hit.Kind}
	case FaultSecondary:
		sf.closed[a.login] = limitWindow{until: time.Now().Add(cfg.RetryAfter), kind: hit.Kind}
	}
	sf.hits = append(sf.hits, hit)
	return hit, true
}

// serveFault answers r with the fault drawn; serve is the hub's own
// handling, run first when the fault hides an answer that landed.
func (h *Hub) serveFault(w http.ResponseWriter, r *http.Request, f FaultHit, serve http.HandlerFunc) {
	sf := h.faultState()
	sf.mu.Lock()
	cfg, win := sf.cfg, sf.closed[f.Login]
	sf.mu.Unlock()
	var buf *bufferedAnswer
	if f.After {
		buf = newBufferedAnswer()
		serve(buf, r)
	}
	switch f.Kind {
	case Fault5xx:
		status := []int{500, 502, 503}[uint(f.N)%3]
		writeJSON(w, status, map[string]any{"message": http.StatusText(status), "documentation_url": docURL})
	case FaultReset:
		// net/http drops the connection (or resets the stream) and logs
		// nothing: the client sees a reset, not an answer.
		panic(http.ErrAbortHandler)
	case FaultSlow:
		t := time.NewTimer(cfg.Slow)
		defer t.Stop()
		select {
		case <-t.C:
			buf.copyTo(w)
		case <-r.Context().Done():
		}
	case FaultPartial:
		buf.addGraphQLError()
		buf.copyTo(w)
	case FaultPrimary:
		reset := strconv.FormatInt(int64(math.Ceil(float64(win.until.UnixNano())/1e9)), 10)
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Used", strconv.Itoa(rateLimit))
		w.Header().Set("X-RateLimit-Reset", reset)
		if r.URL.Path == "/api/graphql" || r.URL.Path == "/api/graphql/" {
			w.Header().Set("X-RateLimit-Resource", "graphql")
			if f.N%2 == 0 {
				// GitHub's answer today: type RATE_LIMIT, code
				// graphql_rate_limit, data null, and points left that
				// the query costs more than.
				w.Header().Set("X-RateLimit-Remaining", "12")
				w.Header().Set("X-RateLimit-Used", strconv.Itoa(rateLimit-12))
				writeJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []any{map[string]any{
					"type": "RATE_LIMIT", "code": "graphql_rate_limit", "message": "API rate limit already exceeded for user ID 1."}}})
				return
			}
			// The older answer, which GitHub gave before.
			writeJSON(w, http.StatusOK, map[string]any{"errors": []any{map[string]any{
				"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}}})
			return
		}
		w.Header().Set("X-RateLimit-Resource", "core")
		writeJSON(w, http.StatusForbidden, map[string]any{
			"message":           "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"})
	case FaultSecondary:
		status := http.StatusForbidden
		if f.N%2 == 1 {
			status = http.StatusTooManyRequests
		}
		wait := max(int(time.Until(win.until).Round(time.Second)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		writeJSON(w, status, map[string]any{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
	}
}

// bufferedAnswer is an answer served but not yet sent.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newBufferedAnswer() *bufferedAnswer { return &bufferedAnswer{header: http.Header{}, status: 200} }

func (b *bufferedAnswer) Header() http.Header         { return b.header }
func (b *bufferedAnswer) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedAnswer) WriteHeader(code int)        { b.status = code }

func (b *bufferedAnswer) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

// addGraphQLError puts GitHub's own untyped error beside the data, the
// path naming the first field: data that must not be taken as complete.
func (b *bufferedAnswer) addGraphQLError() {
	var out map[string]any
	if json.Unmarshal(b.body.Bytes(), &out) != nil {
		return
	}
	var path []any
	if d, ok := out["data"].(map[string]any); ok {
		for k := range d {
			if path == nil || k < path[0].(string) {
				path = []any{k}
			}
		}
	}
	e := map[string]any{"message": "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug. Please include `F4K3:S33D` when reporting this issue."}
	if path != nil {
		e["path"] = path
	}
	errs, _ := out["errors"].([]any)
	out["errors"] = append(errs, e)
	b.body.Reset()
	enc := json.NewEncoder(&b.body)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	b.header.Del("Content-Length")
}

// splitmix is SplitMix64's finalizer: neighbouring inputs, unrelated outputs.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
