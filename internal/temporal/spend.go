package temporal

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// What a fleet run's forge calls cost, as the forge said it: each
// activity meters its calls (spendMeter) and hands the sum to the
// workflow in its Outcome; the workflow keeps the run's total in its
// Carry, across continue-as-new, and answers it in its result and the
// spend query. A local run keeps the same figures in its store.

// SpendRow is what a run's calls spent on one rate limit of one
// identity, with the limit as the newest answer that said it.
type SpendRow struct {
	Identity    string    `json:"identity"`
	Resource    string    `json:"resource"`
	Calls       int       `json:"calls"`
	Points      int       `json:"points"`
	Estimated   int       `json:"estimated,omitempty"`
	NotModified int       `json:"not_modified,omitempty"`
	Limit       int       `json:"limit,omitempty"`
	Used        int       `json:"used,omitempty"`
	Remaining   int       `json:"remaining,omitempty"`
	ResetAt     time.Time `json:"reset_at,omitzero"`
	ReadAt      time.Time `json:"read_at,omitzero"`
}

// Store is r as the state store records a run's spend.
func (r SpendRow) Store(runID string) store.ForgeSpend {
	return store.ForgeSpend{RunID: runID, Identity: r.Identity, Resource: r.Resource,
		Calls: r.Calls, Points: r.Points, Estimated: r.Estimated, NotModified: r.NotModified,
		Limit: r.Limit, Used: r.Used, Remaining: r.Remaining, ResetAt: r.ResetAt, ReadAt: r.ReadAt, UpdatedAt: r.ReadAt}
}

// addSpend is into with more added, row by row, sorted by identity and
// resource: workflow code, so deterministic (no map order, no clock).
func addSpend(into, more []SpendRow) []SpendRow {
	for _, m := range more {
		i := slices.IndexFunc(into, func(r SpendRow) bool { return r.Identity == m.Identity && r.Resource == m.Resource })
		if i < 0 {
			into = append(into, m)
			continue
		}
		r := &into[i]
		r.Calls += m.Calls
		r.Points += m.Points
		r.Estimated += m.Estimated
		r.NotModified += m.NotModified
		if !m.ReadAt.IsZero() && !m.ReadAt.Before(r.ReadAt) {
			r.Limit, r.Used, r.Remaining, r.ResetAt, r.ReadAt = m.Limit, m.Used, m.Remaining, m.ResetAt, m.ReadAt
		}
	}
	slices.SortFunc(into, func(a, b SpendRow) int {
		return cmp.Or(cmp.Compare(a.Identity, b.Identity), cmp.Compare(a.Resource, b.Resource))
	})
	return into
}

// spendMeter sums one activity's charges per rate limit (forge.Meter).
type spendMeter struct {
	mu   sync.Mutex
	rows []SpendRow
}

var _ forge.Meter = (*spendMeter)(nil)

func (m *spendMeter) Charge(c forge.Charge) {
	r := SpendRow{Resource: c.Resource, Calls: 1, Points: c.Points}
	if c.Estimated {
		r.Estimated = c.Points
	}
	if c.NotModified {
		r.NotModified = 1
	}
	if c.Budget.Known() {
		r.Limit, r.Used, r.Remaining, r.ResetAt, r.ReadAt = c.Budget.Limit, c.Budget.Used, c.Budget.Remaining, c.Budget.ResetAt, c.At
		if r.ReadAt.IsZero() {
			r.ReadAt = time.Now()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = addSpend(m.rows, []SpendRow{r})
}

// spent is what the activity's calls cost, counted against identity (the
// bound run's; "" when the run could not be bound).
func (m *spendMeter) spent(identity string) []SpendRow {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.rows)
	for i := range out {
		out[i].Identity = identity
	}
	return out
}
