package server

import (
	"context"
	"sort"
	"sync"
	"time"
)

// coalescer gathers the events for one key that arrive within a window
// into one call of fire at the window's end (PR-S2): a review with fifty
// comments wakes its loop once, not fifty times. The window opens with a
// key's first event and is not extended by later ones, so a steady stream
// still fires once per window and never starves.
type coalescer struct {
	clock  Clock
	window time.Duration
	fire   func(key string)

	mu   sync.Mutex
	due  map[string]time.Time
	kick chan struct{}
}

func newCoalescer(clock Clock, window time.Duration, fire func(string)) *coalescer {
	return &coalescer{clock: clock, window: window, fire: fire, due: map[string]time.Time{}, kick: make(chan struct{}, 1)}
}

// add notes an event for key.
func (c *coalescer) add(key string) {
	c.mu.Lock()
	_, pending := c.due[key]
	if !pending {
		c.due[key] = c.clock.Now().Add(c.window)
	}
	c.mu.Unlock()
	if !pending {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// flush fires every key whose window has ended, in key order, and says
// when the next window ends (zero when none is open).
func (c *coalescer) flush() (next time.Time) {
	now := c.clock.Now()
	var keys []string
	c.mu.Lock()
	for k, at := range c.due {
		if !at.After(now) {
			keys = append(keys, k)
			delete(c.due, k)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	c.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		c.fire(k)
	}
	return next
}

// run fires keys as their windows end, until ctx ends.
func (c *coalescer) run(ctx context.Context) {
	for {
		next := c.flush()
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = c.clock.After(next.Sub(c.clock.Now()))
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-timer:
		}
	}
}
