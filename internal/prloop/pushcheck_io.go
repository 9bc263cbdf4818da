package prloop

import (
	"context"

	"github.com/convergeloop/converge/internal/forge"
)

// PushChecker is a Workspace whose fix checks the round's commit before
// pushing it (PR-S8).
type PushChecker interface {
	FixChecked(ctx context.Context, pr *forge.PullRequest, round int, findings []Finding, check PushCheck) (FixResult, error)
}
