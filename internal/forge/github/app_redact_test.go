package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// TestSEC5_AppTokenMintedLaterRedactedFromErrors: an installation token
// minted after the Client was made, and after the first one was refused,
// is kept out of the Client's errors when the API echoes it.
func TestSEC5_AppTokenMintedLaterRedactedFromErrors(t *testing.T) {
	toks := []string{"ghs_firstInstallationToken0123456789", "ghs_renewedInstallationToken012345678"}
	minted := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case r.URL.Path == "/api/v3/app/installations/5/access_tokens" && strings.HasPrefix(auth, "Bearer ey"):
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"token":"` + toks[minted] + `","expires_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`))
			minted++
		case auth == "token "+toks[0]:
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials"}`))
		default:
			// An API that echoes what it was sent.
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(`{"message":"cannot label with ` + strings.TrimPrefix(auth, "token ") + `"}`))
		}
	}))
	defer api.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	app, err := NewApp(AppOptions{ID: 42, Key: key, Installation: 5, APIURL: api.URL + "/api/v3"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{APIURL: api.URL + "/api/v3", App: app, AppRepo: "o/r", Retry: RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.AddLabels(context.Background(), forge.PRRef{Host: "127.0.0.1", Owner: "o", Repo: "r", Number: 1}, "x")
	if err == nil || minted != 2 {
		t.Fatalf("AddLabels = %v with %d tokens minted; want an error after the renewal", err, minted)
	}
	if strings.Contains(err.Error(), toks[1]) || !strings.Contains(err.Error(), "cannot label with") {
		t.Fatalf("the error holds the renewed token, or not the API's words: %v", err)
	}
}
