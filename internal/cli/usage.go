package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

// runUsage is what a run's agents reported consuming, as converge proof
// shows it (PR-M5): per round (PR), iteration (loop) or task (plan), and
// in total. A cost no agent reported is "not reported", never $0.
type runUsage struct {
	// Parts are the rounds, iterations or tasks, in order.
	Parts []usagePart `json:"parts"`
	Total agent.Spend `json:"total"`
}

// usagePart is one round, iteration or task of a runUsage.
type usagePart struct {
	Name string `json:"name"` // "round 1", "iteration 01", "task a"
	agent.Spend
}

// usageOfRun reads a run's usage from its stored state; nil when the
// state cannot be read.
func usageOfRun(r store.Run) *runUsage {
	if len(r.State) == 0 {
		return nil
	}
	switch {
	case r.Kind == checkloop.Kind:
		var st checkloop.State
		if json.Unmarshal(r.State, &st) != nil {
			return nil
		}
		res := checkloop.BuildResult(st, r.UpdatedAt)
		u := &runUsage{Parts: []usagePart{}, Total: res.Usage}
		for _, it := range res.Iterations {
			if it.Usage != nil {
				u.Parts = append(u.Parts, usagePart{Name: "iteration " + strings.TrimPrefix(it.ID, st.RunID+".iter."), Spend: *it.Usage})
			}
		}
		return u
	case r.Kind == plan.Kind:
		var st plan.State
		if json.Unmarshal(r.State, &st) != nil {
			return nil
		}
		res := plan.BuildResult(st, time.Now())
		u := &runUsage{Parts: []usagePart{}, Total: res.Usage}
		for _, t := range res.Tasks {
			if t.Usage != nil {
				u.Parts = append(u.Parts, usagePart{Name: "task " + t.ID, Spend: *t.Usage})
			}
		}
		return u
	case strings.HasPrefix(r.Kind, "pr"):
		var st prloop.State
		if json.Unmarshal(r.State, &st) != nil {
			return nil
		}
		rep := prloop.UsageOf(st)
		if t := st.Terminal; t != nil && t.Usage != nil {
			rep = t.Usage
		}
		return prUsage(rep)
	}
	return nil
}

func prUsage(rep *prloop.UsageReport) *runUsage {
	u := &runUsage{Parts: []usagePart{}, Total: rep.Total}
	for _, r := range rep.Rounds {
		u.Parts = append(u.Parts, usagePart{Name: fmt.Sprintf("round %d", r.Round), Spend: r.Spend})
	}
	return u
}

// writeUsage prints u under converge proof's other lines.
func writeUsage(w io.Writer, u *runUsage) {
	if u == nil {
		return
	}
	fmt.Fprintf(w, "  agent usage                  %s\n", u.Total)
	for _, p := range u.Parts {
		fmt.Fprintf(w, "    %-26s %s\n", p.Name, p.Spend)
	}
}
