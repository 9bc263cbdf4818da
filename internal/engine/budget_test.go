package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// tickClock moves only when told. It counts the waits it holds, so a
// test can advance it only once every loop waits on it again.
type tickClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []tickWaiter
	changed chan struct{}
}

type tickWaiter struct {
	at time.Time
	ch chan time.Time
}

func newTickClock() *tickClock {
	return &tickClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), changed: make(chan struct{}, 1)}
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *tickClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
	} else {
		c.waiters = append(c.waiters, tickWaiter{at: c.now.Add(d), ch: ch})
	}
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return ch
}

func (c *tickClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
		} else {
			w.ch <- c.now
		}
	}
	c.waiters = kept
}

func (c *tickClock) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// settle waits until n waits are held: every loop waits again.
func (c *tickClock) settle(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for c.waiting() != n {
		select {
		case <-c.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d waits on the clock, want %d", c.waiting(), n)
		}
	}
}

// The watch kind observes one PR at the forge, through converge's GitHub
// client with its change probe, and waits for ever: an idle PR's loop in
// a fleet, every ten seconds asking for a poll.
type watchState struct {
	Started bool `json:"started"`
}

type watchLoop struct {
	f   forge.Forge
	ref forge.PRRef
}

func (l *watchLoop) Observe(ctx context.Context, _ watchState, _ engine.Input[string]) (*forge.PullRequest, error) {
	return l.f.Observe(forge.WithProbe(ctx), l.ref)
}
func (l *watchLoop) Decide(st watchState, _ *forge.PullRequest) (watchState, []counterAction, bool) {
	return st, []counterAction{{Kind: "wait"}}, false
}
func (l *watchLoop) Act(context.Context, watchState, *forge.PullRequest, counterAction) (string, error) {
	return "", nil
}
func (l *watchLoop) Stepped(_, _ watchState, _ *forge.PullRequest) bool { return false }
func (l *watchLoop) Fail(st watchState, _ *forge.PullRequest, _ error) (watchState, []counterAction) {
	return st, nil
}

type watchJob struct {
	db   *store.Store
	loop *watchLoop
	run  string
}

func (j *watchJob) Kind() engine.Kind                  { return engine.Kind{Name: "watch", Errored: "errored"} }
func (j *watchJob) Target() string                     { return j.loop.ref.String() }
func (j *watchJob) Fresh() bool                        { return true }
func (j *watchJob) Resumable(watchState) bool          { return false }
func (j *watchJob) Refuse(context.Context, bool) error { return nil }
func (j *watchJob) Begin(_ context.Context, c *engine.Claim[watchState]) (watchState, error) {
	j.run = c.RunID
	return watchState{Started: true}, nil
}
func (j *watchJob) Drive(ctx context.Context, st watchState, opt engine.Options) (watchState, error) {
	opt.PollMin, opt.PollMax = 10*time.Second, 10*time.Second
	journal := &engine.StoreJournal[watchState]{DB: j.db, RunID: j.run}
	return engine.Run[watchState, *forge.PullRequest, counterAction, string](ctx, j.loop, journal, st, opt)
}
func (j *watchJob) Terminal(watchState) (engine.Terminal, bool)   { return engine.Terminal{}, false }
func (j *watchJob) Progress(watchState) engine.Progress           { return engine.Progress{Phase: "waiting"} }
func (j *watchJob) End(_ context.Context, o engine.Outcome) error { return o.Err }

// TestPR_S2_FleetPollsStayWithinTheBudgetAtTheForge: six idle loops, each
// asking to poll every ten seconds (36 polls a minute), under a fleet
// budget of 12 a minute (burst 2) make at most 12 a minute plus the
// burst, counted at the emulator, on the engine's clock; a wake (what a
// webhook does) still makes a starved loop read its PR at once, with no
// permit.
func TestPR_S2_FleetPollsStayWithinTheBudgetAtTheForge(t *testing.T) {
	const loops, perMinute, burst, minutes = 6, 12, 2, 5
	ctx := t.Context()
	hub := hubtest.Start(t, time.Hour)
	files := map[string]string{"main.go": "package main\n\nfunc main() {}\n"}
	if err := hub.CreateRepo("acme", "widget", files, fakehub.RepoOptions{NoCopilot: true}); err != nil {
		t.Fatal(err)
	}
	client := hubtest.Client(t, hub, hub.Tokens().Author)
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := newTickClock()
	budget, err := server.NewBudget(perMinute, burst, clock)
	if err != nil {
		t.Fatal(err)
	}
	m := engine.NewManager(engine.Config{Store: db, Clock: clock, Polls: budget})
	var targets []string
	for i := 1; i <= loops; i++ {
		num, err := hub.CreatePR("acme", "widget", fakehub.NewPR{Head: fmt.Sprintf("b%d", i), Title: "t",
			Files: map[string]string{"main.go": fmt.Sprintf("package main\n\nfunc main() { println(%d) }\n", i)}})
		if err != nil {
			t.Fatal(err)
		}
		settleCI(t, hub, num)
		ref, err := forge.ParsePRURL(hub.PRURL("acme", "widget", num))
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.Add(ctx, engine.NewSpec[watchState](&watchJob{db: db, loop: &watchLoop{f: client, ref: ref}}))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, h.Target())
	}
	t.Cleanup(func() { _ = m.Drain(context.Background()) })
	// The PRs' last changes seconds old, as an idle PR's are: the probe
	// keeps no ETag dated within a second or two of one.
	hub.AdvanceClock(time.Minute)
	clock.settle(t, loops) // every loop read its PR once and waits

	// A poll is one conditional GET of the PR (its CI settled), then a
	// GraphQL read only when it changed: polls are the REST GETs.
	before := hub.Counts()
	for minute := 1; minute <= minutes; minute++ {
		for range 60 {
			clock.Advance(time.Second)
			clock.settle(t, loops)
		}
		got := hub.Counts().Sub(before)
		if limit := perMinute*minute + burst; got.RESTGet > limit {
			t.Fatalf("after %d min: %d polls at the forge, over the budget's %d (%d a minute, burst %d): %+v", minute, got.RESTGet, limit, perMinute, burst, got)
		}
	}
	got := hub.Counts().Sub(before)
	if low := perMinute * (minutes - 1); got.RESTGet < low {
		t.Fatalf("%d polls in %d min: the loops did not poll at the budget's rate (want at least %d): %+v", got.RESTGet, minutes, low, got)
	}
	if got.Writes() != 0 || got.RESTGet-got.NotModified > loops {
		t.Fatalf("polls of unchanged PRs were not conditional reads: %+v", got)
	}
	t.Logf("%d loops asking for %d polls a minute made %d in %d min under a budget of %d a minute", loops, loops*6, got.RESTGet, minutes, perMinute)

	// The budget spent for hours ahead, every loop's poll waits for its
	// permit: a wake reads at once all the same.
	for range 100 * perMinute {
		budget.Reserve()
	}
	for range 60 { // the permits reserved before come, and are spent
		clock.Advance(time.Second)
		clock.settle(t, loops)
	}
	spent := hub.Counts()
	for range 60 {
		clock.Advance(time.Second)
		clock.settle(t, loops)
	}
	woken := hub.Counts()
	if n := woken.Sub(spent).RESTGet; n != 0 {
		t.Fatalf("%d polls in a minute with the budget spent for hours", n)
	}
	if !m.Wake(targets[0]) {
		t.Fatal("no loop to wake")
	}
	deadline := time.After(30 * time.Second)
	for hub.Counts().Sub(woken).RESTGet == 0 {
		select {
		case <-clock.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("a woken loop did not read its PR with the clock standing: a wake waited for the poll budget")
		}
	}
	clock.settle(t, loops+1) // its abandoned wait stays on the clock
}

// settleCI sets a success status on PR num's head, so its probe is the
// PR's conditional GET alone.
func settleCI(t *testing.T, hub *fakehub.Hub, num int) {
	t.Helper()
	pr, err := hub.PR("acme", "widget", num)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"state":"success","context":"ci"}`)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", hub.APIURL()+"/repos/acme/widget/statuses/"+pr.HeadSHA, bytes.NewReader(body))
	req.Header.Set("Authorization", "token "+hub.Tokens().Author)
	resp, err := hub.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("set status: %d", resp.StatusCode)
	}
}
