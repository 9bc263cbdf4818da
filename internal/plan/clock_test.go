package plan

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestPLAN_1_FailedReadsNoClock: a run that fails before any observation
// of this process (the first Observe of a resumed run) ends at the last
// time its state records, not at the worker's wall clock: Fail is part of
// the pure step, and a replay of it must end the same.
func TestPLAN_1_FailedReadsNoClock(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	st := State{RunID: "r1", StartedAt: t0, Tasks: []TaskState{
		{ID: "a", Phase: PhaseDone, Status: TaskDone, EndedAt: t0.Add(4 * time.Minute)},
		{ID: "b", Phase: PhasePending},
	}}
	l := &Loop{}
	a, _ := l.Fail(st, Observation{}, errors.New("the store is gone"))
	if a.Terminal == nil || !a.Terminal.At.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("failed at %v, want the state's last time %v", a.Terminal, t0.Add(4*time.Minute))
	}
	b, _ := l.Fail(st, Observation{}, errors.New("the store is gone"))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the same failure ended two ways:\n%+v\n%+v", a.Terminal, b.Terminal)
	}
	c, _ := l.Fail(st, Observation{Now: t0.Add(time.Hour)}, errors.New("x"))
	if !c.Terminal.At.Equal(t0.Add(time.Hour)) {
		t.Fatalf("failed at %v, want the observation's %v", c.Terminal.At, t0.Add(time.Hour))
	}
}
