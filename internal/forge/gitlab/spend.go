package gitlab

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// What each answer cost, as GitLab said it (forge.Charge). GitLab counts
// requests, not points: every request is one on its limit, whatever it
// was. Where GitLab sends them (GitLab.com's, a self-managed instance's
// rack-attack throttles) the RateLimit-* headers say the limit of the
// window (RateLimit-Limit), what was observed and is left of it
// (RateLimit-Observed, RateLimit-Remaining), when it resets
// (RateLimit-Reset, a Unix time) and, on a refusal, which throttle
// (RateLimit-Name). Without them the Charge says only its one request.

// resourceAPI names the limit a GitLab request counts against when the
// answer does not.
const resourceAPI = "api"

// chargeOf is what one answer cost.
func chargeOf(resp *http.Response, now time.Time) forge.Charge {
	h := resp.Header
	num := func(k string) int {
		n, _ := strconv.Atoi(strings.TrimSpace(h.Get(k)))
		return n
	}
	c := forge.Charge{Resource: strings.TrimSpace(h.Get("RateLimit-Name")), Points: 1, At: now,
		Budget: forge.RateBudget{Limit: num("RateLimit-Limit"), Used: num("RateLimit-Observed"), Remaining: num("RateLimit-Remaining")}}
	if c.Resource == "" {
		c.Resource = resourceAPI
	}
	if reset, ok := rateReset(h); ok {
		c.Budget.ResetAt = reset.UTC()
	}
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		c.At = t
	}
	if resp.StatusCode == http.StatusNotModified {
		c.Points, c.NotModified = 0, true
	}
	return c
}

// charge reports resp's Charge to the meters ctx carries.
func (t *retryTransport) charge(ctx context.Context, resp *http.Response) {
	if resp == nil || !forge.Metered(ctx) {
		return
	}
	forge.Charged(ctx, chargeOf(resp, t.policy.Now()))
}

// RateIdentity names whose limits the Client's requests count against:
// the token's user ("HOST/USERNAME"). Never the token.
func (c *Client) RateIdentity(ctx context.Context) (string, error) {
	login, err := c.Viewer(ctx)
	if err != nil {
		return "", err
	}
	return c.restURL.Host + "/" + login, nil
}

var _ forge.Identifier = (*Client)(nil)
