package temporal

import (
	"context"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/engine"
)

// Journal is a bound loop's journal on the Temporal engine. The state is
// the workflow's, so SaveState keeps nothing; the finished actions are the
// workflow's too: an activity is handed the keys the workflow knows
// finished, and hands back the ones it finished, so the record survives
// the worker (REL-2).
type Journal struct {
	mu       sync.Mutex
	done     map[string]bool
	finished []string
}

// BeginAction reports whether an earlier attempt of the key finished.
func (j *Journal) BeginAction(_ context.Context, a engine.ActionRecord) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[a.Key], nil
}

// FinishAction records a finished action for the workflow; a failed one
// is not finished.
func (j *Journal) FinishAction(_ context.Context, key string, failed bool, _ any) error {
	if failed {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.done[key] {
		j.done[key] = true
		j.finished = append(j.finished, key)
	}
	return nil
}

// begin starts an activity with the workflow's finished keys.
func (j *Journal) begin(done []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.done = make(map[string]bool, len(done))
	for _, k := range done {
		j.done[k] = true
	}
	j.finished = nil
}

// take is what the activity finished, for the workflow.
func (j *Journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	f := j.finished
	j.finished = nil
	return f
}

// StateJournal adapts the Journal to a kind's engine.Journal[S].
type StateJournal[S any] struct{ *Journal }

// SaveState is a no-op: the workflow's history holds every state.
func (j StateJournal[S]) SaveState(context.Context, S) error { return nil }

// collector gathers a bound loop's events for the workflow's log; events
// reported between activities (background work) wait for the next one.
type collector struct {
	mu     sync.Mutex
	events []engine.Event
	now    func() time.Time
}

func (c *collector) Report(e engine.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.Time.IsZero() && c.now != nil {
		e.Time = c.now()
	}
	if len(c.events) >= maxLog {
		c.events = c.events[1:]
	}
	c.events = append(c.events, e)
}

func (c *collector) take() []engine.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.events
	c.events = nil
	return e
}

// maxLog bounds the events a workflow keeps for its log query.
const maxLog = 2000
