package prloop_test

import (
	"runtime"
	"testing"

	"github.com/convergeloop/converge/internal/prloop/prlooptest"
)

// TestEngine_ManyLoopsInOneProcess: one process runs many PR loops at
// once on a shared forge; each parks in its own wait and all stop cleanly.
func TestEngine_ManyLoopsInOneProcess(t *testing.T) {
	stop := prlooptest.ParkLoops(200)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkEngine_ThousandWaitingLoops reports the memory one waiting PR
// loop costs when 1,000 run in one process on the fake forge.
func BenchmarkEngine_ThousandWaitingLoops(b *testing.B) {
	const n = 1000
	for b.Loop() {
		runtime.GC()
		rss0, mem0 := prlooptest.RSS(), prlooptest.InUse()
		stop := prlooptest.ParkLoops(n)
		runtime.GC()
		rss1, mem1 := prlooptest.RSS(), prlooptest.InUse()
		// RSS is the process's word, but the runtime keeps memory it
		// freed; heap plus stacks in use is the loops' own.
		b.ReportMetric(float64(rss1-rss0)/n/1024, "KiB-rss/loop")
		b.ReportMetric(float64(mem1-mem0)/n/1024, "KiB-heap+stack/loop")
		if err := stop(); err != nil {
			b.Fatal(err)
		}
	}
}
