package prloop

import (
	"context"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// PushGuarded is a Workspace that asks, just before each push, whether
// the run still holds the PR: a fix takes minutes, and another converge
// may take the PR over (`--take-over`) meanwhile. Without it the run
// learns of the take-over at its next look, after its push.
type PushGuarded interface {
	GuardPush(guard func(ctx context.Context, pr *forge.PullRequest) error)
}

// guardPush gives l's workspace, when it asks, the check its pushes make
// for a run in state st: one change-probe read of the PR (free when
// nothing changed). A read that fails does not hold the push back: the
// push is never forced, so a branch another driver moved refuses it
// anyway (and the run observes again).
func guardPush(l *Loop, st State) {
	g, ok := l.Workspace.(PushGuarded)
	if !ok || st.RunID == "" {
		return
	}
	g.GuardPush(func(ctx context.Context, pr *forge.PullRequest) error {
		now, err := l.Forge.Observe(forge.WithProbe(ctx), pr.Ref)
		if err != nil {
			return nil
		}
		at := now.ObservedAt
		if at.IsZero() {
			at = time.Now()
		}
		lease, ok := HeadLease(now)
		if !ok || !lease.takesOver(st, at) {
			return nil
		}
		return &ErrTakenOver{Lease: lease}
	})
}
