package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/server"
)

// defaultPollBudget is the fleet's fallback polls a minute: one a second.
// An unchanged PR's poll is one conditional request, free on GitHub's
// primary limit; one that finds a change adds a GraphQL read, so even a
// minute of changed PRs stays near GraphQL's 5,000 points an hour.
const defaultPollBudget = 60

func addServeBudgetFlags(f *pflag.FlagSet, opts *serveOptions) {
	f.IntVar(&opts.PollBudget, "poll-budget", defaultPollBudget, "fallback polls a minute across every loop (a webhook's wake takes none)")
}

// checkServeBudget refuses a budget that allows no poll, and --keep: a
// server's waiting loops hold no worktree and its finished runs leave
// none (prune.go).
func checkServeBudget(opts *serveOptions) error {
	if opts.PollBudget < 1 {
		return usageErr("--poll-budget %d: want at least 1 fallback poll a minute (webhooks wake loops at once; polls catch what they missed)", opts.PollBudget)
	}
	if opts.pr.Keep {
		return usageErr("--keep keeps a run's worktree; serve's loops hold none while they wait and leave none when they end: use converge pr --keep on the PR")
	}
	return nil
}

// newPollBudget is the fleet's budget of fallback polls.
func newPollBudget(opts *serveOptions) (*server.Budget, error) {
	b, err := server.NewBudget(opts.PollBudget, 0, nil)
	if err != nil {
		return nil, usageErr("--poll-budget: %v", err)
	}
	return b, nil
}

// pollGate is the fleet's budget as the engine takes it; none without one.
func (f *fleet) pollGate() engine.PollBudget {
	if f.polls == nil {
		return nil
	}
	return f.polls
}

// prune is the Manager's Pruner: it removes from the clone cache the
// worktrees of runs that are over and every clone no live run is
// registered in, so a finished run leaves no worktree and a repository no
// loop works on leaves no clone (a loop that needs it again clones again).
func (f *fleet) prune(ctx context.Context, live func(run string) bool) {
	removed, err := prwork.PruneClones(ctx, filepath.Join(f.stateDir, "work"), live)
	f.shared.Lock()
	defer f.shared.Unlock()
	if err != nil {
		fmt.Fprintf(f.ios.ErrOut, "prune the clone cache: %v\n", err)
	}
	if len(removed) > 0 {
		fmt.Fprintf(f.ios.Out, "pruned %d clone(s) no run uses\n", len(removed))
	}
}
