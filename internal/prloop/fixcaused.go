package prloop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/text"
)

// Fix-caused findings. A new finding on lines the previous round's commit
// changed is the loop's own doing: the fix made the point it is now asked
// to fix. triage tags it with that round (Finding.FixCaused and
// FixCausedCommit, kept in the round's ledger line); its reply says so
// (fixCausedWords), the decision log shows it, and the recap's input
// carries it (addFixCaused). Two rounds in a row with a fix-caused finding
// are drift: the recap gate holds at the top of the next round whatever
// the cadence (fixCausedChain), once per chain.
//
// The previous round's commit is the latest loop commit before this round,
// and only while it is the head the round reviews (a revert or a human's
// commit since would move its lines). Its lines are its hunks (PR-S8's
// record) as the commit left them: the lines it added, or the two around
// a pure deletion. A finding is on them when its inclusive range
// intersects one (PR-S7's test); a file-level finding or one without a
// position is on no line. New means not a thread converge answered before
// (in this run or an earlier one), not reopened, and no finding of an
// earlier round of this run (by id, merged ids included). A settled
// finding repeats an old point and is never fix-caused.

// tagFixCaused tags the round's new findings on the previous round's
// changed lines.
func (d *step) tagFixCaused(fs []Finding) []Finding {
	prev := d.previousCommitRound()
	if prev == nil || prev.CommitSHA != d.head || len(prev.Hunks) == 0 {
		return fs
	}
	var changed []span
	for _, p := range placeHunks(d.s.Rounds, d.s.Round) {
		if p.Round == prev.N {
			changed = append(changed, span{kind: spanLines, path: p.Path, start: p.Start, end: p.End})
		}
	}
	seen := d.seenBefore()
	out := slices.Clone(fs)
	for i := range out {
		f := &out[i]
		f.FixCaused, f.FixCausedCommit = 0, ""
		if f.Reopened || f.Held == DispSettled || seen[f.ID] {
			continue
		}
		sp := spanOf(*f)
		if sp.kind != spanLines {
			continue
		}
		if slices.ContainsFunc(changed, func(c span) bool { return intersects(sp, c) }) {
			f.FixCaused, f.FixCausedCommit = prev.N, prev.CommitSHA
		}
	}
	return out
}

// previousCommitRound is the latest round before this one that committed.
func (d *step) previousCommitRound() *RoundRecord {
	var prev *RoundRecord
	for i := range d.s.Rounds {
		r := &d.s.Rounds[i]
		if r.N < d.s.Round && r.CommitSHA != "" && (prev == nil || r.N > prev.N) {
			prev = r
		}
	}
	return prev
}

// seenBefore are the ids that are not new this round: earlier rounds'
// findings and what merged into them, and threads converge has answered.
func (d *step) seenBefore() map[string]bool {
	out := map[string]bool{}
	for _, r := range d.s.Rounds {
		if r.N >= d.s.Round {
			continue
		}
		for _, f := range r.Findings {
			out[f.ID] = true
			for _, m := range f.MergedFrom {
				out[m] = true
			}
		}
	}
	for _, t := range d.pr.Threads {
		if len(threadMarkers(t, d.c)) > 0 {
			out[t.ID] = true
		}
	}
	return out
}

// fixCausedRound reports a round with a fix-caused finding.
func fixCausedRound(r RoundRecord) bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.FixCaused > 0 })
}

// roundRecord is round n's record, if any.
func (s State) roundRecord(n int) *RoundRecord {
	for i := range s.Rounds {
		if s.Rounds[i].N == n {
			return &s.Rounds[i]
		}
	}
	return nil
}

// fixCausedChain is the drift trigger: the round just finished and the one
// before it both had fix-caused findings, and the one before those did
// not, so the chain reached two rounds just now (one early recap per
// chain; the cadence still holds its own).
func (d *step) fixCausedChain() bool {
	s := d.s
	a, b := s.roundRecord(s.Round-1), s.roundRecord(s.Round)
	if a == nil || b == nil || !fixCausedRound(*a) || !fixCausedRound(*b) {
		return false
	}
	before := s.roundRecord(s.Round - 2)
	return before == nil || !fixCausedRound(*before)
}

// fixCausedWords opens the reply to a thread of a fix-caused finding: the
// tag, and the round and commit that caused it. "" for any other thread.
func fixCausedWords(kept []Finding, thread, prURL string) string {
	for _, f := range kept {
		if f.FixCaused == 0 || (f.ThreadID != thread && !slices.Contains(f.MergedFrom, thread)) {
			continue
		}
		return fmt.Sprintf("`fix-caused`: this point is on lines round %d's commit %s changed.\n\n", f.FixCaused, commitLink(prURL, f.FixCausedCommit))
	}
	return ""
}

// fixCausedTag is a finding's tag in the decision log, "" when untagged.
func fixCausedTag(f Finding) string {
	if f.FixCaused == 0 {
		return ""
	}
	return fmt.Sprintf("fix-caused: round %d (`%s`)", f.FixCaused, text.ShortSHA(f.FixCausedCommit))
}

// fixCausedNote is a round's line in the decision log: which of its
// findings sit on lines which round's commit changed.
func fixCausedNote(r RoundRecord) string {
	by := map[int][]string{}
	var rounds []int
	for _, f := range r.Findings {
		if f.FixCaused == 0 {
			continue
		}
		if _, ok := by[f.FixCaused]; !ok {
			rounds = append(rounds, f.FixCaused)
		}
		by[f.FixCaused] = append(by[f.FixCaused], f.ID)
	}
	var parts []string
	for _, n := range rounds {
		parts = append(parts, fmt.Sprintf("%s on lines round %d's commit changed", strings.Join(by[n], ", "), n))
	}
	return strings.Join(parts, "; ")
}

// addFixCaused carries the tags into the recap's input: each fix-caused
// finding's ledger summary names the round that caused it, and a
// "fix-caused" signal lists the rounds, saying when two came in a row.
func addFixCaused(in *recap.Input, rounds []RoundRecord) {
	tag := map[string]int{}
	var fixRounds []int
	var parts []string
	inRow := false
	for _, r := range rounds {
		if !fixCausedRound(r) {
			continue
		}
		if len(fixRounds) > 0 && fixRounds[len(fixRounds)-1] == r.N-1 {
			inRow = true
		}
		fixRounds = append(fixRounds, r.N)
		parts = append(parts, fmt.Sprintf("round %d (%s)", r.N, fixCausedNote(r)))
		for _, f := range r.Findings {
			if f.FixCaused > 0 {
				tag[fmt.Sprintf("%d/%s", r.N, f.ID)] = f.FixCaused
			}
		}
	}
	if len(fixRounds) == 0 {
		return
	}
	for i := range in.Rounds {
		for j := range in.Rounds[i].Findings {
			e := &in.Rounds[i].Findings[j]
			if n := tag[fmt.Sprintf("%d/%s", in.Rounds[i].N, e.ID)]; n > 0 {
				e.Summary = fmt.Sprintf("[fix-caused by round %d] %s", n, e.Summary)
			}
		}
	}
	detail := "new findings on lines the round before had just changed: " + strings.Join(parts, "; ")
	if inRow {
		detail += "; two fix-caused rounds in a row: the fixes are making the work they fix"
	}
	in.Signals = append(in.Signals, recap.Signal{Kind: signalFixCaused, Rounds: fixRounds, Detail: detail})
}

// signalFixCaused is the recap's drift signal of fix-caused rounds.
const signalFixCaused = "fix-caused"
