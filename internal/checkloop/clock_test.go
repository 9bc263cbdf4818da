package checkloop

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestLOOP_5_FailedReadsNoClock: a run that fails before any observation
// of this process (the first Observe of a resumed run) ends at the last
// time its state records, not at the worker's wall clock: Fail is part of
// the pure step, and a replay of it must end the same.
func TestLOOP_5_FailedReadsNoClock(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	st := NewState("r1", mechanical())
	st.StartedAt = t0
	st.Iterations = []Iteration{{N: 1, Ticket: TicketID("r1", 1), Stage: StageClosed, StartedAt: t0.Add(time.Minute), EndedAt: t0.Add(3 * time.Minute)}}
	l := &Loop{}
	a, _ := l.Fail(st, Observation{}, errors.New("the store is gone"))
	if a.Terminal == nil || !a.Terminal.At.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("failed at %v, want the state's last time %v", a.Terminal, t0.Add(3*time.Minute))
	}
	b, _ := l.Fail(st, Observation{}, errors.New("the store is gone"))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the same failure ended two ways:\n%+v\n%+v", a.Terminal, b.Terminal)
	}
	// With an observation, its clock.
	c, _ := l.Fail(st, Observation{Now: t0.Add(time.Hour)}, errors.New("x"))
	if !c.Terminal.At.Equal(t0.Add(time.Hour)) {
		t.Fatalf("failed at %v, want the observation's %v", c.Terminal.At, t0.Add(time.Hour))
	}
}
