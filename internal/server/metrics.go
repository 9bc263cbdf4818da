package server

import (
	"net/http"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/convergeloop/converge/internal/store"
)

// metrics is the server's own registry: nothing global, so two servers in
// one test process do not collide.
type metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	wakes      prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "converge_webhook_deliveries_total",
			Help: "Webhook deliveries received, by event and outcome (accepted, duplicate, unsigned, bad_signature, malformed, ignored, ping, error); a GitLab delivery without its token counts as unsigned, one with a wrong token as bad_signature.",
		}, []string{"event", "outcome"}),
		wakes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "converge_wakes_total",
			Help: "Loop wakes sent after coalescing webhook bursts.",
		}),
	}
	m.reg.MustRegister(m.deliveries, m.wakes, &fleetCollector{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// followed are the events converge acts on; others, and whatever an
// unsigned request claims, count as "other" so a stranger cannot grow the
// metric's label set.
var followed = map[string]bool{
	"pull_request": true, "pull_request_review": true, "pull_request_review_comment": true,
	"pull_request_review_thread": true, "check_run": true, "check_suite": true, "status": true,
	"push": true, "issue_comment": true, "ping": true,
	// GitLab's X-Gitlab-Event values.
	"Merge Request Hook": true, "Note Hook": true, "Pipeline Hook": true, "Push Hook": true,
}

func (m *metrics) delivery(event, outcome string) {
	if !followed[event] {
		event = "other"
	}
	m.deliveries.WithLabelValues(event, outcome).Inc()
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	descLoops = prometheus.NewDesc("converge_loops",
		"Loops the manager holds, by phase.", []string{"phase"}, nil)
	descRequests = prometheus.NewDesc("converge_forge_requests_total",
		"Forge requests answered, by rate limit (the kind label is the forge's name of the limit: graphql, core, api), over every identity.", []string{"kind"}, nil)
	descRemaining = prometheus.NewDesc("converge_forge_rate_limit_remaining",
		"What is left of each rate limit as the forge last said it: the least of any identity's.", []string{"resource"}, nil)
	descAgentCost = prometheus.NewDesc("converge_agent_cost_usd_total",
		"Agent cost in US dollars, as the agents' CLIs reported it, over the runs the store holds.", nil, nil)
	descAgentRuns = prometheus.NewDesc("converge_agent_runs_total",
		"Agent runs over the runs the store holds (which all), and those whose CLI reported a price (which priced): the cost is known in full when the two are equal.", []string{"which"}, nil)
	descBudget = prometheus.NewDesc("converge_poll_budget_available",
		"Fallback poll permits available under the fleet's budget: forge points (converge serve's --poll-points), or polls.", nil, nil)
	descBudgetSpent = prometheus.NewDesc("converge_poll_budget_spent_total",
		"What fallback polls were charged under the fleet's budget: forge points as the forge said them (a probe answered 304 costs 0), or polls.", nil, nil)

	idLabels     = []string{"identity", "resource"}
	descIDPoints = prometheus.NewDesc("converge_forge_identity_points_total",
		"Primary rate-limit points spent, as the forge's answers said them, per identity (a GitHub App installation, else the token's user) and rate limit.", idLabels, nil)
	descIDEstimated = prometheus.NewDesc("converge_forge_identity_estimated_points_total",
		"Of those points, the ones no answer said (a GraphQL mutation's least cost).", idLabels, nil)
	descIDCalls = prometheus.NewDesc("converge_forge_identity_calls_total",
		"Forge requests answered, per identity and rate limit.", idLabels, nil)
	descIDNotModified = prometheus.NewDesc("converge_forge_identity_not_modified_total",
		"Conditional forge requests answered 304 (free on the primary limit), per identity and rate limit.", idLabels, nil)
	descIDLimit = prometheus.NewDesc("converge_forge_identity_rate_limit",
		"The rate limit's size as the forge last said it, per identity and rate limit.", idLabels, nil)
	descIDRemaining = prometheus.NewDesc("converge_forge_identity_rate_limit_remaining",
		"What is left of the rate limit as the forge last said it, per identity and rate limit.", idLabels, nil)
	descIDReset = prometheus.NewDesc("converge_forge_identity_rate_limit_reset_timestamp_seconds",
		"When the rate limit resets (Unix time) as the forge last said it, per identity and rate limit.", idLabels, nil)
)

// fleetCollector reads the fleet at scrape time, so nothing is copied
// between scrapes.
type fleetCollector struct{ s *Server }

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLoops, descRequests, descRemaining, descAgentCost, descAgentRuns, descBudget, descBudgetSpent,
		descIDPoints, descIDEstimated, descIDCalls, descIDNotModified, descIDLimit, descIDRemaining, descIDReset} {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	phases := map[string]float64{}
	for _, r := range c.s.opts.Loops.Snapshot() {
		p := r.Phase
		if p == "" {
			p = "unknown"
		}
		phases[p]++
	}
	emit(ch, descLoops, prometheus.GaugeValue, phases)
	if c.s.opts.Stats != nil {
		st := c.s.opts.Stats()
		requests, remaining := map[string]float64{}, map[string]float64{}
		for _, f := range st.Identities {
			emitIdentity(ch, f)
			requests[f.Resource] += float64(f.Calls)
			if r, ok := remaining[f.Resource]; !f.ReadAt.IsZero() && (!ok || float64(f.Remaining) < r) {
				remaining[f.Resource] = float64(f.Remaining)
			}
		}
		emit(ch, descRequests, prometheus.CounterValue, requests)
		emit(ch, descRemaining, prometheus.GaugeValue, remaining)
		ch <- prometheus.MustNewConstMetric(descAgentCost, prometheus.CounterValue, st.AgentCostUSD)
		ch <- prometheus.MustNewConstMetric(descAgentRuns, prometheus.CounterValue, float64(st.AgentRuns), "all")
		ch <- prometheus.MustNewConstMetric(descAgentRuns, prometheus.CounterValue, float64(st.AgentPricedRuns), "priced")
	}
	if c.s.opts.Budget != nil {
		ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue, c.s.opts.Budget.Available())
		ch <- prometheus.MustNewConstMetric(descBudgetSpent, prometheus.CounterValue, c.s.opts.Budget.Spent())
	}
}

// emitIdentity is one identity's spend on one rate limit; the limit's
// gauges only once an answer said them.
func emitIdentity(ch chan<- prometheus.Metric, f store.ForgeSpend) {
	l := []string{f.Identity, f.Resource}
	ch <- prometheus.MustNewConstMetric(descIDPoints, prometheus.CounterValue, float64(f.Points), l...)
	ch <- prometheus.MustNewConstMetric(descIDEstimated, prometheus.CounterValue, float64(f.Estimated), l...)
	ch <- prometheus.MustNewConstMetric(descIDCalls, prometheus.CounterValue, float64(f.Calls), l...)
	ch <- prometheus.MustNewConstMetric(descIDNotModified, prometheus.CounterValue, float64(f.NotModified), l...)
	if f.ReadAt.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(descIDLimit, prometheus.GaugeValue, float64(f.Limit), l...)
	ch <- prometheus.MustNewConstMetric(descIDRemaining, prometheus.GaugeValue, float64(f.Remaining), l...)
	if !f.ResetAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(descIDReset, prometheus.GaugeValue, float64(f.ResetAt.Unix()), l...)
	}
}

func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, by map[string]float64) {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(d, t, by[k], k)
	}
}
