package checkloop

import "time"

// lastSeen is the latest time the state records: the engine's clock at
// the last observation it keeps, for a Fail that has no observation (the
// first Observe of a resumed run failed). Fail reads no clock of its own,
// so the same state fails the same way on every worker and in a replay;
// zero when the run never observed anything.
func lastSeen(st State) time.Time {
	at := st.StartedAt
	later := func(t time.Time) {
		if t.After(at) {
			at = t
		}
	}
	for _, it := range st.Iterations {
		later(it.StartedAt)
		later(it.EndedAt)
	}
	if st.Terminal != nil {
		later(st.Terminal.At)
	}
	return at
}
