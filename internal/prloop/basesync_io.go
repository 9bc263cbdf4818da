package prloop

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

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

// BaseSyncer is a workspace that can bring a branch that is behind its
// base up to date (PR-S14): merge the base into the PR's head, run the
// tests, and push the merge commit with the round's trailer (never a
// force-push). A merge that conflicts or turns the tests red makes no
// commit and says why in FixResult.SyncWhy.
type BaseSyncer interface {
	SyncBase(ctx context.Context, pr *forge.PullRequest, round int) (FixResult, error)
}
