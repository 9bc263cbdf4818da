package forgehttp

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestSEC_6_CredentialsOnlyToAllowedOrigins(t *testing.T) {
	mustURL := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	allowed := []*url.URL{mustURL("https://gitlab.example.com/api/v4"), mustURL("http://127.0.0.1:8080/api/v4")}
	cases := map[string]bool{
		"https://gitlab.example.com/api/graphql":    true,
		"https://GITLAB.example.com:443/x":          true,
		"https://gitlab.example.com:8443/x":         false,
		"http://gitlab.example.com/x":               false,
		"https://evil.example.com/x":                false,
		"http://127.0.0.1:8080/group/proj.git":      true,
		"http://127.0.0.1:9090/group/proj.git":      false,
		"https://gitlab.example.com.evil.example/x": false,
	}
	for s, want := range cases {
		if got := CredentialsAllowed(mustURL(s), allowed); got != want {
			t.Errorf("CredentialsAllowed(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestREL_1_HostLimiter(t *testing.T) {
	l := NewHostLimiter(1)
	ctx := context.Background()
	release, err := l.Acquire(ctx, "h")
	if err != nil || l.InFlight("H") != 1 {
		t.Fatalf("acquire: %v, in flight %d", err, l.InFlight("H"))
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Acquire(short, "h"); err == nil {
		t.Error("a second slot past the cap")
	}
	release()
	release()
	if l.InFlight("h") != 0 {
		t.Error("release did not give the slot back once")
	}
	now := time.Unix(1000, 0)
	l.Block("h", now.Add(time.Minute), "429")
	l.Block("h", now.Add(time.Second), "earlier")
	if until, why := l.BlockedUntil("h", now); !until.Equal(now.Add(time.Minute)) || why != "429" {
		t.Errorf("blocked until %v (%s), the later block wins", until, why)
	}
	if until, _ := l.BlockedUntil("h", now.Add(2*time.Minute)); !until.IsZero() {
		t.Errorf("still blocked after the block ended: %v", until)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	if _, ok := RetryAfter(h, now); ok {
		t.Error("no header read as a wait")
	}
	h.Set("Retry-After", "12")
	if d, ok := RetryAfter(h, now); !ok || d != 12*time.Second {
		t.Errorf("seconds: %v %v", d, ok)
	}
	h.Set("Retry-After", now.Add(time.Minute).Format(http.TimeFormat))
	if d, ok := RetryAfter(h, now); !ok || d != time.Minute {
		t.Errorf("date: %v %v", d, ok)
	}
}
