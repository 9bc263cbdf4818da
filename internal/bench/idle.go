package bench

import (
	"context"
	"runtime"

	"github.com/convergeloop/converge/internal/prloop/prlooptest"
)

// idleLoops parks n PR loops in this process, each waiting for a review
// that never starts, and reads what they hold.
func idleLoops(ctx context.Context, n int) (IdleLoops, error) {
	if err := ctx.Err(); err != nil {
		return IdleLoops{}, err
	}
	runtime.GC()
	rss0, mem0 := prlooptest.RSS(), prlooptest.InUse()
	stop := prlooptest.ParkLoops(n)
	runtime.GC()
	rss1, mem1 := prlooptest.RSS(), prlooptest.InUse()
	if err := stop(); err != nil {
		return IdleLoops{}, err
	}
	return IdleLoops{
		Loops:       n,
		RSSMiB:      float64(rss1) / (1 << 20),
		KiBPerLoop:  float64(rss1-rss0) / float64(n) / 1024,
		HeapKiBLoop: float64(mem1-mem0) / float64(n) / 1024,
	}, nil
}
