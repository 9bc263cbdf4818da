package prloop

import (
	"fmt"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// syncDue is PR-S14's trigger: sync_base is on, the branch is behind its
// base (merges cleanly but lacks base commits), and no earlier sync of
// this head onto this base made no commit. A DIRTY branch never gets
// here: it ends base-moved first (PR-T7).
func (d *step) syncDue() bool {
	return d.c.SyncBase && d.behind() != "" && d.s.BaseSyncSkip != syncKey(d.head, d.pr.BaseSHA)
}

// behind says how the branch is known to lack commits of its base: the
// forge's BEHIND merge state, or its compare's count; "" when neither
// shows it.
func (d *step) behind() string {
	switch {
	case d.pr.MergeState == forge.MergeBehind:
		return "BEHIND"
	case d.o.BaseBehind > 0:
		return fmt.Sprintf("%d commit(s) behind", d.o.BaseBehind)
	}
	return ""
}

func syncKey(head, base string) string { return head + ".." + base }

// syncBase asks for the sync when everything else of two-stable holds:
// the merge commit is the round's one commit (PR-S11), so a round that
// already committed leaves it to a new round, which reviews the new head
// anyway.
func (d *step) syncBase() bool {
	s := &d.s
	if d.round().CommitSHA != "" {
		s.Phase = PhaseRequest
		return true
	}
	d.acts = append(d.acts, Action{Kind: ActSyncBase, Key: roundKey(s.Round, "sync-base"), Round: s.Round, SHA: d.head,
		Reason: fmt.Sprintf("%s is %s %s", d.pr.HeadRef, d.behind(), d.pr.BaseRef)})
	s.Phase = PhaseFix
	return false
}

// baseSynced records a base sync's outcome in the round: the merge commit
// pushed, or why none was, so the same head is not synced onto the same
// base again.
func (d *step) baseSynced(res *FixResult) {
	s, rr := &d.s, d.round()
	if res.CommitSHA != "" {
		s.BaseSyncSkip, s.BaseSyncWhy = "", ""
		rr.Notes = append(rr.Notes, fmt.Sprintf("base sync: merged %s into the branch as %s, tests passed, pushed", d.pr.BaseRef, text.ShortSHA(res.CommitSHA)))
		return
	}
	why := res.SyncWhy
	if why == "" {
		why = "the sync made no commit"
	}
	s.BaseSyncSkip, s.BaseSyncWhy = syncKey(d.head, d.pr.BaseSHA), why
	rr.Notes = append(rr.Notes, "base sync: no commit: "+why)
}
