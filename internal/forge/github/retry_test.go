package github

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

var connRefused = &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connect: connection refused", Addr: "ghe.example.com:443"}}

func minimalObserve() map[string]any { return observeFixture(nil, page(false, "")) }

func TestREL1_RetriesServerErrorsThenSucceeds(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("PullRequestObservation", httpmock.StringResponse(502, `{"message":"Server Error"}`))
	reg.GraphQL("PullRequestObservation", httpmock.StringResponse(503, "upstream connect error"))
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(minimalObserve()))
	reg.REST("GET", eventsPath, httpmock.StringResponse(500, `{"message":"Server Error"}`))
	reg.REST("GET", eventsPath, httpmock.JSON(200, []any{event(1, "labeled", "a")}))
	c, sl := newTestClient(t, reg)

	pr, err := c.Observe(context.Background(), testRef)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if pr.Requests != 3 {
		t.Errorf("Requests = %d, want 3 (retries cost requests too)", pr.Requests)
	}
	if _, err := c.IssueEvents(context.Background(), testRef); err != nil {
		t.Fatalf("IssueEvents: %v", err)
	}
	if got, want := sl.all(), []time.Duration{time.Second, 2 * time.Second, time.Second}; !reflect.DeepEqual(got, want) {
		t.Errorf("back-off = %v, want %v", got, want)
	}
}

func TestREL1_PersistingFaultEndsUnreachable(t *testing.T) {
	reg := httpmock.New(t)
	for range 4 {
		reg.GraphQL("PullRequestObservation", httpmock.StringResponse(502, `{"message":"Server Error"}`))
	}
	for range 4 {
		reg.REST("GET", eventsPath, httpmock.Error(connRefused))
	}
	c, sl := newTestClient(t, reg)
	_, err := c.Observe(context.Background(), testRef)
	if forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("observe: %v (kind %v), want unreachable", err, forge.KindOf(err))
	}
	_, err = c.IssueEvents(context.Background(), testRef)
	if forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("events: %v (kind %v), want unreachable", err, forge.KindOf(err))
	}
	if n := len(sl.all()); n != 6 {
		t.Errorf("slept %d times, want 3 per call (4 attempts)", n)
	}
}

func TestREL1_RateLimitWaits(t *testing.T) {
	reset := httpmock.Date.Add(42 * time.Second)
	tests := []struct {
		name  string
		first func(*http.Request) (*http.Response, error)
		wait  time.Duration
	}{
		{"retry-after on 403", httpmock.StringResponse(403, `{"message":"You have exceeded a secondary rate limit."}`, "Retry-After", "7"), 7 * time.Second},
		{"retry-after on 429", httpmock.StringResponse(429, `{"message":"slow down"}`, "Retry-After", "3"), 3 * time.Second},
		{"primary spent waits for reset", httpmock.StringResponse(403, `{"message":"API rate limit exceeded"}`,
			"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", fmt.Sprint(reset.Unix())), 43 * time.Second},
		{"secondary without headers waits a minute", httpmock.StringResponse(403,
			`{"message":"You have exceeded a secondary rate limit","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`), time.Minute},
		{"graphql RATE_LIMITED in a 200", httpmock.GraphQLErrors("RATE_LIMITED", "API rate limit exceeded for user ID 1.",
			"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", fmt.Sprint(reset.Unix())), 43 * time.Second},
		// GitHub's shape today: type RATE_LIMIT, code graphql_rate_limit,
		// and points left that the query costs more than.
		{"graphql RATE_LIMIT graphql_rate_limit in a 200, points left", httpmock.JSON(200, map[string]any{"data": nil, "errors": []any{map[string]any{
			"type": "RATE_LIMIT", "code": "graphql_rate_limit", "message": "API rate limit already exceeded for user ID 1."}}},
			"X-Ratelimit-Remaining", "35", "X-Ratelimit-Used", "4965", "X-Ratelimit-Reset", fmt.Sprint(reset.Unix())), 43 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := httpmock.New(t)
			reg.GraphQL("PullRequestObservation", tt.first)
			reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(minimalObserve()))
			c, sl := newTestClient(t, reg)
			if _, err := c.Observe(context.Background(), testRef); err != nil {
				t.Fatalf("Observe: %v", err)
			}
			if got := sl.all(); !reflect.DeepEqual(got, []time.Duration{tt.wait}) {
				t.Errorf("waits = %v, want [%v]", got, tt.wait)
			}
		})
	}
}

func TestREL1_RateLimitBeyondMaxWaitEndsRateLimited(t *testing.T) {
	reg := httpmock.New(t)
	reset := httpmock.Date.Add(40 * time.Minute)
	reg.REST("GET", eventsPath, httpmock.StringResponse(403, `{"message":"API rate limit exceeded for user"}`,
		"X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", fmt.Sprint(reset.Unix())))
	c, sl := newTestClient(t, reg)
	_, err := c.IssueEvents(context.Background(), testRef)
	if forge.KindOf(err) != forge.KindRateLimited {
		t.Errorf("events: %v (kind %v), want rate-limited", err, forge.KindOf(err))
	}
	// The host's limit is known spent: the next call is refused without
	// a request until the reset.
	_, err = c.Observe(context.Background(), testRef)
	if forge.KindOf(err) != forge.KindRateLimited {
		t.Errorf("observe after the refusal: %v (kind %v), want rate-limited", err, forge.KindOf(err))
	}
	if n := len(reg.Requests()); n != 1 {
		t.Errorf("%d requests; a spent limit is not asked again before its reset", n)
	}

	reg2 := httpmock.New(t)
	reg2.GraphQL("PullRequestObservation", httpmock.GraphQLErrors("RATE_LIMITED", "API rate limit exceeded",
		"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", fmt.Sprint(reset.Unix())))
	c2, sl2 := newTestClient(t, reg2)
	_, err = c2.Observe(context.Background(), testRef)
	if forge.KindOf(err) != forge.KindRateLimited {
		t.Errorf("observe: %v (kind %v), want rate-limited", err, forge.KindOf(err))
	}
	if len(sl.all())+len(sl2.all()) != 0 {
		t.Errorf("slept %v %v; a 40-minute wait is the engine's, not the client's", sl.all(), sl2.all())
	}
}

func TestREL1_WritesNotRetriedBlindly(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("ResolveThread", httpmock.StringResponse(502, `{"message":"Server Error"}`))
	reg.REST("POST", "/api/v3/repos/octo/hello/issues/7/comments", httpmock.StringResponse(500, `{"message":"Server Error"}`))
	reg.GraphQL("AddThreadReply", httpmock.Error(errors.New("read: connection reset by peer")))
	c, sl := newTestClient(t, reg)
	ctx := context.Background()
	if err := c.ResolveThread(ctx, testRef, "PRRT_1"); forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("resolve: %v, want unreachable", err)
	}
	if _, err := c.CreateIssueComment(ctx, testRef, "x"); forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("comment: %v, want unreachable", err)
	}
	if _, err := c.ReplyToThread(ctx, testRef, "PRRT_1", "x"); forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("reply: %v, want unreachable", err)
	}
	if n := len(reg.Requests()); n != 3 || len(sl.all()) != 0 {
		t.Errorf("writes sent %d times with %d sleeps; a write that may have landed is never repeated", n, len(sl.all()))
	}
}

func TestREL1_WritesRetriedWhenTheyDidNotLand(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("ResolveThread", httpmock.Error(connRefused))
	reg.GraphQL("ResolveThread", httpmock.StringResponse(429, `{"message":"slow down"}`, "Retry-After", "2"))
	reg.GraphQL("ResolveThread", httpmock.GraphQLErrors("RATE_LIMITED", "rate limited"))
	reg.GraphQL("ResolveThread", httpmock.GraphQLData(map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": "PRRT_1", "isResolved": true}}}))
	reg.REST("POST", "/api/v3/repos/octo/hello/issues/7/labels", httpmock.Error(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}))
	reg.REST("POST", "/api/v3/repos/octo/hello/issues/7/labels", httpmock.JSON(200, []any{}))
	c, sl := newTestClient(t, reg)
	if err := c.ResolveThread(context.Background(), testRef, "PRRT_1"); err != nil {
		t.Fatalf("ResolveThread: %v", err)
	}
	if err := c.AddLabels(context.Background(), testRef, "x"); err != nil {
		t.Fatalf("AddLabels: %v", err)
	}
	// dial: back-off 1s; 429: its retry-after; header-less RATE_LIMITED as
	// the second refusal: a minute, doubled; the label's dial: 1s.
	if got, want := sl.all(), []time.Duration{time.Second, 2 * time.Second, 2 * time.Minute, time.Second}; !reflect.DeepEqual(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

// TestREL1_SleepHonoursContext: the back-off's wait (the real forgehttp.SleepCtx)
// ends when the context does, with its error. The wait asked for is the
// first back-off; the one slept is an hour, so that a wait that did not
// end with the context would never end in the test: the backstop, a
// minute, is for that.
func TestREL1_SleepHonoursContext(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("PullRequestObservation", httpmock.StringResponse(502, "bad gateway"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var asked []time.Duration
	var slept error
	c, _ := newTestClient(t, reg, func(o *Options) {
		o.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
			asked = append(asked, d)
			cancel()
			slept = forgehttp.SleepCtx(ctx, time.Hour)
			return slept
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := c.Observe(ctx, testRef)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("a cancelled wait still slept")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if len(asked) != 1 || asked[0] != time.Second || !errors.Is(slept, context.Canceled) {
		t.Errorf("waits asked %v, the wait ended with %v; want one back-off of 1s, ended by the cancel", asked, slept)
	}
}

func TestREL1_TimeoutsRetriedForReads(t *testing.T) {
	reg := httpmock.New(t)
	hang := func(req *http.Request) (*http.Response, error) {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	reg.GraphQL("PullRequestObservation", hang)
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(minimalObserve()))
	reg.GraphQL("ResolveThread", hang)
	c, _ := newTestClient(t, reg, func(o *Options) { o.Timeout = 20 * time.Millisecond })
	if _, err := c.Observe(context.Background(), testRef); err != nil {
		t.Fatalf("Observe after a timeout: %v", err)
	}
	err := c.ResolveThread(context.Background(), testRef, "PRRT_1")
	if forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("a timed-out write: %v, want unreachable without retry", err)
	}
}

// TestREL1_ObserveSomethingWentWrongIsUnreachable: GitHub's untyped
// internal failure is its fault and may pass, not a refused query.
func TestREL1_ObserveSomethingWentWrongIsUnreachable(t *testing.T) {
	reg := httpmock.New(t)
	for range 4 { // every attempt of the read
		reg.GraphQL("PullRequestObservation", httpmock.GraphQLErrors("", "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug."))
	}
	c, _ := newTestClient(t, reg)
	if _, err := c.Observe(context.Background(), testRef); forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("observe: %v (kind %v), want unreachable", err, forge.KindOf(err))
	}
}
