package prloop

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// BaseSyncer is a workspace that can bring a branch that is behind its
// base up to date (PR-S14): merge the base into the PR's head, run the
// tests, and push the merge commit with the round's trailer (never a
// force-push). A merge that conflicts or turns the tests red makes no
// commit and says why in FixResult.SyncWhy.
type BaseSyncer interface {
	SyncBase(ctx context.Context, pr *forge.PullRequest, round int) (FixResult, error)
}

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

// syncBase performs ActSyncBase on a workspace that can.
func (l *Loop) syncBase(ctx context.Context, pr *forge.PullRequest, round int, reason string) (FixResult, error) {
	bs, ok := l.Workspace.(BaseSyncer)
	if !ok {
		return FixResult{}, fmt.Errorf("sync base: the workspace cannot merge the base")
	}
	l.report(engine.Event{Kind: "fix", Round: round, Message: fmt.Sprintf("%s: merging %s in (sync_base)", reason, pr.BaseRef)})
	fr, err := bs.SyncBase(ctx, pr, round)
	if err != nil {
		return fr, err
	}
	fr.Sync = true
	msg := "base sync made no commit: " + fr.SyncWhy
	if fr.CommitSHA != "" {
		msg = fmt.Sprintf("merged %s into the branch, tests passed, pushed %s", pr.BaseRef, text.ShortSHA(fr.CommitSHA))
	}
	l.report(engine.Event{Kind: "fix", Round: round, Message: msg, Data: fr})
	return fr, nil
}
