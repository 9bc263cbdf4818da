package prlooptest

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	copilotbot "github.com/convergeloop/converge/internal/review/copilot"
)

// ParkedWorkspace is a workspace for loops that only wait: no clone.
type ParkedWorkspace struct{}

func (ParkedWorkspace) Prepare(context.Context, *forge.PullRequest) (int, error) { return 10, nil }
func (ParkedWorkspace) Fix(context.Context, *forge.PullRequest, int, []prloop.Finding) (prloop.FixResult, error) {
	return prloop.FixResult{}, errors.New("no fix expected")
}
func (ParkedWorkspace) LocalReview(context.Context, *forge.PullRequest, int) (prloop.LocalReviewResult, error) {
	return prloop.LocalReviewResult{}, errors.New("no local review expected")
}

// ParkLoops starts n PR loops in this process on one fake forge, each
// waiting for a review that never starts, and returns once every loop
// has parked in its wait; stop ends them all and reports the first error
// a loop met.
func ParkLoops(n int) (stop func() error) {
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ctx, cancel := context.WithCancel(context.Background())
	var parked, done sync.WaitGroup
	parked.Add(n)
	errs := make(chan error, n)
	cfg := prloop.DefaultConfig()
	cfg.Bot = copilotbot.New()
	for range n {
		ref := ff.AddPR(fakeforge.PR{})
		var once sync.Once
		l := prloop.NewLoop(ref, prloop.Deps{
			Forge: ff, Workspace: ParkedWorkspace{}, Journal: &Journal{}, Config: cfg,
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

// InUse is the heap and stacks the runtime has in use.
func InUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// RSS is the process's resident set (Linux), 0 elsewhere.
func RSS() int64 { return procStatus("VmRSS:") }

// PeakRSS is the process's peak resident set so far (Linux), 0 elsewhere.
func PeakRSS() int64 { return procStatus("VmHWM:") }

// procStatus is a size field of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
