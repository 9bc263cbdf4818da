package engine

import (
	"context"
	"time"
)

// PollBudget is a fleet's budget of fallback polls (`converge serve`'s
// server.Budget): loops woken by webhooks observe at once, and only the
// polls that catch what webhooks missed share one budget of forge
// requests a minute, so a thousand idle loops cannot spend the rate limit.
//
// A poll is a wait that ended on its timer: the observation after it
// takes a permit first. An observation right after the loop's own
// actions, the first one of a run, and one after a wake (a webhook, a
// stop, background work done) take none: the loop cannot decide without
// them, and a webhook is the fleet's cheap signal, not its spend.
type PollBudget interface {
	// Reserve takes one permit, now (wait 0) or ahead of its time, so
	// loops queued on the budget each wait their own turn instead of all
	// waking at once; cancel gives the permit back when the poll never
	// runs (a wake came first).
	Reserve() (wait time.Duration, cancel func())
}

// pollPermit waits, after a wait ended on its timer, for the fleet's
// permit to poll; a wake ends it at once and gives the permit back.
func (e *runner[S, O, A, R]) pollPermit(ctx context.Context, bg <-chan struct{}) error {
	if e.opt.Polls == nil {
		return nil
	}
	wait, cancel := e.opt.Polls.Reserve()
	if wait <= 0 {
		return nil
	}
	select {
	case <-e.opt.Clock.After(wait):
		return nil
	case <-ctx.Done():
		cancel()
		return ctx.Err()
	case <-e.opt.Wake:
	case <-e.opt.Stop:
	case <-bg:
	case <-e.opt.Drain:
		cancel()
		return ErrDrained
	}
	cancel() // woken: this observation is the wake's, not a poll
	return nil
}
