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

// PollCharge settles one poll's permit with what the poll spent: the
// poll's observation runs under the context it returns (which meters what
// the observation costs), and done is called once the observation
// returned.
type PollCharge = func(ctx context.Context) (metered context.Context, done func())

// PollCharger is a PollBudget whose permits are points the polls spend
// rather than polls (`converge serve`'s budget of forge points): what a
// poll costs is known only once it ran (a probe answered 304 nothing, a
// whole read what the forge said it cost), so ReservePoll takes the
// budget's estimate of a poll, and the charge puts what the poll spent in
// its place.
type PollCharger interface {
	ReservePoll() (wait time.Duration, cancel func(), charge PollCharge)
}

// reservePoll reserves the next poll's permit, and with a PollCharger the
// charge its observation settles.
func (e *runner[S, O, A, R]) reservePoll() (time.Duration, func(), PollCharge) {
	if pc, ok := e.opt.Polls.(PollCharger); ok {
		return pc.ReservePoll()
	}
	wait, cancel := e.opt.Polls.Reserve()
	return wait, cancel, nil
}

// pollPermit waits, after a wait ended on its timer, for the fleet's
// permit to poll; a wake ends it at once and gives the permit back. A
// permit taken leaves its charge for the next observation (step).
func (e *runner[S, O, A, R]) pollPermit(ctx context.Context, bg <-chan struct{}) error {
	if e.opt.Polls == nil {
		return nil
	}
	wait, cancel, charge := e.reservePoll()
	if wait <= 0 {
		e.pollCharge = charge
		return nil
	}
	select {
	case <-e.opt.Clock.After(wait):
		e.pollCharge = charge
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
