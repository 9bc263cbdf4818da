package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
)

// priced is the usage of runs agent runs that reported cost dollars in
// all, or that reported no price when cost is negative.
func priced(runs int, cost float64) agent.Usage {
	u := agent.Usage{InputTokens: 1000, OutputTokens: 100, Runs: runs}
	if cost >= 0 {
		u.CostUSD, u.CostReported, u.PricedRuns = cost, true, runs
	}
	return u
}

// spentRound is a run about to start round 3, whose two rounds' agents
// reported u1 and u2, under a cost bound of max dollars.
func spentRound(max float64, u1, u2 agent.Usage) (State, Config) {
	s := verifying("h1", 2)
	s.Kept = []Finding{{ID: "T1", Verdict: "structural"}}
	s.ConsecutiveStructural = 1
	s.Rounds[0].Usage, s.Rounds[1].Usage = u1, u2
	c := cfg()
	c.MaxCostUSD = max
	return s, c
}

// TestPR_T5_CostBoundEndsTheRun: once the cost the agents reported over
// every round reaches max_cost, the next round never starts: the run ends
// cap-exhausted (exit 4), saying what was spent. Below the bound, or with
// no bound, the round starts.
func TestPR_T5_CostBoundEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    float64
		u1, u2 agent.Usage
		end    bool
		says   string
	}{
		{"below the bound", 1.00, priced(2, 0.40), priced(1, 0.50), false, ""},
		{"at the bound", 1.00, priced(2, 0.40), priced(1, 0.60), true, "max_cost $1.00 spent: the agents reported $1.00 in 3 agent runs"},
		{"past the bound", 1.00, priced(2, 0.70), priced(1, 0.50), true, "the agents reported $1.20"},
		{"no bound", 0, priced(2, 70), priced(1, 50), false, ""},
		{"no agent ran", 1.00, agent.Usage{}, agent.Usage{}, false, ""},
		{"free runs (suggest)", 1.00, priced(3, 0), priced(1, 0), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := spentRound(tc.max, tc.u1, tc.u2)
			s2, acts, term := Decide(s, obs(at(1), newPR("h1")), c)
			if !tc.end {
				wantTerminal(t, term, "")
				if s2.Round != 3 || findAct(acts, ActRequestReview, "") == nil {
					t.Fatalf("round 3 did not start: %v", sig(acts))
				}
				return
			}
			wantTerminal(t, term, ReasonCapExhausted)
			wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status failure h1")
			if term.ExitCode != 4 || !strings.Contains(term.Message, tc.says) || s2.Round != 2 {
				t.Fatalf("terminal %+v (round %d), want exit 4 saying %q", term, s2.Round, tc.says)
			}
		})
	}
}

// TestPR_T5_UnknownCostNeverPassesTheBound: a bounded run in which an
// agent run reported no price cannot prove it is under its bound, so it
// ends cap-exhausted saying the bound cannot be checked, whatever the
// priced runs add up to. Without a bound the same usage goes on.
func TestPR_T5_UnknownCostNeverPassesTheBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		u1, u2 agent.Usage
		says   string
	}{
		{"one run without a price", priced(2, 0.10), priced(1, -1), "1 of 3 agent runs reported no price (at least $0.10 spent)"},
		{"no run with a price", priced(2, -1), priced(1, -1), "the agents reported no price (3 agent runs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := spentRound(5, tc.u1, tc.u2)
			_, _, term := Decide(s, obs(at(1), newPR("h1")), c)
			wantTerminal(t, term, ReasonCapExhausted)
			if !strings.Contains(term.Message, "max_cost $5.00 cannot be checked: "+tc.says) {
				t.Fatalf("message %q, want it to say %q", term.Message, tc.says)
			}
			s, c = spentRound(0, tc.u1, tc.u2)
			_, _, term = Decide(s, obs(at(1), newPR("h1")), c)
			wantTerminal(t, term, "")
		})
	}
}

// TestPR_T5_CostBoundMidRound: the bound is a guard like the wall clock:
// spent while a review is awaited, the run ends there; a pushed fix's
// replies still go out first (PR-S12).
func TestPR_T5_CostBoundMidRound(t *testing.T) {
	s := awaiting("h1", 1)
	s.ConsecutiveStructural = 1
	s.Rounds[0].Usage = priced(1, 2)
	o := obs(at(1), newPR("h1"))
	o.BotStartedMax = 101
	c := cfg()
	c.MaxCostUSD = 1
	_, _, term := Decide(s, o, c)
	wantTerminal(t, term, ReasonCapExhausted)

	r := verifying("h1", 1)
	r.Phase = PhaseReply
	r.ConsecutiveStructural = 1
	r.Rounds[0].Usage = priced(1, 2)
	r.Threads = []ThreadRecord{{ThreadID: "T1", Round: 1, Disposition: DispAddressed, HeadSHA: "h1"}}
	pr := newPR("h1")
	pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
	_, acts, term := Decide(r, obs(at(2), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
}
