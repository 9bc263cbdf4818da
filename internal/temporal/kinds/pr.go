// Package kinds are converge's loop kinds on the Temporal engine: for
// each, the pure parts the workflow runs (its Decide, Stepped and Fail,
// its first state, how a state reads) made from the kind's own package,
// and a Bind the caller supplies, since binding a loop on a worker means
// building its forge client, workspace and agents (internal/cli).
package kinds

import (
	"context"
	"encoding/json"

	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal"
)

// PRSetup is what Decide needs of a PR loop, learned by its first bind
// on a worker: the PR, its settings (the base branch's .converge.yaml
// read there) and the run's mode.
type PRSetup struct {
	// RunID names the run's lease on the PR's head (PR-T14), as the
	// workflow's first run knows it.
	RunID       string        `json:"run_id,omitempty"`
	Ref         forge.PRRef   `json:"ref"`
	Config      prloop.Config `json:"config"`
	DryRun      bool          `json:"dry_run,omitempty"`
	DisposeOnly bool          `json:"dispose_only,omitempty"`
}

// PRParams are a PR loop's start parameters: the `converge pr` flags
// that are the loop's own settings. The token, CA and state directory
// are each worker's; nothing here is a secret (the history keeps it).
type PRParams struct {
	URL               string            `json:"url"`
	APIURL            string            `json:"api_url,omitempty"`
	Agent             string            `json:"agent,omitempty"`
	AgentCmd          string            `json:"agent_cmd,omitempty"`
	ReviewAgent       string            `json:"review_agent,omitempty"`
	ReviewAgentCmd    string            `json:"review_agent_cmd,omitempty"`
	JudgeAgent        string            `json:"judge_agent,omitempty"`
	JudgeAgentCmd     string            `json:"judge_agent_cmd,omitempty"`
	Set               map[string]string `json:"set,omitempty"`
	DryRun            bool              `json:"dry_run,omitempty"`
	DisposeOnly       bool              `json:"dispose_only,omitempty"`
	AllowHostMismatch bool              `json:"allow_host_mismatch,omitempty"`
	NoAgentCheck      bool              `json:"no_agent_check,omitempty"`
	// TakeOver drives the PR although another converge's live lease is
	// on its head (PR-T14).
	TakeOver bool `json:"take_over,omitempty"`
	// PriorVerdictHead is the head the PR's newest earlier run proved
	// two-stable (PriorRun), which a new head breaks (PR-T14).
	PriorVerdictHead string `json:"prior_verdict_head,omitempty"`
	// Resume is the state of the PR's newest earlier workflow when a
	// signal or `converge stop` stopped it (PriorRun): this one goes on
	// from it, with its round count and clock (PR-T14, PR-G3).
	Resume *prloop.State `json:"resume,omitempty"`
}

// Target is the PR the parameters name (the URL as given when it does
// not parse: the bind then refuses it).
func (p PRParams) Target() string {
	ref, err := forge.ParsePRURL(p.URL)
	if err != nil {
		return p.URL
	}
	return ref.String()
}

// PRKind is the PR loop's kind on the Temporal engine.
type PRKind = temporal.Kind[PRParams, PRSetup, prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult]

// PRBind binds a PR loop on a worker.
type PRBind = func(ctx context.Context, b temporal.Binding[PRParams, PRSetup]) (*PRBound, error)

// PRBound is a PR loop bound on a worker.
type PRBound = temporal.Bound[prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult, PRSetup]

// PR is the PR loop's kind, bound on workers by bind (nil where nothing
// runs activities: a client, a replay).
func PR(bind PRBind) *PRKind {
	return &PRKind{
		Name:   "pr",
		Target: PRParams.Target,
		Initial: func(p PRParams, d PRSetup) prloop.State {
			st := prloop.State{Phase: prloop.PhaseStart}
			if p.Resume != nil && prloop.Reopens(*p.Resume) {
				st = prloop.Reopen(*p.Resume)
			}
			st.RunID = d.RunID
			if st.PriorVerdictHead == "" {
				st.PriorVerdictHead = p.PriorVerdictHead
			}
			return st
		},
		Decider: func(d PRSetup, r engine.Reporter) temporal.Decider[prloop.State, prloop.Observation, prloop.Action] {
			// The same Loop's Decide, Stepped and Fail, bound to nothing
			// but the settings: they do no IO.
			return prloop.NewLoop(d.Ref, prloop.Deps{Config: d.Config, DryRun: d.DryRun, DisposeOnly: d.DisposeOnly, Reporter: r})
		},
		Bind:      bind,
		Transient: prloop.Transient,
		Progress: func(st prloop.State) engine.Progress {
			return engine.Progress{Phase: string(st.Phase), Round: st.Round, Head: st.HeadSeen}
		},
		Terminal: PRTerminal,
	}
}

// PriorRun reads the newest earlier workflow on p's PR, as a local run
// reads its store's earlier runs: the head it proved two-stable when that
// is the verdict the PR may still show (prloop.PriorVerdictHead), and its
// state when a signal or `converge stop` stopped it (prloop.Reopens), to
// resume. Nothing when there is none, a workflow still runs on the PR, or
// the cluster cannot say.
func PriorRun(ctx context.Context, c client.Client, p PRParams) (verdictHead string, stopped *prloop.State) {
	run, _, err := temporal.RunOf(ctx, c, temporal.WorkflowID("pr", p.Target()))
	if err != nil {
		return "", nil
	}
	var st prloop.State
	if run.Finished() && len(run.State) > 0 && json.Unmarshal(run.State, &st) == nil && prloop.Reopens(st) {
		stopped = &st
	}
	return prloop.PriorVerdictHead([]store.Run{run}), stopped
}

// PRTerminal reads a PR loop's terminal as the engines record it.
func PRTerminal(st prloop.State) (engine.Terminal, bool) { return prloop.Adapter{}.Terminal(st) }
