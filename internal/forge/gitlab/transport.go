package gitlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// The transport keeps the GitHub client's discipline (REL-1, SEC-6) with
// the pieces both share from forgehttp (the host limiter, the credentials
// rule, Retry-After). The retry loop is GitLab's own: GitHub's reads
// GitHub's GraphQL error types and X-Ratelimit headers; GitLab answers
// 429 with Retry-After and RateLimit-Reset.

// DefaultTimeout bounds one HTTP attempt; DefaultMaxWait is the longest
// rate-limit wait sat out in-process; DefaultMaxConcurrent caps requests
// in flight to one host.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMaxWait       = 2 * time.Minute
	DefaultMaxConcurrent = forgehttp.DefaultMaxConcurrent
)

// RetryPolicy bounds retries. Zero fields take the defaults.
type RetryPolicy struct {
	MaxAttempts int           // per request, the first included (default 4)
	BaseDelay   time.Duration // first back-off, doubling (default 1s)
	MaxDelay    time.Duration // cap of one back-off (default 30s)
	MaxWait     time.Duration // longest rate-limit wait sat out (default 2m)
	// Sleep waits d or until ctx is done; tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultMaxWait
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// HostLimiter is REL-1's per-host limiter, the same type the GitHub
// client takes, so one can be shared across a fleet's clients.
type HostLimiter = forgehttp.HostLimiter

// NewHostLimiter caps each host at max requests (DefaultMaxConcurrent
// when max <= 0).
func NewHostLimiter(max int) *HostLimiter { return forgehttp.NewHostLimiter(max) }

type ctxKey int

const (
	keyCounter ctxKey = iota
	keyWrite
)

// withCounter counts every HTTP attempt under ctx (Requests).
func withCounter(ctx context.Context) (context.Context, *atomic.Int64) {
	n := new(atomic.Int64)
	return context.WithValue(ctx, keyCounter, n), n
}

func count(ctx context.Context) {
	if n, ok := ctx.Value(keyCounter).(*atomic.Int64); ok {
		n.Add(1)
	}
}

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

var errAttemptTimeout = errors.New("request timed out")

type attemptTimeoutError struct{ err error }

func (e *attemptTimeoutError) Error() string   { return errAttemptTimeout.Error() }
func (e *attemptTimeoutError) Unwrap() []error { return []error{errAttemptTimeout, e.err} }
func (e *attemptTimeoutError) Timeout() bool   { return true }

// hostLimitedError: the host's rate limit is spent past MaxWait; nothing
// was sent.
type hostLimitedError struct {
	host  string
	until time.Time
}

func (e *hostLimitedError) Error() string {
	return fmt.Sprintf("rate limit of %s spent until %s; not asked again before then", e.host, e.until.UTC().Format(time.RFC3339))
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
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		t.log.Warn("gitlab: retrying", "method", req.Method, "host", req.URL.Host, "path", req.URL.Path, "attempt", attempt, "wait", wait)
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			if err := t.policy.Sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		// A 429's wait is sat out by the next attempt's gate.
	}
}

// judge says whether and after how long to try again.
func (t *retryTransport) judge(resp *http.Response, err error, attempt int, write bool) (time.Duration, bool) {
	var le *hostLimitedError
	switch {
	case errors.As(err, &le):
		return 0, false
	case err != nil:
		if errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errAttemptTimeout)) {
			return 0, false
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return t.policy.backoff(attempt), true // nothing was sent
		}
		return t.policy.backoff(attempt), !write
	case resp.StatusCode == http.StatusTooManyRequests:
		// Refused before it ran: safe to repeat a write too.
		return rateLimitWait(resp.Header, t.policy.Now(), attempt), true
	case resp.StatusCode >= 500 && !write:
		wait := t.policy.backoff(attempt)
		if d, ok := forgehttp.RetryAfter(resp.Header, t.policy.Now()); ok {
			wait = max(wait, d)
		}
		return wait, true
	}
	return 0, false
}

// rateLimitWait follows GitLab's headers: Retry-After, else RateLimit-Reset
// (a Unix time), else a minute, doubling.
func rateLimitWait(h http.Header, now time.Time, attempt int) time.Duration {
	if d, ok := forgehttp.RetryAfter(h, now); ok {
		return d
	}
	if reset, ok := rateReset(h); ok {
		return max(reset.Sub(now), 0) + time.Second
	}
	d := time.Minute
	for i := 1; i < attempt; i++ {
		d *= 2
	}
	return d
}

func rateReset(h http.Header) (time.Time, bool) {
	s, err := strconv.ParseInt(strings.TrimSpace(h.Get("RateLimit-Reset")), 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}, false
	}
	return time.Unix(s, 0), true
}

func (t *retryTransport) attempt(ctx context.Context, req *http.Request, body []byte) (*http.Response, error) {
	if until, _ := t.limits.BlockedUntil(req.URL.Host, t.policy.Now()); !until.IsZero() {
		wait := until.Sub(t.policy.Now())
		if wait > t.policy.MaxWait {
			return nil, &hostLimitedError{host: req.URL.Host, until: until}
		}
		if err := t.policy.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	release, err := t.limits.Acquire(ctx, req.URL.Host)
	if err != nil {
		return nil, err
	}
	actx, cancelCtx := context.WithTimeout(ctx, t.timeout)
	cancel := func() { cancelCtx(); release() }
	r := req.Clone(actx)
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	count(ctx)
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		timedOut := ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			return nil, &attemptTimeoutError{err}
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
