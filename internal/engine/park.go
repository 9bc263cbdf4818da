package engine

import (
	"context"
	"time"
)

// Parker is implemented by a loop that can give back what it holds while
// it waits (the PR loop's worktree): a fleet's loops wait most of the
// time, and an idle loop should cost its memory, not a checkout on disk.
// The engine parks the loop before every wait longer than zero; the next
// step that needs what was given back makes it again.
type Parker interface {
	// Park releases what the loop holds between steps. It must leave
	// nothing the next step depends on only in what it releases, and it
	// reports its own failures: parking is an economy, never a fault.
	Park(ctx context.Context)
}

// park parks the loop, when it can be parked, before a wait of d.
func (e *runner[S, O, A, R]) park(ctx context.Context, d time.Duration) {
	if p, ok := any(e.loop).(Parker); ok && d > 0 {
		p.Park(ctx)
	}
}
