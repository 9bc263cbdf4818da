package github

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

// holdingTransport answers every GET with an empty list once released,
// and records the most requests it saw in flight at once.
type holdingTransport struct {
	release chan struct{}
	mu      sync.Mutex
	now     int
	peak    int
	arrived chan struct{}
}

func (h *holdingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.now++
	h.peak = max(h.peak, h.now)
	h.mu.Unlock()
	h.arrived <- struct{}{}
	<-h.release
	h.mu.Lock()
	h.now--
	h.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader("[]")), Request: req}, nil
}

// TestREL1_ConcurrencyCappedPerHost: ten calls at once reach the host
// three at a time with MaxConcurrent 3; the rest wait for a slot.
func TestREL1_ConcurrencyCappedPerHost(t *testing.T) {
	ht := &holdingTransport{release: make(chan struct{}), arrived: make(chan struct{}, 10)}
	c, _ := newTestClient(t, nil, func(o *Options) {
		o.HTTPClient = &http.Client{Transport: ht}
		o.MaxConcurrent = 3
	})
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := c.IssueEvents(context.Background(), testRef)
			errs <- err
		})
	}
	// Three arrive; no fourth may until one is answered.
	for range 3 {
		<-ht.arrived
	}
	select {
	case <-ht.arrived:
		t.Fatal("a fourth request reached the host while three were in flight")
	case <-time.After(100 * time.Millisecond):
	}
	go func() {
		for range 7 {
			<-ht.arrived
		}
	}()
	close(ht.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("IssueEvents: %v", err)
		}
	}
	if ht.peak != 3 {
		t.Errorf("peak in flight %d, want 3", ht.peak)
	}
}

// TestREL1_SpentLimitHoldsTheHost: a secondary limit met by one call
// makes the next call to the host wait out its retry-after before
// sending, instead of spending a request on a refusal.
func TestREL1_SpentLimitHoldsTheHost(t *testing.T) {
	reg := httpmock.New(t)
	reg.REST("GET", eventsPath, httpmock.StringResponse(429, `{"message":"You have exceeded a secondary rate limit."}`, "Retry-After", "30"))
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(minimalObserve()))
	c, sl := newTestClient(t, reg, func(o *Options) { o.Retry.MaxAttempts = 1 })
	if _, err := c.IssueEvents(context.Background(), testRef); forge.KindOf(err) != forge.KindRateLimited {
		t.Fatalf("events: %v, want rate-limited after its one attempt", err)
	}
	if _, err := c.Observe(context.Background(), testRef); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if got, want := sl.all(), []time.Duration{30 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Errorf("waits = %v, want %v: the second call waits out the host's retry-after", got, want)
	}
}

// TestREL1_SharedLimiterHoldsEveryClient: two clients of one host (two
// loops, one token) share what the host said.
func TestREL1_SharedLimiterHoldsEveryClient(t *testing.T) {
	lim := NewHostLimiter(2)
	reg := httpmock.New(t)
	reg.REST("GET", eventsPath, httpmock.StringResponse(403, `{"message":"API rate limit exceeded"}`,
		"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "9999999999"))
	a, _ := newTestClient(t, reg, func(o *Options) { o.Limiter = lim })
	b, _ := newTestClient(t, reg, func(o *Options) { o.Limiter = lim })
	if _, err := a.IssueEvents(context.Background(), testRef); forge.KindOf(err) != forge.KindRateLimited {
		t.Fatalf("a: %v, want rate-limited", err)
	}
	if _, err := b.IssueEvents(context.Background(), testRef); forge.KindOf(err) != forge.KindRateLimited {
		t.Fatalf("b: %v, want rate-limited without asking", err)
	}
	if n := len(reg.Requests()); n != 1 {
		t.Errorf("%d requests; the second client knew the limit was spent", n)
	}
}

const somethingWrong = "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug."

// partial is GitHub's 200 with data and an error beside it.
func partial(data any) httpmock.Responder {
	b, _ := json.Marshal(map[string]any{"data": data, "errors": []any{map[string]any{"message": somethingWrong, "path": []any{"repository"}}}})
	return httpmock.StringResponse(200, string(b), "Content-Type", "application/json")
}

// TestREL1_PartialGraphQLErrorOnAReadIsRetried: data beside GitHub's own
// error is not a partial success: the read is asked again.
func TestREL1_PartialGraphQLErrorOnAReadIsRetried(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("PullRequestObservation", partial(minimalObserve()))
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(minimalObserve()))
	c, sl := newTestClient(t, reg)
	if _, err := c.Observe(context.Background(), testRef); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if got := sl.all(); !reflect.DeepEqual(got, []time.Duration{time.Second}) {
		t.Errorf("waits = %v, want one back-off", got)
	}
}

// TestREL1_PartialGraphQLErrorOnAWriteIsTransient: a mutation answered
// with GitHub's own error may have landed: not repeated, and reported as
// a fault the engine rides out (it observes again), never as a refusal
// that ends the run.
func TestREL1_PartialGraphQLErrorOnAWriteIsTransient(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("ResolveThread", partial(map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": "PRRT_1", "isResolved": true}}}))
	c, sl := newTestClient(t, reg)
	err := c.ResolveThread(context.Background(), testRef, "PRRT_1")
	if forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("resolve: %v (kind %v), want unreachable", err, forge.KindOf(err))
	}
	if n := len(reg.Requests()); n != 1 || len(sl.all()) != 0 {
		t.Errorf("sent %d times, slept %v; a write that may have landed is not repeated", n, sl.all())
	}
}
