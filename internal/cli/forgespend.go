package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// What a run's forge calls cost, as the forge said it (forge.Charge): kept
// in the store per run and per identity as the calls are made (runMeter),
// shown by converge status, converge proof and serve's /metrics.

// runMeter is a run's forge meter: each answered call is added to the
// run's spend and its identity's in the store. A store that cannot take
// it is said once, and the run goes on: spend is a record, not a gate.
type runMeter struct {
	db       *store.Store
	run      string
	identity string
	warn     func(error)
	once     sync.Once
}

func (m *runMeter) Charge(c forge.Charge) {
	if err := m.db.AddForgeSpend(context.Background(), m.run, m.identity, c); err != nil && m.warn != nil {
		m.once.Do(func() { m.warn(err) })
	}
}

// rateIdentity names whose limits f's calls count against: the forge's
// own word (an App's installation, the token's user), else the login
// pre-flight found, else the host. Never the token.
func rateIdentity(ctx context.Context, f forge.Forge, ref forge.PRRef, self string) string {
	if id, ok := f.(forge.Identifier); ok {
		if s, err := id.RateIdentity(ctx); err == nil && s != "" {
			return s
		}
	}
	if self != "" {
		return ref.Host + "/" + self
	}
	return ref.Host
}

// withRunMeter is ctx metering every forge call into the run's spend.
func withRunMeter(ctx context.Context, db *store.Store, run string, f forge.Forge, ref forge.PRRef, self string, warn func(error), earlier ...forge.Charge) context.Context {
	if db == nil || run == "" {
		return ctx
	}
	m := &runMeter{db: db, run: run, identity: rateIdentity(ctx, f, ref, self), warn: warn}
	for _, c := range earlier {
		m.Charge(c)
	}
	return forge.WithMeter(ctx, m)
}

// chargeLog keeps the charges of calls made before a run has an id (its
// pre-flight), for the run's meter to record first.
type chargeLog struct {
	mu sync.Mutex
	cs []forge.Charge
}

func (l *chargeLog) Charge(c forge.Charge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cs = append(l.cs, c)
}

// take is what was kept, once: a later run of the same parameters (a
// watch's) is charged only its own pre-flight.
func (l *chargeLog) take() []forge.Charge {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.cs
	l.cs = nil
	return cs
}

// forgeSpendView is a run's forge spend as status and proof print it.
type forgeSpendView struct {
	// Calls, Points (EstimatedPoints of them no answer said) and
	// NotModified (calls answered 304, free) over every limit.
	Calls           int `json:"calls"`
	Points          int `json:"points"`
	EstimatedPoints int `json:"estimated_points"`
	NotModified     int `json:"not_modified"`
	// Limits are the spend per identity and rate limit, with the limit as
	// the forge last said it.
	Limits []forgeLimitView `json:"limits"`
}

// forgeLimitView is one identity's spend on one rate limit.
type forgeLimitView struct {
	Identity    string     `json:"identity"`
	Resource    string     `json:"resource"`
	Calls       int        `json:"calls"`
	Points      int        `json:"points"`
	Estimated   int        `json:"estimated_points"`
	NotModified int        `json:"not_modified"`
	Limit       int        `json:"limit,omitempty"`
	Remaining   *int       `json:"remaining,omitempty"`
	ResetAt     *time.Time `json:"reset_at,omitempty"`
	ReadAt      *time.Time `json:"read_at,omitempty"`
}

// spendView sums a run's rows; nil when the run made no metered call.
func spendView(rows []store.ForgeSpend) *forgeSpendView {
	if len(rows) == 0 {
		return nil
	}
	v := &forgeSpendView{Limits: []forgeLimitView{}}
	for _, f := range rows {
		v.Calls += f.Calls
		v.Points += f.Points
		v.EstimatedPoints += f.Estimated
		v.NotModified += f.NotModified
		l := forgeLimitView{Identity: f.Identity, Resource: f.Resource, Calls: f.Calls, Points: f.Points, Estimated: f.Estimated, NotModified: f.NotModified}
		if !f.ReadAt.IsZero() {
			rem, read := f.Remaining, f.ReadAt.UTC()
			l.Limit, l.Remaining, l.ReadAt = f.Limit, &rem, &read
			if !f.ResetAt.IsZero() {
				reset := f.ResetAt.UTC()
				l.ResetAt = &reset
			}
		}
		v.Limits = append(v.Limits, l)
	}
	sort.SliceStable(v.Limits, func(i, j int) bool {
		a, b := v.Limits[i], v.Limits[j]
		if a.Identity != b.Identity {
			return a.Identity < b.Identity
		}
		return a.Resource < b.Resource
	})
	return v
}

// last is the limit the forge said last: what status shows as left.
func (v *forgeSpendView) last() *forgeLimitView {
	var out *forgeLimitView
	for i := range v.Limits {
		l := &v.Limits[i]
		if l.ReadAt != nil && (out == nil || l.ReadAt.After(*out.ReadAt)) {
			out = l
		}
	}
	return out
}

// spentCell is status's FORGE column: points and calls.
func (v *forgeSpendView) spentCell() string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%d pts, %d calls", v.Points, v.Calls)
}

// leftCell is status's LEFT column: the limit last read and its reset.
func (v *forgeSpendView) leftCell() string {
	if v == nil {
		return "-"
	}
	l := v.last()
	if l == nil {
		return "-"
	}
	s := fmt.Sprintf("%d/%d %s", *l.Remaining, l.Limit, l.Resource)
	if l.ResetAt != nil {
		s += " to " + l.ResetAt.Local().Format(time.TimeOnly)
	}
	return s
}

// writeForgeSpend prints v under converge proof's other lines.
func writeForgeSpend(w io.Writer, v *forgeSpendView) {
	if v == nil {
		return
	}
	est := ""
	if v.EstimatedPoints > 0 {
		est = fmt.Sprintf(" (%d estimated)", v.EstimatedPoints)
	}
	fmt.Fprintf(w, "  forge spend                  %d point(s)%s in %d call(s), %d answered 304\n", v.Points, est, v.Calls, v.NotModified)
	for _, l := range v.Limits {
		line := fmt.Sprintf("    %-26s %d point(s) in %d call(s)", l.Identity+" "+l.Resource, l.Points, l.Calls)
		if l.Remaining != nil {
			line += fmt.Sprintf("; %d of %d left", *l.Remaining, l.Limit)
			if l.ResetAt != nil {
				line += ", resets " + l.ResetAt.Format(time.RFC3339)
			}
		}
		fmt.Fprintln(w, line)
	}
}

// runSpends reads the spend of runs from db; nil when db is nil.
func runSpends(ctx context.Context, db *store.Store, runs []store.Run) (map[string]*forgeSpendView, error) {
	if db == nil || len(runs) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	rows, err := db.RunForgeSpend(ctx, ids...)
	if err != nil {
		return nil, err
	}
	out := map[string]*forgeSpendView{}
	for id, rs := range rows {
		out[id] = spendView(rs)
	}
	return out, nil
}
