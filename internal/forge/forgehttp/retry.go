package forgehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// REL-1's retry discipline, the part every forge's retry transport shares:
// the policy and its back-off, one attempt held to the host's limit and
// its own time-box, and which transport faults a retry can mend. What a
// refusal looks like stays each forge's (GitHub's GraphQL errors and
// X-Ratelimit headers, GitLab's RateLimit headers).

// Defaults of a RetryPolicy.
const (
	DefaultAttempts = 4
	DefaultBackoff  = time.Second      // the first retry's wait
	DefaultMaxDelay = 30 * time.Second // the cap of one back-off step
	DefaultMaxWait  = 2 * time.Minute  // the longest rate-limit wait sat out in-process
)

// RetryPolicy bounds REL-1's retries. Zero fields take the defaults.
type RetryPolicy struct {
	// MaxAttempts per request, the first included (default 4).
	MaxAttempts int
	// BaseDelay is the first back-off; each retry doubles it (default 1s).
	BaseDelay time.Duration
	// MaxDelay caps one back-off step (default 30s).
	MaxDelay time.Duration
	// MaxWait is the longest rate-limit wait sat out in-process (default
	// 2m); a longer one ends the call as rate limited, so the engine, not
	// a blocked goroutine, owns the wait.
	MaxWait time.Duration
	// Sleep waits d or until ctx is done; tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock rate-limit resets are read against.
	Now func() time.Time
}

// WithDefaults is p with its zero fields set to the defaults.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBackoff
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultMaxWait
	}
	if p.Sleep == nil {
		p.Sleep = SleepCtx
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// Backoff is BaseDelay·2^(n-1), capped at MaxDelay.
func (p RetryPolicy) Backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// SleepCtx waits d, or until ctx is done (its error then).
func SleepCtx(ctx context.Context, d time.Duration) error {
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

// LimitWait is how long a rate-limit refusal is waited out: Retry-After
// when the answer gives it, else until reset (when the limit is known
// spent), else a minute, doubling with each refusal so far (hit counts
// this one).
func LimitWait(h http.Header, now time.Time, reset time.Time, hit int) time.Duration {
	if d, ok := RetryAfter(h, now); ok {
		return d
	}
	if !reset.IsZero() {
		return max(reset.Sub(now), 0) + time.Second
	}
	d := time.Minute
	for i := 1; i < hit; i++ {
		d *= 2
	}
	return d
}

// ErrAttemptTimeout marks one attempt that outlived its time-box, told
// apart from the caller's own deadline.
var ErrAttemptTimeout = errors.New("request timed out")

// AttemptTimeoutError is an attempt past its time-box.
type AttemptTimeoutError struct{ Err error }

func (e *AttemptTimeoutError) Error() string   { return ErrAttemptTimeout.Error() }
func (e *AttemptTimeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.Err} }
func (e *AttemptTimeoutError) Timeout() bool   { return true }

// HostLimitedError is the gate's refusal: the host's rate limit is spent
// past the policy's MaxWait, and the request was not sent.
type HostLimitedError struct {
	Host  string
	Until time.Time
	Why   string
}

func (e *HostLimitedError) Error() string {
	why := ""
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("rate limit of %s spent%s; resets at %s; not asked again before then", e.Host, why, e.Until.UTC().Format(time.RFC3339))
}

// Gate holds a request to host while limits says the host's rate limit
// is spent, or refuses it (HostLimitedError) when that lasts past the
// policy's MaxWait; waiting says each wait before it starts. No limits:
// no gate.
func Gate(ctx context.Context, limits *HostLimiter, p RetryPolicy, host string, waiting func(wait time.Duration, why string)) error {
	if limits == nil {
		return nil
	}
	for {
		now := p.Now()
		until, why := limits.BlockedUntil(host, now)
		if until.IsZero() {
			return nil
		}
		wait := until.Sub(now)
		if wait > p.MaxWait {
			return &HostLimitedError{Host: host, Until: until, Why: why}
		}
		if waiting != nil {
			waiting(wait, why)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return err
		}
		if !p.Now().Before(until) {
			return nil
		}
		// A fake clock that did not move: do not spin on it.
		if p.Now().Equal(now) {
			return nil
		}
	}
}

// Attempt sends req once, with body, through next: after the gate, in one
// of the host's slots (held until the answer's body is closed, as a forge
// counts a request in flight until it is read), within timeout (0: none),
// counted under ctx (WithCounter).
func Attempt(ctx context.Context, next http.RoundTripper, req *http.Request, body []byte, timeout time.Duration,
	limits *HostLimiter, p RetryPolicy, waiting func(wait time.Duration, why string)) (*http.Response, error) {
	if err := Gate(ctx, limits, p, req.URL.Host, waiting); err != nil {
		return nil, err
	}
	release := func() {}
	if limits != nil {
		r, err := limits.Acquire(ctx, req.URL.Host)
		if err != nil {
			return nil, err
		}
		release = r
	}
	actx, cancelCtx := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		actx, cancelCtx = context.WithTimeout(ctx, timeout)
	}
	cancel := func() { cancelCtx(); release() }
	r := req.Clone(actx)
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	Count(ctx)
	resp, err := next.RoundTrip(r)
	if err != nil {
		timedOut := ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			return nil, &AttemptTimeoutError{err}
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody ends an attempt's time-box and frees its slot once the body
// is done, so the deadline covers reading the answer too.
type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// ReadBody reads an attempt's whole answer and leaves it readable again;
// a read cut by the attempt's own time-box is an AttemptTimeoutError.
func ReadBody(ctx context.Context, resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, &AttemptTimeoutError{err}
		}
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	return b, nil
}

// Drain reads a little of an answer a retry replaces and closes it, so
// its connection is reused.
func Drain(resp *http.Response) {
	if resp != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}

// FaultRetry judges an attempt that failed in transport (err) or was
// answered with a server error (resp): whether to try again and after how
// long. A read is repeated; a write only when it provably did not land
// (no connection was made). Never: the caller's own cancel or deadline, a
// fault no retry mends (a certificate not trusted, a host that does not
// exist), the gate's refusal.
func FaultRetry(p RetryPolicy, resp *http.Response, err error, attempt int, read bool) (time.Duration, bool, string) {
	var le *HostLimitedError
	switch {
	case errors.As(err, &le):
		return 0, false, ""
	case err != nil:
		if errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrAttemptTimeout)) {
			return 0, false, ""
		}
		if PermanentNetError(err) {
			return 0, false, ""
		}
		if NotSent(err) {
			return p.Backoff(attempt), true, "cannot connect: " + err.Error()
		}
		return p.Backoff(attempt), read, err.Error()
	case resp != nil && resp.StatusCode >= 500 && read:
		wait := p.Backoff(attempt)
		if d, ok := RetryAfter(resp.Header, p.Now()); ok {
			wait = max(wait, d)
		}
		return wait, true, fmt.Sprintf("server error %d", resp.StatusCode)
	}
	return 0, false, ""
}

// NotSent reports errors that prove no byte of the request reached the
// server: the connection was never made.
func NotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// PermanentNetError reports faults a retry cannot fix: a certificate the
// client does not trust, a host that does not exist.
func PermanentNetError(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var dns *net.DNSError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid), errors.As(err, &verify):
		return true
	case errors.As(err, &dns) && dns.IsNotFound:
		return true
	}
	return false
}

type counterKey struct{}

// WithCounter makes every HTTP attempt under ctx count into the returned
// counter, retries and redirects included: they all cost rate limit.
func WithCounter(ctx context.Context) (context.Context, *atomic.Int64) {
	n := new(atomic.Int64)
	return context.WithValue(ctx, counterKey{}, n), n
}

// Count adds one attempt to ctx's counter, if it has one.
func Count(ctx context.Context) {
	if n, ok := ctx.Value(counterKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
