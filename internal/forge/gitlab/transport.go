package gitlab

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// The transport keeps the GitHub client's discipline (REL-1, SEC-6) with
// what both share from forgehttp (the host limiter, the retry policy, an
// attempt, the faults a retry mends, the credentials rule, Retry-After).
// What a refusal is stays GitLab's own: a 429 with Retry-After and
// RateLimit-Reset (GitHub's are its GraphQL error types and X-Ratelimit
// headers).

// DefaultTimeout bounds one HTTP attempt; DefaultMaxWait is the longest
// rate-limit wait sat out in-process; DefaultMaxConcurrent caps requests
// in flight to one host.
const (
	DefaultTimeout       = forgehttp.DefaultTimeout
	DefaultMaxWait       = 2 * time.Minute
	DefaultMaxConcurrent = forgehttp.DefaultMaxConcurrent
)

// RetryPolicy bounds retries (forgehttp.RetryPolicy, the GitHub
// client's too). Zero fields take the defaults.
type RetryPolicy = forgehttp.RetryPolicy

// HostLimiter is REL-1's per-host limiter, the same type the GitHub
// client takes, so one can be shared across a fleet's clients.
type HostLimiter = forgehttp.HostLimiter

// NewHostLimiter caps each host at max requests (DefaultMaxConcurrent
// when max <= 0).
func NewHostLimiter(max int) *HostLimiter { return forgehttp.NewHostLimiter(max) }

type ctxKey int

const keyWrite ctxKey = iota

// asWrite marks a POST that is a write even to the GraphQL endpoint; a
// GraphQL POST not so marked is a query, a read.
func asWrite(ctx context.Context) context.Context { return context.WithValue(ctx, keyWrite, true) }

func isWrite(req *http.Request) bool {
	if w, ok := req.Context().Value(keyWrite).(bool); ok {
		return w
	}
	return req.Method != http.MethodGet && req.Method != http.MethodHead
}

// authTransport attaches the token only to the API's origins (SEC-6): a
// redirect or a hand-built request elsewhere goes out bare.
type authTransport struct {
	next    http.RoundTripper
	token   string
	allowed []*url.URL
	graphql *url.URL
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Del("PRIVATE-TOKEN")
	r.Header.Del("Authorization")
	if t.token != "" && forgehttp.CredentialsAllowed(req.URL, t.allowed) {
		if t.graphql != nil && req.URL.Path == t.graphql.Path && forgehttp.SameOrigin(req.URL, t.graphql) {
			r.Header.Set("Authorization", "Bearer "+t.token)
		} else {
			r.Header.Set("PRIVATE-TOKEN", t.token)
		}
	}
	return t.next.RoundTrip(r)
}

// retryTransport is REL-1: reads are retried on 5xx, 429, timeouts and
// network errors; a write only when it provably did not land (no
// connection made, or a 429 refusal).
type retryTransport struct {
	next    http.RoundTripper
	policy  RetryPolicy
	timeout time.Duration
	limits  *HostLimiter
	log     *slog.Logger
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	write := isWrite(req)
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	for attempt := 1; ; attempt++ {
		resp, err := t.attempt(ctx, req, body)
		t.charge(ctx, resp) // what it cost, as GitLab said (spend.go)
		wait, retry := t.judge(resp, err, attempt, write)
		if !retry || attempt >= t.policy.MaxAttempts {
			return resp, err
		}
		if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
			t.limits.Block(req.URL.Host, t.policy.Now().Add(wait), "rate limited (429)")
			if wait > t.policy.MaxWait {
				return resp, nil
			}
		}
		forgehttp.Drain(resp)
		t.log.Warn("gitlab: retrying", "method", req.Method, "host", req.URL.Host, "path", req.URL.Path, "attempt", attempt, "wait", wait)
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			if err := t.policy.Sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		// A 429's wait is sat out by the next attempt's gate.
	}
}

// judge says whether and after how long to try again: a 429 was refused
// before it ran, so a write is repeated too; any other fault as every
// forge's (forgehttp.FaultRetry).
func (t *retryTransport) judge(resp *http.Response, err error, attempt int, write bool) (time.Duration, bool) {
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		return rateLimitWait(resp.Header, t.policy.Now(), attempt), true
	}
	wait, retry, _ := forgehttp.FaultRetry(t.policy, resp, err, attempt, !write)
	return wait, retry
}

// rateLimitWait follows GitLab's headers: Retry-After, else RateLimit-Reset
// (a Unix time), else a minute, doubling.
func rateLimitWait(h http.Header, now time.Time, attempt int) time.Duration {
	reset, _ := rateReset(h)
	return forgehttp.LimitWait(h, now, reset, attempt)
}

func rateReset(h http.Header) (time.Time, bool) {
	s, err := strconv.ParseInt(strings.TrimSpace(h.Get("RateLimit-Reset")), 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}, false
	}
	return time.Unix(s, 0), true
}

func (t *retryTransport) attempt(ctx context.Context, req *http.Request, body []byte) (*http.Response, error) {
	return forgehttp.Attempt(ctx, t.next, req, body, t.timeout, t.limits, t.policy, nil)
}
