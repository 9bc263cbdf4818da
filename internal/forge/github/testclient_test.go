package github

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

// Test clients.

// sleeps records the waits, and each moves the test's clock on by its
// length, so a wait sat out is over when it returns.
type sleeps struct {
	mu  sync.Mutex
	d   []time.Duration
	now time.Time
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.now = s.now.Add(d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

const testToken = "ghp_s3cretT0kenValue1234567890abcdefABCD"

// newTestClient returns a Client for an Enterprise-style host whose
// transport is reg, with recorded (not real) sleeps.
func newTestClient(t *testing.T, reg *httpmock.Registry, mutate ...func(*Options)) (*Client, *sleeps) {
	t.Helper()
	sl := &sleeps{now: httpmock.Date}
	opts := Options{
		APIURL:     "https://ghe.example.com/api/v3",
		Token:      testToken,
		HTTPClient: &http.Client{Transport: reg},
		Retry: RetryPolicy{
			Sleep: func(ctx context.Context, d time.Duration) error { return sl.sleep(ctx, d) },
			Now:   sl.clock,
		},
	}
	for _, m := range mutate {
		m(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, sl
}
