package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// Budget hands out fallback poll permits under a fleet-wide budget: a
// token bucket refilled continuously and holding at most burst. Webhooks
// wake loops at once; polls, which only catch what webhooks missed,
// share this budget so a thousand idle loops cannot spend the primary
// rate limit.
//
// Counted in polls (NewBudget) each poll takes one permit. Counted in
// forge points (NewPointBudget: `converge serve`'s) a poll is charged
// what it spent, as the forge said it (forge.Charge): a change probe
// answered 304 nothing, a whole read what the forge's answers said it
// cost. Its permit, taken before the poll runs, is the budget's estimate
// of what a poll costs: before the first poll, the estimate it was made
// with (a whole read's); then the running mean of what polls spent, so an
// idle fleet's polls, which cost nothing, queue for next to nothing. The
// charge puts what the poll spent in the permit's place
// (engine.PollCharger): a poll that read whole where the estimate said
// less leaves the bucket short, and the polls after it wait until the
// budget's rate has paid for it.
type Budget struct {
	clock     Clock
	perSecond float64
	burst     float64
	// points: permits are forge points, settled by what each poll spent.
	points bool

	mu     sync.Mutex
	tokens float64
	last   time.Time
	// estimate is a poll's permit in points: the running mean of what
	// polls spent (estimateWeight).
	estimate float64
	// spent sums the points polls were charged.
	spent float64
}

// NewBudget makes a full bucket of perMinute polls a minute. burst <= 0
// means a tenth of a minute's budget (at least one).
func NewBudget(perMinute, burst int, clock Clock) (*Budget, error) {
	if perMinute <= 0 {
		return nil, fmt.Errorf("poll budget: %d requests a minute: want at least 1", perMinute)
	}
	if burst <= 0 {
		burst = max(1, perMinute/10)
	}
	if clock == nil {
		clock = systemClock{}
	}
	return &Budget{clock: clock, perSecond: float64(perMinute) / 60, burst: float64(burst), tokens: float64(burst), last: clock.Now(), estimate: 1}, nil
}

// DefaultPollEstimate is what a poll that reads whole is taken to cost
// before one did: on GitHub the change probe answered 200 (one REST
// point) and the observation's GraphQL query (3 points by GitHub's
// formula; BENCHMARKS.md).
const DefaultPollEstimate = 4

// estimateWeight is how much one poll's spend moves the estimate of the
// next: a few polls that read whole raise it, a few that cost nothing
// bring it down.
const estimateWeight = 0.25

// NewPointBudget makes a full bucket of perHour forge points an hour,
// whose polls are charged what they spent. burst <= 0 means a minute's
// points; estimate <= 0 DefaultPollEstimate. The burst holds at least
// one estimated poll.
func NewPointBudget(perHour, burst, estimate int, clock Clock) (*Budget, error) {
	if perHour <= 0 {
		return nil, fmt.Errorf("poll budget: %d points an hour: want at least 1", perHour)
	}
	if estimate <= 0 {
		estimate = DefaultPollEstimate
	}
	if burst <= 0 {
		burst = perHour / 60
	}
	burst = max(burst, estimate)
	if clock == nil {
		clock = systemClock{}
	}
	return &Budget{clock: clock, perSecond: float64(perHour) / 3600, burst: float64(burst), tokens: float64(burst),
		last: clock.Now(), points: true, estimate: float64(estimate)}, nil
}

// refill brings the bucket to now; b.mu is held.
func (b *Budget) refill() {
	now := b.clock.Now()
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt.Seconds()*b.perSecond)
	}
	b.last = now
}

// Take takes n permits if the budget holds them and reports true; else it
// takes nothing and says how long until it will hold them.
func (b *Budget) Take(n int) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	need := float64(n)
	if need > b.burst {
		need = b.burst // a poll costlier than the bucket waits for a full one
	}
	if b.tokens >= need {
		b.tokens -= need
		return true, 0
	}
	wait := time.Duration((need - b.tokens) / b.perSecond * float64(time.Second))
	return false, max(wait, time.Millisecond)
}

// Wait takes n permits, waiting for them as long as ctx allows.
func (b *Budget) Wait(ctx context.Context, n int) error {
	for {
		ok, wait := b.Take(n)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("poll budget: %w", ctx.Err())
		case <-b.clock.After(wait):
		}
	}
}

// Reserve takes one permit now, or ahead of its time when the bucket is
// empty: the caller may poll after wait (engine.PollBudget). Permits go
// in turn, so loops queued on the budget each wait their own slot rather
// than all waking when the next one comes; cancel gives back a permit
// whose poll never ran (a webhook woke the loop first). Counted in
// points, the permit is the estimate of a poll, and stays spent:
// ReservePoll settles it.
func (b *Budget) Reserve() (time.Duration, func()) {
	wait, cancel, _ := b.ReservePoll()
	return wait, cancel
}

// ReservePoll is Reserve with the permit's charge (engine.PollCharger):
// counted in points, the poll's observation runs under the charge's
// context, and its done puts what the poll spent, as the forge said it,
// in the permit's place. Counted in polls, the charge keeps the permit.
func (b *Budget) ReservePoll() (time.Duration, func(), func(context.Context) (context.Context, func())) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	permit := b.estimate
	if !b.points {
		permit = 1
	}
	b.tokens -= permit
	var wait time.Duration
	if b.tokens < 0 {
		wait = max(time.Duration(-b.tokens/b.perSecond*float64(time.Second)), time.Millisecond)
	}
	var once sync.Once
	settle := func(spent float64, ran bool) {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.refill()
			b.tokens = min(b.burst, b.tokens+permit-spent)
			b.spent += spent
			if b.points && ran {
				b.estimate += (spent - b.estimate) * estimateWeight
			}
		})
	}
	cancel := func() { settle(0, false) }
	if !b.points {
		return wait, cancel, func(ctx context.Context) (context.Context, func()) {
			return ctx, func() { settle(permit, true) }
		}
	}
	return wait, cancel, func(ctx context.Context) (context.Context, func()) {
		tally := &forge.Tally{}
		return forge.WithMeter(ctx, tally), func() { settle(float64(tally.Spend().Points), true) }
	}
}

// Points reports whether the budget counts forge points (NewPointBudget)
// rather than polls.
func (b *Budget) Points() bool { return b.points }

// Spent is what polls were charged since the budget was made: points, or
// polls.
func (b *Budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Available is the number of permits the bucket holds now: 0 while polls
// queue for it.
func (b *Budget) Available() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	return max(0, b.tokens)
}
