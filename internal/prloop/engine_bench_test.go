package prloop_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/prloop/prlooptest"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/fakeforge"
	"github.com/convergeloop/converge/internal/prloop"
)

// parkedWorkspace is a workspace for loops that only wait: no clone.
type parkedWorkspace struct{}

func (parkedWorkspace) Prepare(context.Context, *forge.PullRequest) (int, error) { return 10, nil }
func (parkedWorkspace) Fix(context.Context, *forge.PullRequest, int, []prloop.Finding) (prloop.FixResult, error) {
	return prloop.FixResult{}, errors.New("no fix expected")
}
func (parkedWorkspace) LocalReview(context.Context, *forge.PullRequest, int) (prloop.LocalReviewResult, error) {
	return prloop.LocalReviewResult{}, errors.New("no local review expected")
}

// parkLoops starts n PR loops in this process on one fake forge, each
// waiting for a review that never starts, and returns once every loop
// has parked in its wait; stop ends them all.
func parkLoops(tb testing.TB, n int) (stop func() error) {
	tb.Helper()
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ctx, cancel := context.WithCancel(context.Background())
	var parked, done sync.WaitGroup
	parked.Add(n)
	errs := make(chan error, n)
	for range n {
		ref := ff.AddPR(fakeforge.PR{})
		var once sync.Once
		l := prloop.NewLoop(ref, prloop.Deps{
			Forge: ff, Workspace: parkedWorkspace{}, Journal: &prlooptest.Journal{},
			Config: withCopilot(prloop.DefaultConfig()),
			Reporter: engine.ReporterFunc(func(e engine.Event) {
				if e.Kind == "wait" {
					once.Do(parked.Done)
				}
			}),
		})
		done.Add(1)
		go func() {
			defer done.Done()
			if _, err := l.Run(ctx, prloop.State{Phase: prloop.PhaseStart}, engine.Options{PollMin: time.Hour, PollMax: time.Hour}); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
				once.Do(parked.Done)
			}
		}()
	}
	parked.Wait()
	return func() error {
		cancel()
		done.Wait()
		close(errs)
		return <-errs
	}
}

// TestEngine_ManyLoopsInOneProcess: one process runs many PR loops at
// once on a shared forge; each parks in its own wait and all stop cleanly.
func TestEngine_ManyLoopsInOneProcess(t *testing.T) {
	stop := parkLoops(t, 200)
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
		rss0, mem0 := rssBytes(), inUse()
		stop := parkLoops(b, n)
		runtime.GC()
		rss1, mem1 := rssBytes(), inUse()
		// RSS is the process's word, but the runtime keeps memory it
		// freed; heap plus stacks in use is the loops' own.
		b.ReportMetric(float64(rss1-rss0)/n/1024, "KiB-rss/loop")
		b.ReportMetric(float64(mem1-mem0)/n/1024, "KiB-heap+stack/loop")
		if err := stop(); err != nil {
			b.Fatal(err)
		}
	}
}

func inUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// rssBytes is the process's resident set (Linux), 0 elsewhere.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
