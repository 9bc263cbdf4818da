// Package prlooptest holds what tests of the PR loop share: a clock that
// advances by the waits it is asked for, and a journal in memory.
package prlooptest

import (
	"context"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/prloop"
)

// Clock advances by every wait it is asked for, and lets a sliver of real
// time pass (a fiftieth of the wait) so an emulator's actors can work
// meanwhile.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewClock is a Clock that reads now until asked to wait.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After advances the clock by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return time.After(d / 50)
}

// Waits are the waits asked for so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// Journal keeps a run in memory; the SQLite journal is exercised by the
// CLI's end-to-end tests.
type Journal struct {
	mu     sync.Mutex
	states []prloop.State
	done   map[string]bool
}

var _ prloop.Journal = (*Journal)(nil)

// SaveState keeps s.
func (j *Journal) SaveState(_ context.Context, s prloop.State) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.states = append(j.states, s)
	return nil
}

// BeginAction says whether the action with a's key already succeeded.
func (j *Journal) BeginAction(_ context.Context, a engine.ActionRecord) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[a.Key], nil
}

// FinishAction records how the action with key ended.
func (j *Journal) FinishAction(_ context.Context, key string, failed bool, _ any) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done == nil {
		j.done = map[string]bool{}
	}
	j.done[key] = !failed
	return nil
}

// Done lists the keys of the actions journalled, succeeded or not.
func (j *Journal) Done() map[string]bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[string]bool{}
	for k, v := range j.done {
		out[k] = v
	}
	return out
}

// Last is the state saved last (the errored terminal's, after a run that
// failed); the zero State before any.
func (j *Journal) Last() prloop.State {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.states) == 0 {
		return prloop.State{}
	}
	return j.states[len(j.states)-1]
}
