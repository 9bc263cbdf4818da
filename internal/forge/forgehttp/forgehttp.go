// Package forgehttp holds the HTTP discipline every forge client shares:
// the per-host limiter (REL-1), the retry policy, one attempt held to the
// host's limit and its time-box, which transport faults a retry mends
// (retry.go), the rule that credentials go only to the API's origins
// (SEC-6), Retry-After reading, and the CA-aware client (IF-3). What a
// rate-limit refusal looks like stays each forge's (GitHub's GraphQL error
// types and X-Ratelimit headers; GitLab's RateLimit headers).
package forgehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/secure"
)

// DefaultMaxConcurrent is how many requests one API host gets at once
// from converge: far below any forge's concurrency limit, since a fleet of
// loops may share a token (REL-1).
const DefaultMaxConcurrent = 4

// DefaultTimeout bounds one HTTP attempt of any forge's client.
const DefaultTimeout = 30 * time.Second

// HostLimiter is REL-1's per-host discipline, shared by every client that
// talks to one host (GitHub's and GitLab's alike): at most Max requests in
// flight per host, and a record of when a host's rate limit is spent, so
// a client's transport holds or refuses requests until it resets.
type HostLimiter struct {
	max int

	mu    sync.Mutex
	hosts map[string]*hostState
}

type hostState struct {
	sem   chan struct{}
	until time.Time // the host refuses requests until then
	why   string
}

// NewHostLimiter caps each host at max concurrent requests
// (DefaultMaxConcurrent when max <= 0).
func NewHostLimiter(max int) *HostLimiter {
	if max <= 0 {
		max = DefaultMaxConcurrent
	}
	return &HostLimiter{max: max, hosts: map[string]*hostState{}}
}

// Max is the per-host cap.
func (l *HostLimiter) Max() int { return l.max }

func (l *HostLimiter) host(h string) *hostState {
	h = strings.ToLower(h)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.hosts[h]
	if s == nil {
		s = &hostState{sem: make(chan struct{}, l.max)}
		l.hosts[h] = s
	}
	return s
}

// InFlight reports the requests now in flight to host.
func (l *HostLimiter) InFlight(host string) int { return len(l.host(host).sem) }

// BlockedUntil is when host accepts requests again and why it does not
// now; zero when it does.
func (l *HostLimiter) BlockedUntil(host string, now time.Time) (time.Time, string) {
	s := l.host(host)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !s.until.After(now) {
		return time.Time{}, ""
	}
	return s.until, s.why
}

// Block records that host refuses requests until t (a later block wins).
func (l *HostLimiter) Block(host string, t time.Time, why string) {
	s := l.host(host)
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.After(s.until) {
		s.until, s.why = t, why
	}
}

// Acquire takes one of host's slots, or gives up when ctx ends; release
// gives it back (once, however often called).
func (l *HostLimiter) Acquire(ctx context.Context, host string) (release func(), err error) {
	s := l.host(host)
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-s.sem }) }, nil
}

// CredentialsAllowed reports whether a credential may go to u: only to
// one of the allowed origins, and never in clear except to loopback
// (SEC-6). Clients check it on every request, so a redirect or a request
// built later by hand goes out bare.
func CredentialsAllowed(u *url.URL, allowed []*url.URL) bool {
	if secure.CheckTokenURL(u) != nil {
		return false
	}
	for _, a := range allowed {
		if SameOrigin(u, a) {
			return true
		}
	}
	return false
}

// SameOrigin compares scheme, host and port (a default port spelled or
// not).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "http") {
		return "80"
	}
	return "443"
}

// RetryAfter reads a Retry-After header: seconds or an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// HTTPClientWithCA returns an HTTP client trusting the system roots plus
// every PEM file named (--ca-file, SSL_CERT_FILE; empty names are skipped).
//
// Go lets SSL_CERT_FILE replace the system bundle; IF-3 says it adds to it,
// so the distribution bundle is loaded back in when the variable is set.
func HTTPClientWithCA(caFiles ...string) (*http.Client, error) {
	var files []string
	for _, f := range caFiles {
		if f = strings.TrimSpace(f); f != "" {
			files = append(files, f)
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if len(files) == 0 {
		return &http.Client{Transport: base}, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if os.Getenv("SSL_CERT_FILE") != "" {
		for _, f := range systemBundles {
			if b, err := os.ReadFile(f); err == nil {
				pool.AppendCertsFromPEM(b)
				break
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("CA file %s: no PEM certificates found", f)
		}
	}
	base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: base}, nil
}

// systemBundles are the distribution CA bundles Go itself looks for.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}
