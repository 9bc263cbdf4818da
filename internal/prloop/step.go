package prloop

import "fmt"

// Mode is how a run acts beyond its Config (PR-M1, PR-M2): fixed for the
// run, an input of the pure step like the Config.
type Mode struct {
	// DryRun ends the run at the first step that plans a change.
	DryRun bool `json:"dry_run,omitempty"`
	// DisposeOnly replies to and resolves the open threads once.
	DisposeOnly bool `json:"dispose_only,omitempty"`
}

// Step is the loop's whole pure step over (state, observation) and the
// run's fixed inputs: Decide, or Dispose for a dispose-only run, ended
// early for a dry run. done is true once next holds a terminal. The local
// engine's Loop.Decide and a Temporal workflow call it alike; it reads
// nothing else.
func Step(st State, obs Observation, c Config, m Mode) (next State, actions []Action, done bool) {
	if m.DisposeOnly && obs.PR != nil {
		d, actions := Dispose(st, obs, c)
		next := st.clone()
		next.Phase = PhaseDone
		next.Terminal = &Terminal{Reason: ReasonDisposed, ExitCode: ExitCode(ReasonDisposed), Disposal: &d,
			Message: fmt.Sprintf("%d replied, %d resolved, %d skipped", len(d.Replied), len(d.Resolved), len(d.Skipped))}
		return next, actions, true
	}
	next, actions, term := Decide(st, obs, c)
	if m.DryRun {
		return dryRun(next, actions, term)
	}
	return next, actions, term != nil
}
