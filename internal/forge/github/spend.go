package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// What each answer cost, as GitHub said it (forge.Charge): the
// x-ratelimit-* headers every answer carries (resource, limit, used,
// remaining, reset), and in a GraphQL answer that asked for it the
// query's own rateLimit { cost remaining resetAt limit }. GitHub's
// published rules fill in what no answer says: a REST request costs 1 on
// its resource, a conditional one answered 304 nothing; a GraphQL call
// that did not ask (a mutation cannot) at least 1, marked Estimated.

// rateLimitNode is GraphQL's RateLimit object, as the queries ask it.
type rateLimitNode struct {
	Cost      int       `json:"cost"`
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	Used      *int      `json:"used"`
	ResetAt   time.Time `json:"resetAt"`
}

// rateLimitOf reads data.rateLimit of a GraphQL answer's body; nil when
// the query did not ask for it (or the body is no GraphQL answer). The
// body is streamed only as far as rateLimit: the documents ask for it
// first, so a large observation is not decoded twice.
func rateLimitOf(body []byte) *rateLimitNode {
	if !bytes.Contains(body, []byte(`"rateLimit"`)) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	// into walks an object's keys up to key, leaving dec at its value.
	into := func(key string) bool {
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return false
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return false
			}
			if k, _ := t.(string); k == key {
				return true
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
		}
		return false
	}
	if !into("data") || !into("rateLimit") {
		return nil
	}
	var rl *rateLimitNode
	if dec.Decode(&rl) != nil {
		return nil
	}
	return rl
}

// headerBudget reads GitHub's x-ratelimit-* headers.
func headerBudget(h http.Header) forge.RateBudget {
	num := func(k string) int {
		n, _ := strconv.Atoi(strings.TrimSpace(h.Get(k)))
		return n
	}
	b := forge.RateBudget{Limit: num("X-Ratelimit-Limit"), Used: num("X-Ratelimit-Used"), Remaining: num("X-Ratelimit-Remaining")}
	if reset, ok := rateReset(h); ok {
		b.ResetAt = reset.UTC()
	}
	if b.Limit > 0 && h.Get("X-Ratelimit-Used") == "" {
		b.Used = b.Limit - b.Remaining
	}
	return b
}

// chargeOf is what one answer cost: resp's status and headers, and body
// when it was read (a GraphQL answer's, for its rateLimit).
func chargeOf(resp *http.Response, body []byte, graphQL bool, now time.Time) forge.Charge {
	c := forge.Charge{Resource: strings.ToLower(strings.TrimSpace(resp.Header.Get("X-Ratelimit-Resource"))), Budget: headerBudget(resp.Header), At: now}
	if t, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		c.At = t
	}
	if c.Resource == "" {
		c.Resource = "core"
		if graphQL {
			c.Resource = "graphql"
		}
	}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		c.NotModified = true
	case !graphQL:
		c.Points = 1
	case resp.StatusCode != http.StatusOK:
		// Refused before it ran (a 4xx, a 5xx of the endpoint): GitHub's
		// headers still say what is left.
	default:
		if rl := rateLimitOf(body); rl != nil {
			c.Points = rl.Cost
			// The query's own word on its limit, read after its cost,
			// over the headers' where it says it.
			c.Budget.Remaining = rl.Remaining
			if rl.Limit > 0 {
				c.Budget.Limit = rl.Limit
			}
			if !rl.ResetAt.IsZero() {
				c.Budget.ResetAt = rl.ResetAt.UTC()
			}
			switch {
			case rl.Used != nil:
				c.Budget.Used = *rl.Used
			case c.Budget.Limit > 0:
				c.Budget.Used = c.Budget.Limit - c.Budget.Remaining
			}
			break
		}
		if graphQLVerdict(body) == gqlRateLimited {
			break // refused: nothing ran
		}
		c.Points, c.Estimated = 1, true
	}
	return c
}

// charge reports resp's Charge to the meters ctx carries (none: nothing
// is read). body is the answer's, when RoundTrip read it.
func (t *retryTransport) charge(ctx context.Context, resp *http.Response, body []byte, graphQL bool) {
	if resp == nil || !forge.Metered(ctx) {
		return
	}
	forge.Charged(ctx, chargeOf(resp, body, graphQL, t.policy.Now()))
}

// RateIdentity names whose limits the Client's requests count against:
// an App's installation on its repository ("HOST/installation/ID"), else
// the token's user ("HOST/LOGIN"). Never the token.
func (c *Client) RateIdentity(ctx context.Context) (string, error) {
	host := c.restURL.Host
	if host == "api.github.com" {
		host = "github.com"
	}
	if c.app != nil {
		inst, err := c.app.installation(ctx, c.appOwner, c.appRepo)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/installation/%d", host, inst), nil
	}
	login, err := c.Viewer(ctx)
	if err != nil {
		return "", err
	}
	return host + "/" + login, nil
}

var _ forge.Identifier = (*Client)(nil)
