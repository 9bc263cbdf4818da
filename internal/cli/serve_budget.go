package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
)

// defaultPollPoints is the fleet's fallback polls' budget in forge
// points an hour: half a point a second, 36% of GitHub's 5,000 GraphQL
// points an hour, which leaves the rest to the loops' own rounds (the
// reads right after their actions, their writes) and to whatever else
// shares the token. A poll of an unchanged PR (a probe answered 304)
// costs nothing; one that finds a change what the forge said its reads
// cost (on GitHub the probe's REST point and about 3 GraphQL points).
const defaultPollPoints = 1800

func addServeBudgetFlags(f *pflag.FlagSet, opts *serveOptions) {
	f.IntVar(&opts.PollPoints, "poll-points", defaultPollPoints, "forge points an hour every loop's fallback polls share, charged as the forge says them: a poll of an unchanged PR costs 0, one that reads it whole what its reads cost (a webhook's wake takes none)")
	f.IntVar(&opts.PollBudget, "poll-budget", 0, "fallback polls a minute across every loop, whatever they cost (replaced by --poll-points)")
	_ = f.MarkDeprecated("poll-budget", "it counts polls, not what they cost: give --poll-points N, forge points an hour (default 1800)")
}

// checkServeBudget refuses a budget that allows no poll, both budgets at
// once, and --keep: a server's waiting loops hold no worktree and its
// finished runs leave none (prune.go).
func checkServeBudget(opts *serveOptions, changed func(string) bool) error {
	if changed("poll-budget") {
		if changed("poll-points") {
			return cmdutil.UsageErr("--poll-budget and --poll-points both given: --poll-budget counts polls, --poll-points what they cost; give --poll-points N alone (forge points an hour)")
		}
		if opts.PollBudget < 1 {
			return cmdutil.UsageErr("--poll-budget %d: want at least 1 fallback poll a minute; better, --poll-points N: forge points an hour (webhooks wake loops at once; polls catch what they missed)", opts.PollBudget)
		}
	} else if opts.PollPoints < 1 {
		return cmdutil.UsageErr("--poll-points %d: want at least 1 forge point an hour for fallback polls (default %d; webhooks wake loops at once, polls catch what they missed)", opts.PollPoints, defaultPollPoints)
	}
	if opts.pr.Keep {
		return cmdutil.UsageErr("--keep keeps a run's worktree; serve's loops hold none while they wait and leave none when they end: use converge pr --keep on the PR")
	}
	return nil
}

// newPollBudget is the fleet's budget of fallback polls: forge points an
// hour, or with the old --poll-budget polls a minute.
func newPollBudget(opts *serveOptions) (*server.Budget, error) {
	if opts.PollBudget > 0 {
		b, err := server.NewBudget(opts.PollBudget, 0, nil)
		if err != nil {
			return nil, cmdutil.UsageErr("--poll-budget: %v", err)
		}
		return b, nil
	}
	b, err := server.NewPointBudget(opts.PollPoints, 0, 0, nil)
	if err != nil {
		return nil, cmdutil.UsageErr("--poll-points: %v", err)
	}
	return b, nil
}

// The fleet's budget charges each poll what it spent.
var _ engine.PollCharger = (*server.Budget)(nil)

// stats are the fleet's figures /metrics shows: what each identity (an
// App's installation, a token's user) spent on each rate limit, as the
// store keeps it as the calls are made (forgespend.go).
func (f *fleet) stats() server.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ids, err := f.db.IdentityForgeSpend(ctx)
	if err != nil {
		return server.Stats{}
	}
	st := server.Stats{Identities: ids}
	// The agents' cost, as each run's usage report sums it (what converge
	// proof shows): read at the scrape, so nothing is kept twice.
	runs, err := f.db.ListRuns(ctx, store.ListOptions{})
	if err != nil {
		return st
	}
	for _, r := range runs {
		u := usageOfRun(r)
		if u == nil {
			continue
		}
		if u.Total.CostUSD != nil {
			st.AgentCostUSD += *u.Total.CostUSD
		}
		st.AgentRuns += u.Total.AgentRuns
		st.AgentPricedRuns += u.Total.PricedRuns
	}
	return st
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
