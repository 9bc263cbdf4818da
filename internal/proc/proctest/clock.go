// Package proctest holds what tests of time-boxed subprocesses share: a
// clock whose timers fire when the test says, whether a process lives, and
// a wait for one to be gone.
package proctest

import (
	"os"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
)

// ManualClock is a proc.Clock whose timers fire when the test says: each
// NewTimer is announced to Next with its duration, and fires on Fire.
type ManualClock struct {
	made chan Timer
}

var _ proc.Clock = (*ManualClock)(nil)

// Timer is one timer a ManualClock made.
type Timer struct {
	D    time.Duration
	fire chan time.Time
}

// Fire makes the timer's channel receive, as if its duration had passed.
func (t Timer) Fire() { t.fire <- time.Now() }

// NewManualClock returns a clock with no timer made yet.
func NewManualClock() *ManualClock { return &ManualClock{made: make(chan Timer, 8)} }

// NewTimer implements proc.Clock.
func (m *ManualClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c := make(chan time.Time, 1)
	m.made <- Timer{D: d, fire: c}
	return c, func() bool { return true }
}

// Next is the next timer the code under test makes; the test fails when
// none is made within 10 seconds.
func (m *ManualClock) Next(t testing.TB) Timer {
	t.Helper()
	select {
	case tm := <-m.made:
		return tm
	case <-time.After(10 * time.Second):
		t.Fatal("no timer was made")
		return Timer{}
	}
}

// Alive reports whether pid is a live process: not gone, and not a
// zombie waiting for its parent to reap it (see proc.Live).
func Alive(pid int) bool { return proc.Live(pid) }

// WaitGone waits up to within for pid to be gone (see Alive). It reports
// whether it went; one still alive is then SIGKILLed, so a failing test
// leaves nothing behind.
func WaitGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for Alive(pid) {
		if time.Now().After(deadline) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
