package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSEC6_AppCredentialsGoOnlyToTheAPIHost: the App's JWT and its
// installation tokens reach the API host and no other: not through a
// redirect of the App's own requests, not through a redirect of the
// client's, not in a request built by hand for another host; an App for
// plain http off loopback, or for another host than the client's, is
// refused before any request.
func TestSEC6_AppCredentialsGoOnlyToTheAPIHost(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	defer other.Close()
	const tok = "ghs_installationTokenValue0123456789"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case r.URL.Path == "/api/v3/repos/o/moved/installation":
			http.Redirect(w, r, other.URL+"/steal-jwt", http.StatusFound)
		case r.URL.Path == "/api/v3/repos/o/r/installation" && strings.HasPrefix(auth, "Bearer ey"):
			w.Write([]byte(`{"id":5}`))
		case r.URL.Path == "/api/v3/app/installations/5/access_tokens" && strings.HasPrefix(auth, "Bearer ey"):
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"token":"` + tok + `","expires_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`))
		case r.URL.Path == "/api/v3/repos/o/r" && auth == "token "+tok:
			http.Redirect(w, r, other.URL+"/steal-token", http.StatusFound)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials"}`))
		}
	}))
	defer api.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	app, err := NewApp(AppOptions{ID: 42, Key: key, APIURL: api.URL + "/api/v3"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{APIURL: api.URL + "/api/v3", App: app, AppRepo: "o/r", Retry: RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The App's own request redirected elsewhere is not followed.
	if _, err := app.Token(ctx, "o", "moved"); err == nil {
		t.Fatal("a redirected installation lookup was taken")
	}
	// The client's request redirected elsewhere goes there bare.
	_, _, _ = c.rest.Repositories.Get(ctx, "o", "r")
	// A request built by hand for another host goes bare.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, other.URL+"/by-hand", nil)
	if resp, err := c.http.Do(req); err == nil {
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(elsewhere, ","); !strings.Contains(got, "/steal-token") || !strings.Contains(got, "/by-hand") || strings.Contains(got, "/steal-jwt") {
		t.Fatalf("the other host saw %q; want the client's redirect and the hand-built request, and not the App's own redirect", got)
	}
	for _, e := range elsewhere {
		if strings.TrimSpace(e) != strings.Fields(e)[0] {
			t.Errorf("the other host got credentials: %q", e)
		}
	}
	if got := app.Secrets(); len(got) != 1 || got[0] != tok {
		t.Errorf("the client minted %v; want the one token, sent only to the API", got)
	}

	if _, err := NewApp(AppOptions{ID: 42, Key: key, APIURL: "http://ghe.example.com/api/v3"}); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("App over plain http off loopback: %v; want refused", err)
	}
	if _, err := New(Options{APIURL: other.URL + "/api/v3", App: app, AppRepo: "o/r"}); err == nil || !strings.Contains(err.Error(), "SEC-6") {
		t.Errorf("App of another host: %v; want refused", err)
	}
	if _, err := New(Options{APIURL: api.URL + "/api/v3", App: app, AppRepo: "o/r", Token: "ghp_x"}); err == nil {
		t.Error("an App and a token together were accepted")
	}
}
