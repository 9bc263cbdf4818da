package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// RetryPolicy bounds REL-1's retries (forgehttp.RetryPolicy). Zero
// fields take the defaults.
type RetryPolicy = forgehttp.RetryPolicy

type ctxKey int

const keyKind ctxKey = iota

// reqKind tells the retry transport what a POST is: GraphQL queries are
// reads, mutations are writes.
type reqKind int

const (
	kindREST reqKind = iota
	kindGraphQLQuery
	kindGraphQLMutation
)

func withKind(ctx context.Context, k reqKind) context.Context {
	return context.WithValue(ctx, keyKind, k)
}

func kindOf(ctx context.Context) reqKind {
	k, _ := ctx.Value(keyKind).(reqKind)
	return k
}

// authTransport attaches the token only to the origins it was issued for
// (IF-2); a redirect elsewhere goes out bare.
type authTransport struct {
	next    http.RoundTripper
	header  string
	allowed []*url.URL
	log     *slog.Logger
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if t.header != "" && t.allows(req.URL) {
		r.Header.Set("Authorization", t.header)
	} else {
		if r.Header.Get("Authorization") != "" || t.header != "" {
			t.log.Debug("github: sending without token to a host it was not issued for", "host", req.URL.Host)
		}
		r.Header.Del("Authorization")
	}
	return t.next.RoundTrip(r)
}

func (t *authTransport) allows(u *url.URL) bool { return credentialsAllowed(u, t.allowed) }

// credentialsAllowed reports whether a credential (a token, an App's JWT
// or installation token) may go to u: only to one of the allowed origins,
// and never in clear. New refused such origins already; this holds for any
// request built later by hand (SEC-6).
func credentialsAllowed(u *url.URL, allowed []*url.URL) bool {
	return forgehttp.CredentialsAllowed(u, allowed)
}

func sameOrigin(a, b *url.URL) bool { return forgehttp.SameOrigin(a, b) }

// retryTransport is REL-1: reads are retried on 5xx, timeouts, network
// errors and rate limits; writes only when the request provably did not
// land (no connection, or a rate-limit refusal).
type retryTransport struct {
	next    http.RoundTripper
	policy  RetryPolicy
	timeout time.Duration
	log     *slog.Logger
	redact  redactor
	// limits caps requests in flight per host and holds requests while a
	// host's rate limit is spent; nil: neither.
	limits *HostLimiter
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	read := req.Method == http.MethodGet || req.Method == http.MethodHead || kindOf(ctx) == kindGraphQLQuery
	graphQL := kindOf(ctx) != kindREST

	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}

	limited := 0 // rate-limit refusals so far; the header-less wait doubles on each
	for attempt := 1; ; attempt++ {
		resp, err := t.attempt(ctx, req, body)
		readBody := err == nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests ||
			(graphQL && resp.StatusCode == http.StatusOK))
		if err == nil && !readBody {
			t.charge(ctx, resp, nil, graphQL) // what it cost, as GitHub said (spend.go)
		}
		if readBody {
			// The verdict needs the body; keep it readable for the caller.
			b, rerr := forgehttp.ReadBody(ctx, resp)
			t.charge(ctx, resp, b, graphQL)
			if rerr != nil {
				resp, err = nil, rerr
			} else {
				if v := t.classify(resp, b, limited+1, attempt, read); v.retry {
					if !v.limit {
						// GraphQL's own fault on a read: back off as for a 5xx.
						if attempt >= t.policy.MaxAttempts {
							return resp, nil
						}
						if serr := t.sleep(ctx, req, attempt, v); serr != nil {
							return nil, serr
						}
						continue
					}
					limited++
					// The limit is the token's on this host, not this
					// request's: every request to the host waits it out.
					t.block(req.URL.Host, v)
					if v.wait > t.policy.MaxWait {
						t.log.Warn("github: rate limited beyond the in-process wait", "host", req.URL.Host, "wait", v.wait)
						return resp, nil
					}
					if attempt >= t.policy.MaxAttempts {
						return resp, nil
					}
					t.log.Warn("github: retrying", "method", req.Method, "host", req.URL.Host, "path", req.URL.Path,
						"attempt", attempt, "wait", v.wait, "reason", t.redact.redact(v.reason))
					if t.limits == nil {
						if serr := t.policy.Sleep(ctx, v.wait); serr != nil {
							return nil, serr
						}
					}
					// With limits, the next attempt's gate sits the wait out.
					continue
				}
				return resp, nil
			}
		}
		wait, retry, reason := forgehttp.FaultRetry(t.policy, resp, err, attempt, read)
		if !retry || attempt >= t.policy.MaxAttempts {
			return resp, err
		}
		v := verdict{retry: true, wait: wait, reason: reason}
		forgehttp.Drain(resp)
		if serr := t.sleep(ctx, req, attempt, v); serr != nil {
			return nil, serr
		}
	}
}

func (t *retryTransport) sleep(ctx context.Context, req *http.Request, attempt int, v verdict) error {
	t.log.Warn("github: retrying", "method", req.Method, "host", req.URL.Host, "path", req.URL.Path,
		"attempt", attempt, "wait", v.wait, "reason", t.redact.redact(v.reason))
	return t.policy.Sleep(ctx, v.wait)
}

// block marks req's host refused for v.wait, so other requests to it
// wait too instead of spending attempts on a limit known spent.
func (t *retryTransport) block(host string, v verdict) {
	if t.limits != nil {
		t.limits.Block(host, t.policy.Now().Add(v.wait), v.reason)
	}
}

func (t *retryTransport) attempt(ctx context.Context, req *http.Request, body []byte) (*http.Response, error) {
	return forgehttp.Attempt(ctx, t.next, req, body, t.timeout, t.limits, t.policy, func(wait time.Duration, why string) {
		t.log.Warn("github: waiting for the host's rate limit", "host", req.URL.Host, "wait", wait, "reason", why)
	})
}

type verdict struct {
	retry  bool
	wait   time.Duration
	reason string
	// limit: a rate-limit refusal, whose wait is the host's, not only
	// this request's.
	limit bool
}

// classify judges a 403, 429 or GraphQL 200 whose body has been read; hit
// counts rate-limit refusals including this one; attempt counts this
// request's attempts, this one included.
func (t *retryTransport) classify(resp *http.Response, body []byte, hit, attempt int, read bool) verdict {
	if resp.StatusCode == http.StatusOK {
		switch graphQLVerdict(body) {
		case gqlRateLimited:
			// Refused before execution: safe to repeat a mutation too.
			// GitHub's primary limit is spent for this query whatever
			// points are left (it may cost more): its reset decides.
			return verdict{true, t.rateLimitWait(resp.Header, hit, true), "graphql rate limited", true}
		case gqlTransient:
			// GitHub's own failure inside a query (alone or beside partial
			// data): a read is repeated; a mutation may have landed, so it
			// is the caller's to judge.
			if read {
				return verdict{retry: true, wait: t.policy.Backoff(attempt), reason: "graphql answered with its own error"}
			}
		}
		return verdict{}
	}
	if !isRateLimit(resp, body) {
		return verdict{}
	}
	return verdict{true, t.rateLimitWait(resp.Header, hit, false), fmt.Sprintf("rate limited (%d)", resp.StatusCode), true}
}

// rateLimitWait follows GitHub's rules: retry-after, else the reset time
// when the primary limit is spent, else at least a minute, doubling.
func (t *retryTransport) rateLimitWait(h http.Header, hit int, primary bool) time.Duration {
	var reset time.Time
	if primary || h.Get("X-Ratelimit-Remaining") == "0" {
		reset, _ = rateReset(h)
	}
	return forgehttp.LimitWait(h, t.policy.Now(), reset, hit)
}

func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return forgehttp.RetryAfter(h, now)
}

func rateReset(h http.Header) (time.Time, bool) {
	s, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}, false
	}
	return time.Unix(s, 0), true
}

// isRateLimit tells a 403/429 rate-limit refusal from a permission one.
func isRateLimit(resp *http.Response, body []byte) bool {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-Ratelimit-Remaining") == "0" {
		return true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return true
	}
	return strings.Contains(strings.ToLower(string(body)), "rate limit")
}

type gqlVerdict int

const (
	gqlOK gqlVerdict = iota
	gqlRateLimited
	gqlTransient
)

// graphQLVerdict reads a GraphQL 200's errors: GitHub's rate-limit error,
// a failure on its side (gqlErrors.transient), or neither.
func graphQLVerdict(body []byte) gqlVerdict {
	if !bytes.Contains(body, []byte(`"errors"`)) {
		return gqlOK
	}
	var r struct {
		Errors []gqlError `json:"errors"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Errors) == 0 {
		return gqlOK
	}
	ge := &gqlErrors{errs: r.Errors}
	switch {
	case ge.rateLimited():
		return gqlRateLimited
	case ge.transient():
		return gqlTransient
	}
	return gqlOK
}

// HTTPClientWithCA returns an HTTP client trusting the system roots plus
// every PEM file named (--ca-file, SSL_CERT_FILE; empty names are
// skipped); see forgehttp.HTTPClientWithCA.
func HTTPClientWithCA(caFiles ...string) (*http.Client, error) {
	return forgehttp.HTTPClientWithCA(caFiles...)
}
