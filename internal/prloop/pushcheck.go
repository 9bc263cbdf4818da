package prloop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// PR-S8 before the push. A fixer's free-text change cannot be predicted
// (only a suggestion can, see hold), so the round's commit itself is
// checked before it leaves the workspace: a commit that undoes what an
// earlier loop commit changed on the same lines is not pushed. The
// findings it addressed there are escalated, citing both rounds, and the
// round's other fixes are pushed without them. Decide's reversals, after
// the push, stays as the check of a workspace that cannot do this.

// PushCheck is what the run's earlier loop commits changed, placed on the
// head the round's fix starts from. The zero PushCheck checks nothing.
type PushCheck struct {
	round   int
	earlier []placed
}

// NewPushCheck is the check of the fix of s's current round.
func NewPushCheck(s State) PushCheck {
	return PushCheck{round: s.Round, earlier: placeHunks(s.Rounds, s.Round)}
}

// Active reports whether there is anything to check against.
func (c PushCheck) Active() bool { return len(c.earlier) > 0 }

// Undone is the check of the round's commit, not yet pushed, whose hunks
// are hs: for each hunk that undoes an earlier loop commit's on the same
// lines, the addressed findings it belongs to — those near it, else those
// in its file, else (a hunk in a file no addressed finding is about) all
// of them, fail-closed — each with the reason citing both rounds, and a
// note for the round's ledger. No finding: the commit may be pushed.
func (c PushCheck) Undone(hs []Hunk, findings []Finding, addressed []string) (held map[string]string, notes []string) {
	if !c.Active() {
		return nil, nil
	}
	var done []Finding
	for _, f := range findings {
		if slices.Contains(addressed, f.ID) {
			done = append(done, f)
		}
	}
	for _, rv := range commitUndoes(hs, c.earlier) {
		reason := fmt.Sprintf("oscillation: round %d's fix would undo what round %d (commit %s) changed on %s; converge did not push it and will not change these lines back and forth, a human decides",
			c.round, rv.earlier.Round, text.ShortSHA(rv.earlier.Commit), hunkWhere(rv.earlier))
		ids := attribute(rv.hunk, done)
		if len(ids) == 0 {
			for _, f := range done {
				ids = append(ids, f.ID)
			}
		}
		for _, id := range ids {
			if held == nil {
				held = map[string]string{}
			}
			if _, ok := held[id]; !ok {
				held[id] = reason
			}
		}
		note := reason
		if len(ids) > 0 {
			note += "; escalated: " + strings.Join(ids, ", ")
		}
		if !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
	}
	return held, notes
}
