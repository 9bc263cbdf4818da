package server

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Budget hands out fallback poll permits under a fleet-wide budget of
// forge requests per minute: a token bucket refilled continuously at
// perMinute/60 a second and holding at most burst. Webhooks wake loops at
// once; polls, which only catch what webhooks missed, share this budget
// so a thousand idle loops cannot spend the primary rate limit.
type Budget struct {
	clock     Clock
	perSecond float64
	burst     float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// NewBudget makes a full bucket. burst <= 0 means a tenth of a minute's
// budget (at least one).
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
	return &Budget{clock: clock, perSecond: float64(perMinute) / 60, burst: float64(burst), tokens: float64(burst), last: clock.Now()}, nil
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
// whose poll never ran (a webhook woke the loop first).
func (b *Budget) Reserve() (time.Duration, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.tokens--
	var wait time.Duration
	if b.tokens < 0 {
		wait = max(time.Duration(-b.tokens/b.perSecond*float64(time.Second)), time.Millisecond)
	}
	var once sync.Once
	return wait, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.refill()
			b.tokens = min(b.burst, b.tokens+1)
		})
	}
}

// Available is the number of permits the bucket holds now: 0 while polls
// queue for it.
func (b *Budget) Available() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	return max(0, b.tokens)
}
