package prloop

import (
	"context"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/text"
)

// recapScope fills in's original scope and computes its signals again
// with it. A scope that cannot be read leaves the recap without the base
// diff and the signals that need the PR's files, and says why: the judge
// still decides on the ledger.
func (l *Loop) recapScope(ctx context.Context, pr *forge.PullRequest, in *recap.Input) {
	sc, ok := l.Workspace.(RecapScoper)
	if !ok {
		return
	}
	if err := sc.RecapScope(ctx, pr, in); err != nil {
		in.ScopeFiles, in.BaseDiff, in.ScopeError = nil, "", text.Clip(err.Error(), 300)
	}
	// The signals the ledger and diffs give are computed again with the
	// scope; the loop's own (fix-caused, from the rounds' findings) stay.
	var own []recap.Signal
	for _, sg := range in.Signals {
		if sg.Kind == signalFixCaused {
			own = append(own, sg)
		}
	}
	in.Signals = append(recap.Signals(*in), own...)
}

// RecapScoper is a workspace that reads a recap's original scope from the
// repository (PR-G2): the files and the diff of base...ScopeHead, the PR
// before the loop's first commit, clipped (recap.ClipDiff).
type RecapScoper interface {
	RecapScope(ctx context.Context, pr *forge.PullRequest, in *recap.Input) error
}
