package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	copilotbot "github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
)

// Webhook-to-decision latency (PR-S2, SEC-4): `converge serve`'s path
// from a signed delivery reaching the webhook receiver (HMAC check,
// delivery dedupe in the store, the coalescing window, the Manager's
// wake) to the woken PR loop's Decide on an observation it began after
// the delivery arrived. Everything on the path is converge's own: the
// server, the engine Manager, PR loops journalling in SQLite, their
// forge client; the emulator is GitHub, changing CI on the PRs at a
// steady rate and delivering the signed webhooks those changes make.

// LatencyRun is one run of webhook deliveries at a steady rate.
type LatencyRun struct {
	Seconds float64 `json:"seconds"`
	// Sent is how many CI changes the run made at the emulator; Events
	// the deliveries of them the server accepted, Rate those per second.
	Sent   int     `json:"sent"`
	Events int     `json:"events"`
	Rate   float64 `json:"events_per_second"`
	// Decisions are the Decides the loops ran on observations begun
	// during the run; fewer than Events where coalescing (PR-S2) let one
	// decision cover several deliveries.
	Decisions int `json:"decisions"`
	// Uncovered are events no decision covered before the run gave up
	// waiting: a lost wake.
	Uncovered int     `json:"uncovered"`
	P50       float64 `json:"p50_ms"`
	P95       float64 `json:"p95_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
	// Where the time goes: the server's handling of a delivery (HMAC,
	// dedupe in the store, routing), and the covering decision's
	// observation and Decide, at p50 and p99 over the events.
	ReceiveP50 float64 `json:"receive_p50_ms"`
	ReceiveP99 float64 `json:"receive_p99_ms"`
	ObserveP50 float64 `json:"observe_decide_p50_ms"`
	ObserveP99 float64 `json:"observe_decide_p99_ms"`
	// Load is the machine's 1-minute load average at the run's end
	// (Linux; 0 elsewhere): the figure is only as good as the CPU the
	// benchmark had to itself.
	Load float64 `json:"load_avg_1m"`
}

// Range is the least and the greatest of a figure across runs.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Latency is the webhook-to-decision figure: several runs and the spread
// of their percentiles.
type Latency struct {
	PRs      int          `json:"prs"`
	Rate     float64      `json:"target_events_per_second"`
	WindowMS float64      `json:"coalescing_window_ms"`
	Runs     []LatencyRun `json:"runs"`
	Spread   struct {
		P50 Range `json:"p50_ms"`
		P95 Range `json:"p95_ms"`
		P99 Range `json:"p99_ms"`
	} `json:"spread"`
}

// latencyShape is how much one scale measures.
type latencyShape struct {
	prs  int
	rate float64
	runs int
	run  time.Duration
}

func shapeOf(s Scale) latencyShape {
	if s == Full {
		return latencyShape{prs: 20, rate: 100, runs: 3, run: 60 * time.Second}
	}
	return latencyShape{prs: 20, rate: 100, runs: 3, run: 2 * time.Second}
}

// latency measures webhook-to-decision latency at scale s.
func latency(ctx context.Context, open func(context.Context, string) (*store.Store, error), dir string, s Scale) (*Latency, error) {
	return measureLatency(ctx, open, dir, shapeOf(s))
}

func measureLatency(ctx context.Context, open func(context.Context, string) (*store.Store, error), dir string, sh latencyShape) (*Latency, error) {
	f, err := newFleet(ctx, open, dir, sh.prs)
	if err != nil {
		return nil, err
	}
	defer f.close()
	out := &Latency{PRs: sh.prs, Rate: sh.rate, WindowMS: ms(server.DefaultWindow)}
	for range sh.runs {
		r, err := f.run(ctx, sh.rate, sh.run)
		if err != nil {
			return nil, err
		}
		out.Runs = append(out.Runs, r)
	}
	spread := func(get func(LatencyRun) float64) Range {
		rg := Range{Min: get(out.Runs[0]), Max: get(out.Runs[0])}
		for _, r := range out.Runs[1:] {
			rg.Min, rg.Max = min(rg.Min, get(r)), max(rg.Max, get(r))
		}
		return rg
	}
	out.Spread.P50 = spread(func(r LatencyRun) float64 { return r.P50 })
	out.Spread.P95 = spread(func(r LatencyRun) float64 { return r.P95 })
	out.Spread.P99 = spread(func(r LatencyRun) float64 { return r.P99 })
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fleet is `converge serve` in this process, as internal/cli wires it:
// the server in front of the engine Manager, one PR loop per PR of the
// emulator, each waiting for a Copilot review that never starts while
// CI reports on its head.
type fleet struct {
	hub    *fakehub.Hub
	db     *store.Store
	m      *engine.Manager
	srv    *server.Server
	hs     *http.Server
	cancel context.CancelFunc
	client *github.Client
	ci     *Baseline // the CI app, changing CI on the heads
	prs    []benchPR // by index

	mu       sync.Mutex
	arrivals []arrival
	steps    map[string][]step // by target
	stepped  chan struct{}     // signalled on every decision
}

type benchPR struct {
	target string
	ref    forge.PRRef
	head   string
	branch string
	check  int64 // the in-progress check run CI updates
}

// arrival is one delivery the server accepted: when it reached the
// receiver, and the loop it concerns.
type arrival struct {
	at      time.Time
	target  string
	receive time.Duration // the server's handling
}

// step is one Decide: when its observation began and when it returned.
type step struct{ observed, decided time.Time }

const (
	fleetOwner, fleetRepo = "bench", "fleet"
	hookSecret            = "bench webhook secret"
)

func newFleet(ctx context.Context, open func(context.Context, string) (*store.Store, error), dir string, n int) (_ *fleet, err error) {
	// Copilot never starts the review the loops request, so each waits
	// for it, as a fleet's loops wait most of the time.
	hub, err := fakehub.New(fakehub.Options{StateDir: filepath.Join(dir, "hub"), CopilotDelay: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	if err := hub.Start(ctx); err != nil {
		return nil, err
	}
	f := &fleet{hub: hub, steps: map[string][]step{}, stepped: make(chan struct{}, 1)}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if err := hub.CreateRepo(fleetOwner, fleetRepo, map[string]string{"README.md": "fleet\n"}, fakehub.RepoOptions{}); err != nil {
		return nil, err
	}
	// The load generator keeps its connections: a TLS handshake per
	// change would take the CPU the figure is about.
	hc := hub.HTTPClient()
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	ci := &Baseline{HTTP: hc, APIURL: hub.APIURL(), Token: hub.Tokens().CI}
	f.ci = ci
	for i := range n {
		num, err := hub.CreatePR(fleetOwner, fleetRepo, fakehub.NewPR{
			Head: fmt.Sprintf("change-%d", i), Title: fmt.Sprintf("Change %d", i),
			Files: map[string]string{fmt.Sprintf("f%d.txt", i): fmt.Sprintf("change %d\n", i)}, Message: fmt.Sprintf("change %d", i),
		})
		if err != nil {
			return nil, err
		}
		st, err := hub.PR(fleetOwner, fleetRepo, num)
		if err != nil {
			return nil, err
		}
		ref := forge.PRRef{Host: hub.Host(), Owner: fleetOwner, Repo: fleetRepo, Number: num}
		var cr struct {
			ID int64 `json:"id"`
		}
		u := fmt.Sprintf("%s/repos/%s/%s/check-runs", hub.APIURL(), fleetOwner, fleetRepo)
		if err := ci.do(ctx, http.MethodPost, u, map[string]any{"name": "bench-ci", "head_sha": st.HeadSHA, "status": "in_progress"}, &cr); err != nil {
			return nil, fmt.Errorf("check run on PR %d: %w", num, err)
		}
		f.prs = append(f.prs, benchPR{target: ref.String(), ref: ref, head: st.HeadSHA, branch: st.HeadRef, check: cr.ID})
	}

	f.db, err = open(ctx, filepath.Join(dir, "converge.db"))
	if err != nil {
		return nil, err
	}
	// converge's client as `converge serve --ca-file` makes it: the
	// default transport trusting the emulator's CA, one client (and one
	// per-host request cap, REL-1) for every loop.
	f.client, err = github.New(github.Options{APIURL: hub.APIURL(), Token: hub.Tokens().Author, HTTPClient: hub.HTTPClient()})
	if err != nil {
		return nil, err
	}
	f.m = engine.NewManager(engine.Config{Store: f.db, WorkDir: filepath.Join(dir, "work"), Forges: map[string]forge.Forge{hub.Host(): f.client}})
	f.srv, err = server.New(server.Options{Loops: fleetLoops{f.m}, Store: f.db, Secret: []byte(hookSecret), Addr: "127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.hs = &http.Server{Handler: http.HandlerFunc(f.receive), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.hs.Serve(ln) }()
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	go func() { _ = f.srv.Run(srvCtx) }()
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: "http://" + ln.Addr().String() + "/webhook", Secret: hookSecret, Attempts: 1}); err != nil {
		return nil, err
	}

	// Every loop observes, requests its review and parks in its wait
	// before any figure is taken: until a loop knows its head, a CI
	// event of the repository wakes it whatever the commit.
	parked, ended := make(chan string, n), make(chan error, n)
	for _, p := range f.prs {
		a := &latencyJob{Adapter: prloop.Adapter{KindName: "pr", TargetName: p.target, HeadBranch: p.branch, BaseBranch: "main"},
			f: f, db: f.db, ref: p.ref, parked: parked, ended: ended}
		if _, err := f.m.Add(srvCtx, engine.NewSpec[prloop.State](a)); err != nil {
			return nil, err
		}
	}
	deadline := time.After(2 * time.Minute)
	for waiting := 0; waiting < n; {
		select {
		case <-parked:
			waiting++
		case err := <-ended:
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("%d of %d loops parked in two minutes", waiting, n)
		}
	}
	if err := hub.WaitDeliveries(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fleet) close() {
	if f.m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = f.m.Drain(ctx)
		cancel()
	}
	if f.hs != nil {
		_ = f.hs.Close()
	}
	if f.cancel != nil {
		f.cancel()
	}
	f.hub.Close()
	if f.db != nil {
		f.db.Close()
	}
}

// receive is the webhook receiver's front door: it notes when each
// delivery arrived and which loop it concerns, then hands it to the
// server, whose answer says whether it was accepted.
func (f *fleet) receive(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	f.srv.ServeHTTP(rec, r)
	took := time.Since(at)
	if rec.status != http.StatusAccepted {
		return
	}
	var p struct {
		SHA      string `json:"sha"`
		CheckRun struct {
			HeadSHA string `json:"head_sha"`
		} `json:"check_run"`
	}
	_ = json.Unmarshal(body, &p)
	sha := cmp.Or(p.SHA, p.CheckRun.HeadSHA)
	for _, pr := range f.prs {
		if pr.head == sha {
			f.mu.Lock()
			f.arrivals = append(f.arrivals, arrival{at: at, target: pr.target, receive: took})
			f.mu.Unlock()
		}
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// decided records one Decide of target's loop.
func (f *fleet) decided(target string, s step) {
	f.mu.Lock()
	f.steps[target] = append(f.steps[target], s)
	f.mu.Unlock()
	select {
	case f.stepped <- struct{}{}:
	default:
	}
}

// run changes CI on the PRs at rate per second for d, round robin over
// the PRs: each change is a step of the head's check run, which the
// emulator delivers as check_run (a commit status would cost the
// emulator a git process per change, which the 2-core machine the figure
// is for can ill afford beside converge). Then it waits until a decision
// covers every accepted delivery and reads the figures.
func (f *fleet) run(ctx context.Context, rate float64, d time.Duration) (LatencyRun, error) {
	f.mu.Lock()
	f.arrivals = nil
	f.mu.Unlock()
	n := int(rate * d.Seconds())
	every := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		sendErr error
	)
	// Open loop: each change is made at its time whatever the ones
	// before it cost, so a slow converge cannot slow the load down.
	for k := range n {
		if wait := time.Until(start.Add(time.Duration(k) * every)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return LatencyRun{}, ctx.Err()
			}
		}
		pr := f.prs[k%len(f.prs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := fmt.Sprintf("%s/repos/%s/%s/check-runs/%d", f.hub.APIURL(), fleetOwner, fleetRepo, pr.check)
			err := f.changeCI(ctx, u, k)
			if err != nil {
				errMu.Lock()
				if sendErr == nil {
					sendErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if sendErr != nil {
		return LatencyRun{}, fmt.Errorf("change CI: %w", sendErr)
	}
	if err := f.hub.WaitDeliveries(ctx); err != nil {
		return LatencyRun{}, err
	}
	end := time.Now()
	// Every accepted delivery's loop is woken after the window: wait for
	// the decisions, and give up on a lost wake after a grace period.
	giveUp := time.After(10*server.DefaultWindow + 5*time.Second)
	for {
		_, uncovered, _ := f.figures(start)
		if uncovered == 0 || ctx.Err() != nil {
			return f.summary(start, n, end.Sub(start)), ctx.Err()
		}
		select {
		case <-f.stepped:
		case <-giveUp:
			return f.summary(start, n, end.Sub(start)), nil
		case <-ctx.Done():
		}
	}
}

// figures matches each arrival with the decision that covered it: the
// first Decide of its loop on an observation begun after the delivery
// arrived, which is the first that can have seen the change. A decision
// on an observation already under way when the delivery arrived does
// not count, even when it returned later.
func (f *fleet) figures(since time.Time) (lat []time.Duration, uncovered, decisions int) {
	lat, _, uncovered, decisions = f.covered(since)
	return lat, uncovered, decisions
}

// covered is figures with, per covered event, its decision's step.
func (f *fleet) covered(since time.Time) (lat []time.Duration, by []step, uncovered, decisions int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.arrivals {
		steps := f.steps[a.target]
		i := sort.Search(len(steps), func(i int) bool { return !steps[i].observed.Before(a.at) })
		if i == len(steps) {
			uncovered++
			continue
		}
		lat = append(lat, steps[i].decided.Sub(a.at))
		by = append(by, steps[i])
	}
	for _, steps := range f.steps {
		for _, s := range steps {
			if !s.observed.Before(since) {
				decisions++
			}
		}
	}
	return lat, by, uncovered, decisions
}

func (f *fleet) summary(since time.Time, sent int, d time.Duration) LatencyRun {
	lat, by, uncovered, decisions := f.covered(since)
	f.mu.Lock()
	events := len(f.arrivals)
	var recv []time.Duration
	for _, a := range f.arrivals {
		recv = append(recv, a.receive)
	}
	f.mu.Unlock()
	r := LatencyRun{Seconds: d.Seconds(), Sent: sent, Events: events, Rate: float64(events) / d.Seconds(), Decisions: decisions, Uncovered: uncovered, Load: LoadAvg()}
	if len(lat) == 0 {
		return r
	}
	slices.Sort(lat)
	r.P50, r.P95, r.P99, r.Max = ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 99)), ms(lat[len(lat)-1])
	obs := make([]time.Duration, len(by))
	for i, s := range by {
		obs[i] = s.decided.Sub(s.observed)
	}
	slices.Sort(obs)
	slices.Sort(recv)
	r.ObserveP50, r.ObserveP99 = ms(percentile(obs, 50)), ms(percentile(obs, 99))
	r.ReceiveP50, r.ReceiveP99 = ms(percentile(recv, 50)), ms(percentile(recv, 99))
	return r
}

// LoadAvg is the 1-minute load average, 0 where /proc has none: what a
// figure measured on a shared machine is recorded with.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(b), &l)
	return l
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (p*len(sorted) + 99) / 100 // ceil(p/100 × n)
	return sorted[max(i-1, 0)]
}

// fleetLoops is the Manager as the server's Loops, as `converge serve`
// wires it; it registers nothing (the loops are added up front).
type fleetLoops struct{ m *engine.Manager }

func (l fleetLoops) Wake(target string) { l.m.Wake(target) }

func (l fleetLoops) Register(context.Context, string) error {
	return errors.New("the benchmark registers no PR")
}

func (l fleetLoops) Snapshot() []server.RunInfo {
	var out []server.RunInfo
	for _, r := range l.m.Snapshot() {
		out = append(out, server.RunInfo{Target: r.Target, Kind: r.Kind, RunID: r.RunID, Phase: r.Phase, Head: r.Head, Branch: r.Branch, Base: r.Base})
	}
	return out
}

// latencyJob is one PR loop as the Manager runs it (internal/cli's
// prJob without a clone: a waiting loop needs none), its Observe and
// Decide timed.
type latencyJob struct {
	prloop.Adapter
	f      *fleet
	db     *store.Store
	ref    forge.PRRef
	parked chan<- string
	ended  chan<- error // a loop that ends: it never should
	loop   *prloop.Loop
	once   sync.Once
}

var _ engine.Adapter[prloop.State] = (*latencyJob)(nil)

func (j *latencyJob) Fresh() bool                        { return true }
func (j *latencyJob) Refuse(context.Context, bool) error { return nil }

func (j *latencyJob) End(_ context.Context, o engine.Outcome) error {
	if o.Status != engine.StatusInterrupted {
		j.ended <- fmt.Errorf("the loop on %s ended %s: %v", j.TargetName, o.Status, o.Err)
	}
	return o.Err
}

func (j *latencyJob) Begin(_ context.Context, c *engine.Claim[prloop.State]) (prloop.State, error) {
	cfg := prloop.DefaultConfig()
	cfg.Self = fakehub.LoginAuthor
	cfg.Bot = copilotbot.New()
	// The review never starts; the loop must keep waiting for it through
	// every run rather than ask again.
	cfg.ReviewStartWindow, cfg.ReviewWaitMax = 24*time.Hour, 24*time.Hour
	j.loop = prloop.NewLoop(j.ref, prloop.Deps{
		Forge: j.f.client, Workspace: prlooptest.ParkedWorkspace{}, Journal: prloop.StoreJournal(j.db, c.RunID), Config: cfg,
		Reporter: engine.ReporterFunc(func(e engine.Event) {
			if e.Kind == "wait" {
				j.once.Do(func() { j.parked <- j.TargetName })
			}
		}),
	})
	return prloop.Initial(c), nil
}

// Drive runs the loop on the engine as prloop.Loop.Run does, with its
// Observe and Decide timed. Only webhooks wake it: its poll is an hour.
func (j *latencyJob) Drive(ctx context.Context, st prloop.State, opt engine.Options) (prloop.State, error) {
	opt.PollMin, opt.PollMax = time.Hour, time.Hour
	opt.Transient = prloop.Transient
	opt.Reporter = j.loop.Reporter
	t := &timedLoop{Loop: j.loop, decided: func(s step) { j.f.decided(j.TargetName, s) }}
	final, err := engine.Run[prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult](ctx, t, j.loop.Journal, st, opt)
	return final, err
}

// timedLoop is the PR loop with the start of each observation and the
// return of each Decide timed; every other method is the loop's own
// (embedding keeps its engine.Background and engine.Parker).
type timedLoop struct {
	*prloop.Loop
	decided  func(step)
	observed time.Time
}

func (t *timedLoop) Observe(ctx context.Context, st prloop.State, in engine.Input[*prloop.ActResult]) (prloop.Observation, error) {
	t.observed = time.Now()
	return t.Loop.Observe(ctx, st, in)
}

func (t *timedLoop) Decide(st prloop.State, obs prloop.Observation) (prloop.State, []prloop.Action, bool) {
	next, actions, done := t.Loop.Decide(st, obs)
	t.decided(step{observed: t.observed, decided: time.Now()})
	return next, actions, done
}

// changeCI makes the k-th CI change at u. A request the emulator never
// answered (a connection it dropped, a handshake a loaded machine could
// not finish in time) is made again, at most three times: the load is
// what is measured, not the load generator's connections.
func (f *fleet) changeCI(ctx context.Context, u string, k int) error {
	body := map[string]any{"output": map[string]any{"title": "bench", "summary": fmt.Sprintf("step %d", k)}}
	var err error
	for try := range 3 {
		if try > 0 {
			select {
			case <-time.After(time.Duration(try) * 100 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err = f.ci.do(ctx, http.MethodPatch, u, body, nil)
		var unanswered *url.Error
		if err == nil || !errors.As(err, &unanswered) || ctx.Err() != nil {
			return err
		}
	}
	return err
}
