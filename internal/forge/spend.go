package forge

import (
	"context"
	"sync"
	"time"
)

// What forge calls cost, as the forge itself said it: points known, not
// guessed. A backend reports every answered request as a Charge to the
// Meters its context carries (WithMeter), and sums an observation's into
// PullRequest.Spend. Names here are the forge's own only in values
// (Resource): the loop that reads them stays forge-neutral.

// RateBudget is a primary rate limit as one answer said it: the limit of
// its window, what is used and left of it, and when it resets. The zero
// value is "the answer said nothing".
type RateBudget struct {
	Limit     int
	Used      int
	Remaining int
	ResetAt   time.Time
}

// Known reports whether the answer said anything of its limit.
func (b RateBudget) Known() bool { return b.Limit > 0 || !b.ResetAt.IsZero() }

// Charge is what one answered request cost on the forge's primary rate
// limit.
type Charge struct {
	// Resource is the limit the request counts against, in the forge's
	// words: GitHub's x-ratelimit-resource (graphql, core, search, …),
	// GitLab's RateLimit-Name, else what the backend knows it to be.
	Resource string
	// Points is what the request spent: GitHub's rateLimit.cost for a
	// GraphQL query, 1 for a REST request, 0 for a conditional request
	// answered 304 Not Modified.
	Points int
	// Estimated: the forge did not say what the request cost (a GraphQL
	// mutation, which cannot ask for rateLimit), and Points is the least
	// the forge's published rule charges.
	Estimated bool
	// NotModified: a conditional request answered 304, free on the
	// primary limit.
	NotModified bool
	// Budget is the limit after the request, when the answer said it.
	Budget RateBudget
	// At is when the answer came (the forge's Date, else the client's
	// clock).
	At time.Time
}

// Meter is told each answered request's Charge as it comes. It must be
// safe for concurrent use and quick: it runs on the request's path.
type Meter interface {
	Charge(Charge)
}

type meterKey struct{}

// WithMeter makes every forge request made under ctx report its Charge to
// m, besides the meters ctx already carries (a run's, a poll's).
func WithMeter(ctx context.Context, m Meter) context.Context {
	if m == nil {
		return ctx
	}
	prev, _ := ctx.Value(meterKey{}).([]Meter)
	ms := make([]Meter, 0, len(prev)+1)
	ms = append(append(ms, prev...), m)
	return context.WithValue(ctx, meterKey{}, ms)
}

// Charged reports c to every meter ctx carries; a backend calls it once
// per answered request.
func Charged(ctx context.Context, c Charge) {
	ms, _ := ctx.Value(meterKey{}).([]Meter)
	for _, m := range ms {
		m.Charge(c)
	}
}

// Metered reports whether ctx carries a meter, so a backend spares the
// work of a charge no one reads.
func Metered(ctx context.Context) bool {
	ms, _ := ctx.Value(meterKey{}).([]Meter)
	return len(ms) > 0
}

// Spend sums Charges: what an observation, a run or an identity spent.
type Spend struct {
	// Calls counts the requests answered, retries included.
	Calls int
	// Points sums their Points, over every resource.
	Points int
	// Estimated is the part of Points the forge did not say.
	Estimated int
	// NotModified counts the requests answered 304.
	NotModified int
	// Resource and Budget are the limit as the last answer that said it
	// did (zero when none did).
	Resource string
	Budget   RateBudget
}

// Add counts c.
func (s *Spend) Add(c Charge) {
	s.Calls++
	s.Points += c.Points
	if c.Estimated {
		s.Estimated += c.Points
	}
	if c.NotModified {
		s.NotModified++
	}
	if c.Budget.Known() {
		s.Resource, s.Budget = c.Resource, c.Budget
	}
}

// Tally is a Meter that sums what it is told.
type Tally struct {
	mu sync.Mutex
	s  Spend
}

// Charge counts c.
func (t *Tally) Charge(c Charge) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.Add(c)
}

// Spend is the sum so far.
func (t *Tally) Spend() Spend {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

// Identifier is a forge client that names the identity its rate limits
// are counted against: a GitHub App's installation, else the token's
// user. The name is never the token. Detect it with a type assertion on
// a Forge.
type Identifier interface {
	// RateIdentity is "HOST/installation/ID" for an App installation,
	// else "HOST/LOGIN".
	RateIdentity(ctx context.Context) (string, error)
}
