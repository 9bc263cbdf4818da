package server

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// coalescer wakes on a key's first event at once and gathers the events
// that follow within a window into one more call of fire at the window's
// end (PR-S2): a review with fifty comments wakes its loop twice, not
// fifty times, and the first event waits for nothing — a window at the
// front put a whole window on every delivery's latency. A steady stream
// still fires once per window and never starves.
type coalescer struct {
	clock  Clock
	window time.Duration
	fire   func(key string)

	mu sync.Mutex
	// due are the keys to fire now (a first event); open are the windows
	// their fires opened, and trailing the windows an event came in since.
	due      map[string]bool
	open     map[string]time.Time
	trailing map[string]bool
	kick     chan struct{}
}

func newCoalescer(clock Clock, window time.Duration, fire func(string)) *coalescer {
	return &coalescer{clock: clock, window: window, fire: fire, due: map[string]bool{},
		open: map[string]time.Time{}, trailing: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// add notes an event for key.
func (c *coalescer) add(key string) {
	now := c.clock.Now()
	c.mu.Lock()
	end, inWindow := c.open[key]
	first := !c.due[key] && (!inWindow || !now.Before(end))
	if first {
		c.due[key] = true
		c.open[key] = now.Add(c.window)
	} else if !c.due[key] {
		c.trailing[key] = true
	}
	c.mu.Unlock()
	if first {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// flush fires every key due now and every window that ended with events
// in it, in key order, and says when the next window ends (zero when
// none is open).
func (c *coalescer) flush() (next time.Time) {
	now := c.clock.Now()
	var keys []string
	c.mu.Lock()
	for k := range c.due {
		keys = append(keys, k)
		delete(c.due, k)
	}
	for k, end := range c.open {
		if end.After(now) {
			if next.IsZero() || end.Before(next) {
				next = end
			}
			continue
		}
		if c.trailing[k] {
			// Events came in the window: one more fire, and a new window
			// for what follows it.
			delete(c.trailing, k)
			keys = append(keys, k)
			c.open[k] = now.Add(c.window)
			if next.IsZero() || c.open[k].Before(next) {
				next = c.open[k]
			}
			continue
		}
		delete(c.open, k)
	}
	c.mu.Unlock()
	sort.Strings(keys)
	keys = slices.Compact(keys)
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
