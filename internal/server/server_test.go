package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/convergeloop/converge/internal/store"
)

// TestSEC_4_SignatureTestVector: GitHub's published test vector.
func TestSEC_4_SignatureTestVector(t *testing.T) {
	got := Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!"))
	want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if err := Verify([]byte("It's a Secret to Everybody"), []byte("Hello, World!"), want); err != nil {
		t.Errorf("Verify(test vector) = %v", err)
	}
	for _, bad := range []string{"", "sha256=", "sha1=" + want[7:], "sha256=zz", want[:len(want)-1] + "0"} {
		if err := Verify([]byte("It's a Secret to Everybody"), []byte("Hello, World!"), bad); err == nil {
			t.Errorf("Verify accepted %q", bad)
		}
	}
	if err := Verify(nil, []byte("Hello, World!"), want); err == nil {
		t.Error("Verify with no secret accepted a delivery")
	}
}

// TestSEC_4_UnsignedOrWronglySignedDeliveryCausesNoAction: a delivery
// without a signature, signed with another secret, or whose body was
// changed after signing is refused with 401, wakes nothing and is not
// recorded (the genuine delivery of the same id is still accepted).
func TestSEC_4_UnsignedOrWronglySignedDeliveryCausesNoAction(t *testing.T) {
	r := newRig(t, nil)
	body := reviewPayload(7)
	if code := r.deliver(t, "pull_request_review", "d-1", "", body); code != http.StatusUnauthorized {
		t.Errorf("unsigned: status %d, want 401", code)
	}
	if code := r.deliver(t, "pull_request_review", "d-1", "another secret", body); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: status %d, want 401", code)
	}
	// Signed, then tampered with on the way.
	req := `{"pull_request":{"number":8},"repository":{"full_name":"acme/widget"}}`
	sig := Sign([]byte(testSecret), []byte(body))
	if code := r.deliverSigned(t, "pull_request_review", "d-1", sig, req); code != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d, want 401", code)
	}
	r.settle()
	if w := r.loops.Wakes(); len(w) != 0 {
		t.Fatalf("refused deliveries woke %v", w)
	}
	if code := r.deliver(t, "pull_request_review", "d-1", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("the genuine delivery after refused ones: status %d, want 202", code)
	}
	r.settle()
	if w := r.loops.Wakes(); !slices.Equal(w, []string{prA}) {
		t.Errorf("wakes = %v, want [%s]", w, prA)
	}
}

// TestSEC_4_NoSecretRefusesEverything: a server without a webhook secret
// trusts no delivery.
func TestSEC_4_NoSecretRefusesEverything(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Secret = nil })
	if code := r.deliver(t, "pull_request_review", "d-1", testSecret, reviewPayload(7)); code != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", code)
	}
	r.settle()
	if w := r.loops.Wakes(); len(w) != 0 {
		t.Errorf("woke %v", w)
	}
}

// TestSEC_4_ReplayedDeliveryCausesNoSecondAction: a delivery id seen
// before is answered 200 and wakes nothing, also after a restart on the
// same store.
func TestSEC_4_ReplayedDeliveryCausesNoSecondAction(t *testing.T) {
	r := newRig(t, nil)
	body := reviewPayload(7)
	if code := r.deliver(t, "pull_request_review", "d-1", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("first delivery: status %d", code)
	}
	r.settle()
	if code := r.deliver(t, "pull_request_review", "d-1", testSecret, body); code != http.StatusOK {
		t.Errorf("replay: status %d, want 200", code)
	}
	r.settle()
	if w := r.loops.Wakes(); len(w) != 1 {
		t.Fatalf("wakes after a replay = %v, want one", w)
	}

	// A restart: a new server on the store reopened from its file.
	r.st.Close()
	st := openStore(t, r.path)
	loops := &fakeLoops{runs: r.loops.Snapshot()}
	s2, err := New(Options{Loops: loops, Store: st, Secret: []byte(testSecret), Addr: "127.0.0.1:0", Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	r2 := &rig{srv: s2, loops: loops, clock: r.clock, st: st}
	if code := r2.deliver(t, "pull_request_review", "d-1", testSecret, body); code != http.StatusOK {
		t.Errorf("replay after restart: status %d, want 200", code)
	}
	r2.settle()
	if w := loops.Wakes(); len(w) != 0 {
		t.Errorf("a replay after restart woke %v", w)
	}
}

// TestPR_S2_BurstOfFiftyEventsWakesTwice: fifty deliveries for one PR
// within the window wake its loop at once, on the first, and once more
// when the window ends; nothing in between.
func TestPR_S2_BurstOfFiftyEventsWakesTwice(t *testing.T) {
	r := newRig(t, nil)
	events := []struct{ event, body string }{
		{"pull_request_review", reviewPayload(7)},
		{"pull_request_review_comment", `{"action":"created","comment":{"id":5},"pull_request":{"number":7},"repository":{"full_name":"acme/widget"}}`},
		{"pull_request_review_thread", `{"action":"resolved","thread":{"node_id":"T"},"pull_request":{"number":7},"repository":{"full_name":"acme/widget"}}`},
		{"issue_comment", `{"action":"created","issue":{"number":7,"pull_request":{"url":"x"}},"comment":{"id":9},"repository":{"full_name":"acme/widget"}}`},
		{"check_run", `{"action":"completed","check_run":{"head_sha":"aaa111","pull_requests":[{"number":7}]},"repository":{"full_name":"acme/widget"}}`},
	}
	for i := range 50 {
		e := events[i%len(events)]
		if code := r.deliver(t, e.event, fmt.Sprintf("burst-%d", i), testSecret, e.body); code != http.StatusAccepted {
			t.Fatalf("delivery %d (%s): status %d", i, e.event, code)
		}
		r.clock.Advance(r.srv.opts.Window / 100)
		r.srv.wakes.flush()
	}
	if w := r.loops.Wakes(); !slices.Equal(w, []string{prA}) {
		t.Fatalf("wakes inside the window = %v, want the first event's alone", w)
	}
	r.settle()
	if w := r.loops.Wakes(); !slices.Equal(w, []string{prA, prA}) {
		t.Fatalf("wakes after the burst = %v, want one more of %s", w, prA)
	}
	// Quiet for a window: the next event wakes at once again.
	r.settle()
	r.settle()
	r.deliver(t, "issue_comment", "later", testSecret, events[3].body)
	r.srv.wakes.flush()
	if w := r.loops.Wakes(); len(w) != 3 {
		t.Errorf("wakes after a later event = %v, want three", w)
	}
}

// TestPR_S2_RunWakesAtOnceThenWhenTheWindowEnds: Run delivers a PR's first
// wake at once, and the events after it in one wake once the clock passes
// the window.
func TestPR_S2_RunWakesAtOnceThenWhenTheWindowEnds(t *testing.T) {
	r := newRig(t, nil)
	r.loops.woke = make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	r.deliver(t, "pull_request_review", "d-0", testSecret, reviewPayload(8))
	select {
	case w := <-r.loops.woke:
		if w != prB {
			t.Errorf("woke %s, want %s", w, prB)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first event did not wake at once")
	}
	for i := 1; i < 3; i++ {
		r.deliver(t, "pull_request_review", fmt.Sprintf("d-%d", i), testSecret, reviewPayload(8))
	}
	if d := r.clock.waitAsked(t); d != r.srv.opts.Window {
		t.Errorf("Run waits %v, want the window %v", d, r.srv.opts.Window)
	}
	select {
	case w := <-r.loops.woke:
		t.Fatalf("woke %s again before the window ended", w)
	default:
	}
	r.clock.Advance(r.srv.opts.Window)
	select {
	case w := <-r.loops.woke:
		if w != prB {
			t.Errorf("woke %s, want %s", w, prB)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after the window")
	}
}

// TestPR_S2_EventsMapToTheirPRs: each event kind wakes the loop it
// concerns, by number, head commit, head or base branch; others and
// other repositories' wake nothing.
func TestPR_S2_EventsMapToTheirPRs(t *testing.T) {
	unknown := "https://github.com/acme/widget/pull/9"
	runs := []RunInfo{
		{Target: prA, Head: "aaa111", Branch: "feature-a", Base: "main"},
		{Target: prB, Head: "bbb222", Branch: "feature-b", Base: "release"},
		{Target: unknown},
		{Target: "https://github.com/other/repo/pull/7", Head: "aaa111", Branch: "feature-a"},
	}
	cases := []struct {
		event, body string
		want        []string
	}{
		{"pull_request", `{"action":"synchronize","number":8,"pull_request":{"number":8},"repository":{"full_name":"acme/widget"}}`, []string{prB}},
		{"pull_request_review_thread", `{"action":"unresolved","pull_request":{"number":7},"repository":{"full_name":"ACME/Widget"}}`, []string{prA}},
		{"issue_comment", `{"action":"created","issue":{"number":7},"repository":{"full_name":"acme/widget"}}`, nil},
		{"issue_comment", `{"action":"created","issue":{"number":8,"pull_request":{}},"repository":{"full_name":"acme/widget"}}`, []string{prB}},
		{"check_run", `{"check_run":{"head_sha":"fff","pull_requests":[{"number":8}]},"repository":{"full_name":"acme/widget"}}`, []string{prB}},
		{"check_run", `{"check_run":{"head_sha":"aaa111","pull_requests":[]},"repository":{"full_name":"acme/widget"}}`, []string{prA, unknown}},
		{"check_suite", `{"check_suite":{"head_sha":"x","head_branch":"feature-b","pull_requests":[]},"repository":{"full_name":"acme/widget"}}`, []string{prB, unknown}},
		{"status", `{"sha":"bbb222","state":"success","branches":[],"repository":{"full_name":"acme/widget"}}`, []string{prB, unknown}},
		{"push", `{"ref":"refs/heads/feature-a","after":"ccc","repository":{"full_name":"acme/widget"}}`, []string{prA, unknown}},
		{"push", `{"ref":"refs/heads/release","after":"ddd","repository":{"full_name":"acme/widget"}}`, []string{prB, unknown}},
		{"push", `{"ref":"refs/tags/v1","after":"ddd","repository":{"full_name":"acme/widget"}}`, nil},
		{"issues", `{"action":"opened","repository":{"full_name":"acme/widget"}}`, nil},
	}
	for _, c := range cases {
		n, err := parseNotice(c.event, []byte(c.body))
		var got []string
		if err == nil {
			got = n.targets(runs, &refCache{})
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: targets %v (err %v), want %v", c.event, c.body, got, err, c.want)
		}
	}
	if _, err := parseNotice("pull_request", []byte(`{"action":"opened","repository":{"full_name":"acme/widget"}}`)); err == nil {
		t.Error("a pull_request event without a number parsed")
	}
}

// TestSEC_4_APITokenRequiredOffLoopback: off loopback the server will not
// start without a token, and the API and /metrics then need it; /healthz
// stays open. On loopback without a token the API is open.
func TestSEC_4_APITokenRequiredOffLoopback(t *testing.T) {
	if _, err := New(Options{Loops: &fakeLoops{}, Store: openStore(t, t.TempDir()+"/c.db"), Addr: "0.0.0.0:8080"}); err == nil {
		t.Fatal("New bound off loopback without a token")
	}
	r := newRig(t, func(o *Options) { o.Addr = "0.0.0.0:8080"; o.Token = "s3cret" })
	for _, p := range []struct{ method, path, body string }{
		{"GET", "/api/runs", ""},
		{"POST", "/api/prs", `{"url":"https://github.com/acme/widget/pull/10"}`},
		{"GET", "/metrics", ""},
	} {
		for _, tok := range []string{"", "wrong"} {
			if rec := r.do(t, p.method, p.path, tok, p.body); rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: status %d, want 401", p.method, p.path, tok, rec.Code)
			}
		}
		if rec := r.do(t, p.method, p.path, "s3cret", p.body); rec.Code >= 300 {
			t.Errorf("%s %s with the token: status %d %s", p.method, p.path, rec.Code, rec.Body)
		}
	}
	if got := r.loops.Registered(); !slices.Equal(got, []string{"https://github.com/acme/widget/pull/10"}) {
		t.Errorf("registered = %v: only the authorized request may register", got)
	}
	if rec := r.do(t, "GET", "/healthz", "", ""); rec.Code != http.StatusOK {
		t.Errorf("/healthz: status %d", rec.Code)
	}
	open := newRig(t, nil)
	if rec := open.do(t, "GET", "/api/runs", "", ""); rec.Code != http.StatusOK {
		t.Errorf("loopback /api/runs without a token: status %d", rec.Code)
	}
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "[::1]:80": true, "localhost:9": true, ":8080": false, "0.0.0.0:1": false, "10.0.0.2:1": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}

// TestServeRegistersPRsAndWatchedRepositories: POST /api/prs registers a
// PR by its normalized URL; POST /api/repos stores the watch and
// registers the repository's matching PRs; a pull_request "opened"
// delivery for a watched repository looks again.
func TestServeRegistersPRsAndWatchedRepositories(t *testing.T) {
	var listed []store.RepoWatch
	open := []string{"https://github.com/acme/tools/pull/1"}
	r := newRig(t, func(o *Options) {
		o.Discover = func(_ context.Context, w store.RepoWatch) ([]string, error) {
			listed = append(listed, w)
			return open, nil
		}
	})
	if rec := r.do(t, "POST", "/api/prs", "", `{"url":"https://github.com/acme/widget/pull/12/files"}`); rec.Code != http.StatusCreated {
		t.Fatalf("POST /api/prs: %d %s", rec.Code, rec.Body)
	}
	if rec := r.do(t, "POST", "/api/prs", "", `{"url":"https://github.com/acme/widget/issues/12"}`); rec.Code != http.StatusBadRequest {
		t.Errorf("POST /api/prs with an issue URL: %d", rec.Code)
	}
	if rec := r.do(t, "POST", "/api/repos", "", `{"repo":"acme","label":"x"}`); rec.Code != http.StatusBadRequest {
		t.Errorf("POST /api/repos without owner/name: %d", rec.Code)
	}
	if rec := r.do(t, "POST", "/api/repos", "", `{"repo":"acme/tools","label":"converge","authors":["alice"]}`); rec.Code != http.StatusCreated {
		t.Fatalf("POST /api/repos: %d %s", rec.Code, rec.Body)
	}
	r.settle()
	want := []string{"https://github.com/acme/tools/pull/1", "https://github.com/acme/widget/pull/12"}
	if got := r.loops.Registered(); !slices.Equal(got, want) {
		t.Fatalf("registered = %v, want %v", got, want)
	}
	if len(listed) != 1 || listed[0].Label != "converge" || !slices.Equal(listed[0].Authors, []string{"alice"}) {
		t.Errorf("Discover saw %+v", listed)
	}
	open = append(open, "https://github.com/acme/tools/pull/2")
	body := `{"action":"opened","number":2,"pull_request":{"number":2},"repository":{"full_name":"acme/tools"}}`
	if code := r.deliver(t, "pull_request", "open-2", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("opened delivery: %d", code)
	}
	r.settle()
	want = []string{"https://github.com/acme/tools/pull/1", "https://github.com/acme/tools/pull/2", "https://github.com/acme/widget/pull/12"}
	if got := r.loops.Registered(); !slices.Equal(got, want) {
		t.Errorf("registered after an opened delivery = %v, want %v", got, want)
	}
	rec := r.do(t, "GET", "/api/runs", "", "")
	var out struct {
		Runs  []RunInfo `json:"runs"`
		Repos []struct {
			Repo string `json:"repo"`
		} `json:"repos"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Runs) != 5 || len(out.Repos) != 1 || out.Repos[0].Repo != "acme/tools" {
		t.Errorf("GET /api/runs = %s (%v)", rec.Body, err)
	}
}

// TestServeMetricsParse: /metrics is valid Prometheus text with the fleet's
// figures.
func TestServeMetricsParse(t *testing.T) {
	budget, err := NewBudget(600, 30, newFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, func(o *Options) {
		o.Budget = budget
		o.Stats = func() Stats {
			return Stats{
				AgentCostUSD: 0.25, AgentRuns: 3, AgentPricedRuns: 2,
				Identities: []store.ForgeSpend{
					{Identity: "github.com/octo-author", Resource: "graphql", Calls: 7, Remaining: 4990, ReadAt: time.Now()},
					{Identity: "github.com/installation/9", Resource: "graphql", Calls: 5, Remaining: 4988, ReadAt: time.Now()},
					{Identity: "github.com/octo-author", Resource: "core", Calls: 3},
				},
			}
		}
	})
	r.deliver(t, "pull_request_review", "m-1", testSecret, reviewPayload(7))
	r.deliver(t, "pull_request_review", "m-1", testSecret, reviewPayload(7))
	r.deliver(t, "pull_request_review", "m-2", "", reviewPayload(7))
	r.settle()
	rec := r.do(t, "GET", "/metrics", "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, rec.Body)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Errorf("no %s", name)
			return -1
		}
	next:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			}
		}
		t.Errorf("no %s%v", name, labels)
		return -1
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"converge_loops", map[string]string{"phase": "waiting"}, 1},
		{"converge_loops", map[string]string{"phase": "fixing"}, 1},
		{"converge_forge_requests_total", map[string]string{"kind": "graphql"}, 12},
		{"converge_forge_requests_total", map[string]string{"kind": "core"}, 3},
		{"converge_forge_rate_limit_remaining", map[string]string{"resource": "graphql"}, 4988},
		{"converge_agent_cost_usd_total", nil, 0.25},
		{"converge_agent_runs_total", map[string]string{"which": "all"}, 3},
		{"converge_agent_runs_total", map[string]string{"which": "priced"}, 2},
		{"converge_poll_budget_available", nil, 30},
		{"converge_wakes_total", nil, 1},
		{"converge_webhook_deliveries_total", map[string]string{"event": "pull_request_review", "outcome": "accepted"}, 1},
		{"converge_webhook_deliveries_total", map[string]string{"event": "pull_request_review", "outcome": "duplicate"}, 1},
		{"converge_webhook_deliveries_total", map[string]string{"event": "pull_request_review", "outcome": "unsigned"}, 1},
	}
	for _, c := range checks {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestPR_S2_FleetPollBudget: permits come at the budget's rate, never more than
// the burst at once; Wait waits on the clock.
func TestPR_S2_FleetPollBudget(t *testing.T) {
	clock := newFakeClock()
	b, err := NewBudget(60, 5, clock) // one a second, five at once
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if ok, _ := b.Take(1); !ok {
			t.Fatalf("permit %d of a full bucket refused", i)
		}
	}
	ok, wait := b.Take(1)
	if ok || wait != time.Second {
		t.Fatalf("Take on an empty bucket = %v, %v; want false, 1s", ok, wait)
	}
	clock.Advance(time.Hour)
	if got := b.Available(); got != 5 {
		t.Errorf("after an hour the bucket holds %v, want its burst 5", got)
	}
	if ok, _ := b.Take(3); !ok {
		t.Error("Take(3) of 5 refused")
	}
	if ok, wait := b.Take(3); ok || wait != time.Second {
		t.Errorf("Take(3) of 2 = %v, %v; want false, 1s", ok, wait)
	}
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background(), 3) }()
	if d := clock.waitAsked(t); d != time.Second {
		t.Errorf("Wait waits %v, want 1s", d)
	}
	clock.Advance(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait never returned")
	}
	if got := b.Available(); got != 0 {
		t.Errorf("after Wait the bucket holds %v, want 0", got)
	}
	if _, err := NewBudget(0, 0, clock); err == nil {
		t.Error("a budget of 0 a minute was accepted")
	}
}

// TestSEC_4_LoopbackAPIRefusesBrowsers: open on loopback, the API still
// refuses a request addressed by another host name (DNS rebinding) and a
// POST that is not JSON (a cross-site form), registering nothing.
func TestSEC_4_LoopbackAPIRefusesBrowsers(t *testing.T) {
	r := newRig(t, nil)
	body := `{"url":"https://github.com/acme/widget/pull/10"}`
	req := httptest.NewRequest("POST", "/api/prs", strings.NewReader(body))
	req.Host = "attacker.example:8080"
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("a rebound host name: %d, want 403", rec.Code)
	}
	req = httptest.NewRequest("POST", "/api/prs", strings.NewReader(body))
	req.Host = "localhost:8080"
	req.Header.Set("Content-Type", "text/plain")
	rec = httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("a text/plain POST: %d, want 415", rec.Code)
	}
	if got := r.loops.Registered(); len(got) != 0 {
		t.Errorf("registered %v", got)
	}
	if rec := r.do(t, "POST", "/api/prs", "", body); rec.Code != http.StatusCreated {
		t.Errorf("a JSON POST to 127.0.0.1: %d", rec.Code)
	}
}

func TestWatchMatches(t *testing.T) {
	cases := []struct {
		w      store.RepoWatch
		author string
		labels []string
		want   bool
	}{
		{store.RepoWatch{Repo: "o/r"}, "anyone", nil, true},
		{store.RepoWatch{Repo: "o/r", Label: "converge"}, "alice", []string{"bug", "Converge"}, true},
		{store.RepoWatch{Repo: "o/r", Label: "converge"}, "alice", []string{"bug"}, false},
		{store.RepoWatch{Repo: "o/r", Authors: []string{"Alice"}}, "alice", nil, true},
		{store.RepoWatch{Repo: "o/r", Authors: []string{"alice"}}, "bob", []string{"converge"}, false},
		{store.RepoWatch{Repo: "o/r", Label: "converge", Authors: []string{"alice"}}, "bob", []string{"converge"}, true},
	}
	for _, c := range cases {
		if got := WatchMatches(c.w, c.author, c.labels); got != c.want {
			t.Errorf("WatchMatches(%+v, %s, %v) = %v", c.w, c.author, c.labels, got)
		}
	}
}

// TestSEC_4_OldDeliveryIDsArePruned: ids older than GitHub's redelivery
// window are forgotten as deliveries keep coming, and recent ones kept.
func TestSEC_4_OldDeliveryIDsArePruned(t *testing.T) {
	r := newRig(t, nil)
	r.deliver(t, "pull_request_review", "old", testSecret, reviewPayload(7))
	r.clock.Advance(8 * 24 * time.Hour)
	r.deliver(t, "pull_request_review", "recent", testSecret, reviewPayload(7))
	var n int
	if err := r.st.DB().QueryRow(`SELECT COUNT(*) FROM deliveries WHERE id = 'old'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("old delivery id kept (%d, %v)", n, err)
	}
	if code := r.deliver(t, "pull_request_review", "recent", testSecret, reviewPayload(7)); code != http.StatusOK {
		t.Errorf("a recent id replayed: %d, want 200 (duplicate)", code)
	}
}

// TestPR_T10_ServeRearmsAFinishedPROnANewHead: a new head (or a reopen) on
// a registered PR whose run finished starts a new run, since the verdict
// that run published was about another head; a PR whose loop runs is
// only woken, an unregistered one is left alone, and a watched
// repository's discovery does not start runs on PRs registered before
// (the server's own label on one PR would otherwise restart every PR it
// finished). A PR whose run ended other than two-stable is not rearmed:
// its needs-attention stands, and a human push was a yield (PR-T4).
func TestPR_T10_ServeRearmsAFinishedPROnANewHead(t *testing.T) {
	finished := "https://github.com/acme/widget/pull/9"
	stale := "https://github.com/acme/widget/pull/10"
	yielded := "https://github.com/acme/widget/pull/12" // ended human-push
	var listed int
	r := newRig(t, func(o *Options) {
		o.Discover = func(context.Context, store.RepoWatch) ([]string, error) {
			listed++
			return []string{stale}, nil
		}
	})
	ctx := context.Background()
	for _, pr := range []string{finished, stale, prA, yielded} {
		if err := r.st.PutRegistration(ctx, pr); err != nil {
			t.Fatal(err)
		}
	}
	ended := r.clock.Now()
	for i, run := range []store.Run{
		{Target: finished, Status: "two-stable"},
		{Target: stale, Status: "two-stable"},
		{Target: yielded, Status: "human-push", ExitCode: 2},
	} {
		run.ID, run.Kind, run.EndedAt = fmt.Sprintf("r-%d", i), "pr", ended
		if err := r.st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.st.PutRepoWatch(ctx, store.RepoWatch{Repo: "acme/widget"}); err != nil {
		t.Fatal(err)
	}
	push := func(id string, num int, action string) {
		body := fmt.Sprintf(`{"action":%q,"number":%d,"pull_request":{"number":%d},"repository":{"full_name":"acme/widget"}}`, action, num, num)
		if code := r.deliver(t, "pull_request", id, testSecret, body); code != http.StatusAccepted {
			t.Fatalf("%s delivery: %d", action, code)
		}
	}
	push("d-1", 9, "synchronize")  // finished: a new run
	push("d-2", 7, "synchronize")  // prA's loop runs: a wake
	push("d-3", 11, "synchronize") // never registered
	push("d-4", 10, "labeled")     // discovery: 10 is registered already
	push("d-6", 12, "synchronize") // its run yielded to a human push
	r.settle()
	if got := r.loops.Registered(); !slices.Equal(got, []string{finished}) {
		t.Errorf("registered %v, want only the finished PR with a new head %s", got, finished)
	}
	if listed != 1 {
		t.Errorf("discovery ran %d times, want 1", listed)
	}
	if !slices.Contains(r.loops.Wakes(), prA) {
		t.Errorf("the running loop of %s was not woken: %v", prA, r.loops.Wakes())
	}
	push("d-5", 10, "reopened")
	r.settle()
	if got := r.loops.Registered(); !slices.Equal(got, []string{stale, finished}) { // sorted
		t.Fatalf("after a reopen registered %v, want %v", got, []string{stale, finished})
	}
	// A reviewer reopens a thread on another finished PR.
	other := "https://github.com/acme/widget/pull/13"
	if err := r.st.PutRegistration(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := r.st.CreateRun(ctx, store.Run{ID: "r-13", Kind: "pr", Target: other, Status: "two-stable", EndedAt: ended}); err != nil {
		t.Fatal(err)
	}
	body := `{"action":"unresolved","thread":{},"pull_request":{"number":13},"repository":{"full_name":"acme/widget"}}`
	if code := r.deliver(t, "pull_request_review_thread", "d-7", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("unresolved delivery: %d", code)
	}
	r.settle()
	if got := r.loops.Registered(); !slices.Equal(got, []string{stale, other, finished}) { // sorted
		t.Errorf("after a reopened thread registered %v, want %v", got, []string{stale, other, finished})
	}
}

// TestREL_2_ServeResumesAnUnfinishedRunNoLoopDrives: a registered PR whose
// last run is unfinished while no loop of the server drives it (its
// resumed run was refused at its claim, or ended by an error before its
// end was recorded) is registered again by the next news on it, so its
// run resumes; without that it waited for the next restart of serve.
func TestREL_2_ServeResumesAnUnfinishedRunNoLoopDrives(t *testing.T) {
	orphaned := "https://github.com/acme/widget/pull/21"
	r := newRig(t, nil)
	ctx := context.Background()
	if err := r.st.PutRegistration(ctx, orphaned); err != nil {
		t.Fatal(err)
	}
	if err := r.st.CreateRun(ctx, store.Run{ID: "r-21", Kind: "pr", Target: orphaned}); err != nil {
		t.Fatal(err)
	}
	body := `{"action":"submitted","review":{"state":"commented"},"pull_request":{"number":21},"repository":{"full_name":"acme/widget"}}`
	if code := r.deliver(t, "pull_request_review", "d-21", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("review delivery: %d", code)
	}
	r.settle()
	if got := r.loops.Registered(); !slices.Equal(got, []string{orphaned}) {
		t.Errorf("registered %v, want the PR whose unfinished run no loop drives: %s", got, orphaned)
	}
}
