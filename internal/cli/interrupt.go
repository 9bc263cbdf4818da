package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupt is SIGINT and SIGTERM for one process. A command that runs a
// loop takes the first signal as a stop request: the loop ends cleanly at
// its next step as `converge stop` ends it (stopped-by-human, exit 3, the
// head's status set to say so), and a fix in flight finishes with its
// replies first (PR-G5). Every other command, and a second signal, cancel
// at once.
type interrupt struct {
	mu       sync.Mutex
	stop     chan struct{}
	loops    int  // commands running a loop that stops on stop
	stopping bool // stop is closed
	cancel   context.CancelFunc
	errOut   io.Writer
}

type interruptKey struct{}

// withInterrupts returns ctx, cancelled as interrupt says, and a func
// that stops listening for the signals.
func withInterrupts(ctx context.Context, errOut io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	in := &interrupt{stop: make(chan struct{}), cancel: cancel, errOut: errOut}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				in.signal()
			case <-done:
				return
			}
		}
	}()
	return context.WithValue(ctx, interruptKey{}, in), func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

func (in *interrupt) signal() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.loops > 0 && !in.stopping {
		in.stopping = true
		close(in.stop)
		fmt.Fprintln(in.errOut, "converge: stopping at the next step, as converge stop does (a pushed fix gets its replies first); interrupt again to abort at once (the run then resumes on the next start)")
		return
	}
	in.cancel()
}

// stopOnInterrupt is the channel the first SIGINT or SIGTERM closes, for
// the engine's Options.Stop; it marks the command as one whose loop stops
// cleanly on it. Nil (never closed) outside Main.
func stopOnInterrupt(ctx context.Context) <-chan struct{} {
	in, _ := ctx.Value(interruptKey{}).(*interrupt)
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.loops++
	return in.stop
}
