package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/engine"
)

// parkingLoop is the counter loop that records, at each park and each
// wait, how many parks the engine asked for so far.
type parkingLoop struct {
	counterLoop
	parks int
}

func (l *parkingLoop) Park(context.Context) { l.parks++ }

// parkClock records the parks seen at the moment of each wait.
type parkClock struct {
	*fakeClock
	l      *parkingLoop
	atWait []int
}

func (c *parkClock) After(d time.Duration) <-chan time.Time {
	c.atWait = append(c.atWait, c.l.parks)
	return c.fakeClock.After(d)
}

// TestPR_G6_EngineParksTheLoopBeforeEveryWait: a loop that can park is
// parked before each wait, so it waits holding nothing (an idle loop of
// `converge serve` holds no worktree); a run that never waits is never
// parked.
func TestPR_G6_EngineParksTheLoopBeforeEveryWait(t *testing.T) {
	l := &parkingLoop{counterLoop: counterLoop{w: &world{moveAt: 4}, waitOnly: true}}
	clock := &parkClock{fakeClock: newClock(), l: l}
	if _, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), l, &memJournal{}, counterState{Goal: 1}, engine.Options{Clock: clock, PollMin: time.Second}); err != nil {
		t.Fatal(err)
	}
	if len(clock.atWait) != 3 {
		t.Fatalf("waited %d times, want 3", len(clock.atWait))
	}
	for i, n := range clock.atWait {
		if n != i+1 {
			t.Fatalf("wait %d began after %d park(s), want %d: the loop waited unparked (parks at each wait: %v)", i+1, n, i+1, clock.atWait)
		}
	}

	busy := &parkingLoop{counterLoop: counterLoop{w: &world{}}}
	if _, err := engine.Run[counterState, counterObs, counterAction, string](context.Background(), busy, &memJournal{}, counterState{Goal: 3}, engine.Options{Clock: newClock()}); err != nil {
		t.Fatal(err)
	}
	if busy.parks != 0 {
		t.Fatalf("a run that never waits was parked %d times", busy.parks)
	}
}
