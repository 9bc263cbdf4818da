package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// TestREL_4_AppRateLimitIsNoRefusal: the App's own requests (its
// installation lookup, its installation tokens) meet GitHub's rate limits
// as every endpoint does — 403 with the primary limit spent, 403 or 429
// with retry-after — and read them as rate limits to ride out, never as
// GitHub refusing the App; a 403 that is no limit stays a refusal.
func TestREL_4_AppRateLimitIsNoRefusal(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	reset := strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
	for _, c := range []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   forge.ErrorKind
	}{
		{"primary 403", http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
			`{"message":"API rate limit exceeded for app ID 42."}`, forge.KindRateLimited},
		{"secondary 403", http.StatusForbidden, map[string]string{"Retry-After": "30"},
			`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`, forge.KindRateLimited},
		{"429", http.StatusTooManyRequests, map[string]string{"Retry-After": "5"}, `{"message":"Too Many Requests"}`, forge.KindRateLimited},
		{"a refusal", http.StatusForbidden, nil, `{"message":"Resource not accessible by integration"}`, forge.KindAuth},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer api.Close()
			app, err := NewApp(AppOptions{ID: 42, Key: key, APIURL: api.URL + "/api/v3"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = app.Token(context.Background(), "o", "r")
			if got := forge.KindOf(err); got != c.want {
				t.Fatalf("%s: %v (kind %v), want kind %v", c.name, err, got, c.want)
			}
		})
	}
}
