package github

import (
	"context"
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// DefaultTimeout bounds one HTTP attempt (Options.Timeout), and
// DefaultBackoff is the first retry's wait (RetryPolicy.BaseDelay).
// DefaultMaxWait is the longest rate-limit wait sat out in-process
// (RetryPolicy.MaxWait).
const (
	DefaultTimeout = 30 * time.Second
	DefaultBackoff = time.Second
	DefaultMaxWait = 2 * time.Minute
)

// DefaultMaxConcurrent is how many requests one API host gets at once
// from converge: GitHub's secondary limit allows 100 concurrent requests,
// but a fleet of loops sharing a token must stay far below it (REL-1).
const DefaultMaxConcurrent = forgehttp.DefaultMaxConcurrent

// HostLimiter is REL-1's per-host discipline, shared by every Client
// that talks to one host (and by the GitLab client: forgehttp): at most
// Max requests in flight per host, and no request sent while the host's
// rate limit is known to be spent — the wait the host asked for
// (retry-after, or the primary limit's reset) is sat out before sending,
// or, when longer than the client's MaxWait, refused at once without a
// request, so a spent limit costs nothing until it resets.
type HostLimiter = forgehttp.HostLimiter

// NewHostLimiter caps each host at max concurrent requests
// (DefaultMaxConcurrent when max <= 0).
func NewHostLimiter(max int) *HostLimiter { return forgehttp.NewHostLimiter(max) }

// gate holds a request while its host's rate limit is spent: up to
// MaxWait in-process (with the policy's ctx-aware sleep, never a bare
// one), beyond that a KindRateLimited error at once, sent nowhere, for
// the engine to ride out within the run's fault budget.
func (t *retryTransport) gate(ctx context.Context, host string) error {
	if t.limits == nil {
		return nil
	}
	for {
		now := t.policy.Now()
		until, why := t.limits.BlockedUntil(host, now)
		if until.IsZero() {
			return nil
		}
		wait := until.Sub(now)
		if wait > t.policy.MaxWait {
			return &hostLimitedError{host: host, until: until, why: why}
		}
		t.log.Warn("github: waiting for the host's rate limit", "host", host, "wait", wait, "reason", why)
		if err := t.policy.Sleep(ctx, wait); err != nil {
			return err
		}
		if !t.policy.Now().Before(until) {
			return nil
		}
		// A fake clock that did not move: do not spin on it.
		if t.policy.Now().Equal(now) {
			return nil
		}
	}
}

// hostLimitedError is the gate's refusal: the host's rate limit is spent
// past MaxWait, and the request was not sent.
type hostLimitedError struct {
	host  string
	until time.Time
	why   string
}

func (e *hostLimitedError) Error() string {
	return fmt.Sprintf("rate limit of %s spent (%s)%s; not asked again before then", e.host, e.why, resetNote(e.until))
}
