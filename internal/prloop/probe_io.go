package prloop

import (
	"context"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
)

// observeWhole observes letting the forge answer from a conditional
// change probe (PR-O1: an unchanged PR costs one free request), and reads
// the PR whole again when Decide would do anything on that answer but
// wait. A probe cannot see every fact (on GitHub a thread's resolution),
// so nothing is written, and no run ends, on an observation a probe stood
// in for: when converge cannot prove a fact it does not have it.
func (l *Loop) observeWhole(ctx context.Context, st State, in engine.Input[*ActResult], result *ActResult) (Observation, error) {
	obs, err := l.observeWorld(forge.WithProbe(ctx), st, in, result)
	if err != nil || obs.PR == nil || !obs.PR.Unchanged || l.waitsOnly(st, obs) {
		return obs, err
	}
	return l.observeWorld(ctx, st, in, result)
}

// waitsOnly reports whether Decide, on obs, only waits, and waits for
// something a probe can see. A wait for a review's comments to become
// visible (PR-O2) counts the reads it makes: the comments can show in
// the observation's threads while every witness answers 304 (GitHub's
// REST counts may be current before GraphQL shows the threads), so a
// probed answer would spend the bounded reads on one stale read, and a
// later round would read the lagging review as seen.
func (l *Loop) waitsOnly(st State, obs Observation) bool {
	next, actions, done := l.decide(st, obs)
	if done || next.UnsettledCount != st.UnsettledCount || next.UnsettledReview != st.UnsettledReview {
		return false
	}
	for _, a := range actions {
		if a.Kind != ActWait {
			return false
		}
	}
	return true
}
