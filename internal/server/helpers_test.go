package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/store"
)

// fakeClock moves only when told; After's channels fire on Advance.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	// asked receives one value per After call, so a test can wait until
	// the code under test waits before it advances the clock.
	asked chan time.Duration
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), asked: make(chan time.Duration, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	select {
	case c.asked <- d:
	default:
	}
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// waitAsked waits until the code under test calls After.
func (c *fakeClock) waitAsked(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.asked:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("nothing waited on the clock")
		return 0
	}
}

// fakeLoops records what the server asked of the manager.
type fakeLoops struct {
	// woke, when set, receives every wake.
	woke       chan string
	mu         sync.Mutex
	runs       []RunInfo
	wakes      []string
	registered []string
	// failNext fails that many Registers before they succeed.
	failNext int
	failed   int
}

func (l *fakeLoops) Wake(target string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakes = append(l.wakes, target)
	if l.woke != nil {
		l.woke <- target
	}
}

func (l *fakeLoops) Register(_ context.Context, target string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failNext > 0 {
		l.failNext--
		l.failed++
		return errors.New("read .converge.yaml: git clone: fork/exec /usr/bin/git: no such file or directory")
	}
	l.registered = append(l.registered, target)
	l.runs = append(l.runs, RunInfo{Target: target, Phase: "new"})
	return nil
}

func (l *fakeLoops) Snapshot() []RunInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RunInfo(nil), l.runs...)
}

func (l *fakeLoops) Wakes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.wakes...)
}

func (l *fakeLoops) Registered() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.registered...)
	sort.Strings(out)
	return out
}

const (
	testSecret = "It's a Secret to Everybody"
	prA        = "https://github.com/acme/widget/pull/7"
	prB        = "https://github.com/acme/widget/pull/8"
)

func openStore(t *testing.T, path string, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type rig struct {
	srv   *Server
	loops *fakeLoops
	clock *fakeClock
	st    *store.Store
	path  string
}

func newRig(t *testing.T, mod func(*Options)) *rig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "converge.db")
	r := &rig{loops: &fakeLoops{runs: []RunInfo{
		{Target: prA, Phase: "waiting", Head: "aaa111", Branch: "feature-a", Base: "main"},
		{Target: prB, Phase: "fixing", Head: "bbb222", Branch: "feature-b", Base: "main"},
	}}, clock: newFakeClock(), path: path}
	r.st = openStore(t, path, store.WithClock(r.clock.Now))
	opts := Options{Loops: r.loops, Store: r.st, Secret: []byte(testSecret), Addr: "127.0.0.1:0", Clock: r.clock}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = s
	return r
}

// deliver posts one webhook delivery signed with secret ("" sends none)
// and returns the status.
func (r *rig) deliver(t *testing.T, event, id, secret, body string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(HeaderSignature, Sign([]byte(secret), []byte(body)))
	}
	rec := httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	return rec.Code
}

// settle ends every open window and fires it, synchronously.
func (r *rig) settle() {
	r.clock.Advance(r.srv.opts.Window)
	r.srv.wakes.flush()
	r.srv.discover.flush()
	r.srv.rearm.flush()
}

func (r *rig) do(t *testing.T, method, path, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
	req.Host = "127.0.0.1:8080"
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	return rec
}

func reviewPayload(number int) string {
	return `{"action":"submitted","review":{"id":1,"state":"commented","commit_id":"aaa111"},` +
		`"pull_request":{"number":` + itoa(number) + `,"head":{"sha":"aaa111","ref":"feature-a"}},` +
		`"repository":{"full_name":"acme/widget"}}`
}

func itoa(n int) string { return strconv.Itoa(n) }

// deliverSigned posts body under a given signature header.
func (r *rig) deliverSigned(t *testing.T, event, id, sig, body string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderSignature, sig)
	rec := httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	return rec.Code
}
