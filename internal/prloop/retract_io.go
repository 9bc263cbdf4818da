package prloop

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/forge"
)

// headStill re-reads the PR just before a verdict for a proved head is
// published (the ready label): a head that moved since the observation
// the verdict was decided on gets no verdict (PR-T14). The read may be
// answered by the change probe, so an unchanged PR costs one free
// request.
func (l *Loop) headStill(ctx context.Context, pr *forge.PullRequest, a Action) error {
	if a.SHA == "" || a.Label != LabelReady {
		return nil
	}
	now, err := l.Forge.Observe(forge.WithProbe(ctx), pr.Ref)
	if err != nil {
		return fmt.Errorf("re-read the pull request before publishing its verdict: %w", err)
	}
	if now.HeadSHA != a.SHA {
		return &ErrHeadMoved{Proved: a.SHA, Head: now.HeadSHA}
	}
	return nil
}
