package fakelab

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"
)

// FaultKind is one kind of seeded API fault (REL-1), as GitLab shows it.
type FaultKind string

const (
	// Fault5xx answers 500, 502 or 503 with GitLab's error body.
	Fault5xx FaultKind = "5xx"
	// FaultReset drops the connection without an answer.
	FaultReset FaultKind = "reset"
	// FaultSlow holds the answer for Faults.Slow; the request itself is
	// served at once.
	FaultSlow FaultKind = "slow"
	// FaultRateLimit is GitLab's 429 with Retry-After and RateLimit-Reset
	// Faults.RetryAfter ahead; the token stays refused until then.
	FaultRateLimit FaultKind = "ratelimit"
)

// AllFaultKinds lists every kind, in a fixed order.
var AllFaultKinds = []FaultKind{Fault5xx, FaultReset, FaultSlow, FaultRateLimit}

// Faults are seeded API faults: each API request by a faulted token draws,
// from Seed and its position among that token's requests, whether it
// fails (with probability Rate) and how. A write may fail after it landed
// (a 5xx or reset drawn "after", a slow answer): the client cannot tell.
// Git is never faulted. The zero value is off.
type Faults struct {
	Seed int64
	Rate float64
	// Kinds drawn from; empty: AllFaultKinds.
	Kinds []FaultKind
	// Usernames whose requests are faulted; empty: every token's.
	Usernames []string
	// Slow is how long a slow answer is held (default 3s).
	Slow time.Duration
	// RetryAfter is a rate limit's wait (default 1s).
	RetryAfter time.Duration
}

// FaultHit is one fault the lab injected.
type FaultHit struct {
	N        int
	Kind     FaultKind
	After    bool
	Username string
	Method   string
	Path     string
}

func (f FaultHit) String() string {
	when := "before"
	if f.After {
		when = "after"
	}
	return fmt.Sprintf("#%d %s (%s) %s %s", f.N, f.Kind, when, f.Method, f.Path)
}

type injected struct {
	prefix string
	status int
	count  int
}

type faultState struct {
	cfg      Faults
	n        map[string]int
	limited  map[string]time.Time
	hits     []FaultHit
	injected []*injected
	outage   time.Time
}

// RequestCounts counts requests so tests can hold a client to a budget.
type RequestCounts struct {
	REST, GraphQL, Git int
}

// RequestCount returns the counters.
func (l *Lab) RequestCount() RequestCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts
}

// SetFaults turns seeded faults on (or off, with a zero Faults); the draw
// count and FaultHits start over.
func (l *Lab) SetFaults(f Faults) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(f.Kinds) == 0 {
		f.Kinds = AllFaultKinds
	}
	if f.Slow <= 0 {
		f.Slow = 3 * time.Second
	}
	if f.RetryAfter <= 0 {
		f.RetryAfter = time.Second
	}
	l.faults.cfg, l.faults.n, l.faults.limited, l.faults.hits = f, map[string]int{}, map[string]time.Time{}, nil
}

// FaultHits lists the seeded faults injected so far, oldest first.
func (l *Lab) FaultHits() []FaultHit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.faults.hits)
}

// InjectFault makes the next count API requests whose path starts with
// pathPrefix (e.g. "/api/graphql", "/api/v4/projects/1/merge_requests")
// fail with status and GitLab's error body.
func (l *Lab) InjectFault(pathPrefix string, status, count int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults.injected = append(l.faults.injected, &injected{prefix: pathPrefix, status: status, count: count})
}

// Outage makes every API request answer 503 for d from now; git keeps
// serving. A zero d ends it.
func (l *Lab) Outage(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults.outage = time.Now().Add(d)
}

// SetDiscussionLag is the lag fault: a discussion written from now on is
// left out of the next k reads of its MR's discussions and notes (REST
// lists), as GitLab's eventually consistent reads may; 0 turns it off.
func (l *Lab) SetDiscussionLag(k int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lagReads = max(k, 0)
}

// fault answers r with a fault when one applies, and says so.
func (l *Lab) fault(w http.ResponseWriter, r *http.Request) bool {
	l.mu.Lock()
	fs := &l.faults
	if time.Now().Before(fs.outage) {
		l.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, msg("503 Service Unavailable"))
		return true
	}
	for i, f := range fs.injected {
		if strings.HasPrefix(r.URL.Path, f.prefix) {
			f.count--
			if f.count <= 0 {
				fs.injected = append(fs.injected[:i], fs.injected[i+1:]...)
			}
			l.mu.Unlock()
			writeJSON(w, f.status, msg(fmt.Sprintf("%d %s", f.status, http.StatusText(f.status))))
			return true
		}
	}
	u := l.authenticate(r)
	cfg := fs.cfg
	if cfg.Rate <= 0 || u == nil || len(cfg.Usernames) > 0 && !slices.Contains(cfg.Usernames, u.username) {
		l.mu.Unlock()
		return false
	}
	if until, ok := fs.limited[u.username]; ok && time.Now().Before(until) {
		l.mu.Unlock()
		rateLimited(w, until)
		return true
	}
	fs.n[u.username]++
	n := fs.n[u.username]
	h := fnv.New64a()
	h.Write([]byte(u.username))
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), h.Sum64()^uint64(n)))
	if rng.Float64() >= cfg.Rate {
		l.mu.Unlock()
		return false
	}
	kind := cfg.Kinds[rng.IntN(len(cfg.Kinds))]
	after := rng.IntN(2) == 0
	status := []int{500, 502, 503}[rng.IntN(3)]
	hit := FaultHit{N: n, Kind: kind, Username: u.username, Method: r.Method, Path: r.URL.Path}
	switch kind {
	case FaultRateLimit:
		until := time.Now().Add(cfg.RetryAfter)
		fs.limited[u.username] = until
		fs.hits = append(fs.hits, hit)
		l.mu.Unlock()
		rateLimited(w, until)
		return true
	case FaultSlow:
		hit.After = true
	default:
		hit.After = after
	}
	fs.hits = append(fs.hits, hit)
	l.mu.Unlock()
	if hit.After {
		// Serve the request, then hide (or delay) its answer.
		rec := &discard{header: http.Header{}}
		l.ServeHTTPUnfaulted(rec, r)
		if kind == FaultSlow {
			select {
			case <-time.After(cfg.Slow):
			case <-r.Context().Done():
				return true
			}
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.status)
			_, _ = w.Write(rec.body)
			return true
		}
	}
	if kind == FaultReset {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return true
			}
		}
	}
	writeJSON(w, status, msg(fmt.Sprintf("%d %s", status, http.StatusText(status))))
	return true
}

func rateLimited(w http.ResponseWriter, until time.Time) {
	secs := max(int(time.Until(until).Seconds()+0.999), 1)
	w.Header().Set("Retry-After", itoa(secs))
	w.Header().Set("RateLimit-Reset", itoa(int(until.Unix())))
	w.Header().Set("RateLimit-Remaining", "0")
	writeJSON(w, http.StatusTooManyRequests, msg("429 Too Many Requests"))
}

type discard struct {
	header http.Header
	status int
	body   []byte
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) WriteHeader(s int)   { d.status = s }
func (d *discard) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = 200
	}
	d.body = append(d.body, b...)
	return len(b), nil
}
