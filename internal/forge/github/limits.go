package github

import (
	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// DefaultTimeout bounds one HTTP attempt (Options.Timeout), and
// DefaultBackoff is the first retry's wait (RetryPolicy.BaseDelay).
// DefaultMaxWait is the longest rate-limit wait sat out in-process
// (RetryPolicy.MaxWait).
const (
	DefaultTimeout = forgehttp.DefaultTimeout
	DefaultBackoff = forgehttp.DefaultBackoff
	DefaultMaxWait = forgehttp.DefaultMaxWait
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
