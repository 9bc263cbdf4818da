package prloop

import "fmt"

// allConflictingHold is PR-S7's end of a round decided before any fix:
// when every structural finding of the round conflicts, the run ends
// awaiting a human, so the round fixes nothing, not even its minor
// points. Each finding triage did not hold already that a human can see
// (a thread or a comment) is deferred with that reason, so every thread
// the round observed ends it answered; a minor local finding has nowhere
// to be answered and only shows in the summary.
func (d *step) allConflictingHold(fs []Finding) {
	reason := fmt.Sprintf("every structural finding of round %d conflicts with another on the same lines, so converge fixes nothing this round and hands the pull request to a human (%s)",
		d.s.Round, NoteAllConflicting)
	for i := range fs {
		f := &fs[i]
		if f.Held == "" && (f.ThreadID != "" || f.CommentID != "") {
			f.Held, f.HeldReason = DispDeferred, reason
		}
	}
}
