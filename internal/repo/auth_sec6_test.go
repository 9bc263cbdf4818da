package repo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

func TestSEC6_GitAuthEnvRefusesPlainHTTP(t *testing.T) {
	tests := []struct {
		remote string
		ok     bool
	}{
		{"https://github.com/o/r.git", true},
		{"https://ghe.example.com:8443/o/r.git", true},
		{"http://127.0.0.1:8080/o/r.git", true},
		{"http://localhost:8080/o/r.git", true},
		{"http://[::1]:8080/o/r.git", true},
		{"http://ghe.example.com/o/r.git", false},
		{"http://192.168.1.10:8080/o/r.git", false},
		{"git@github.com:o/r.git", false},
		{"git://github.com/o/r.git", false},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			env, err := repo.GitAuthEnv(tt.remote, testToken)
			if (err == nil) != tt.ok {
				t.Fatalf("GitAuthEnv = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && strings.Contains(err.Error(), testToken) {
				t.Errorf("error carries the token: %v", err)
			}
			if repo.HasToken(env) != tt.ok {
				t.Errorf("token present = %v, want %v", !tt.ok, tt.ok)
			}
			// The unchecked form never hands git a token it would send in
			// clear either; it only stays silent about it.
			if repo.HasToken(repo.AuthEnvFor(tt.remote, testToken)) != tt.ok {
				t.Errorf("AuthEnvFor token present = %v, want %v", !tt.ok, tt.ok)
			}
		})
	}
	if env, err := repo.GitAuthEnv("http://ghe.example.com/o/r.git", ""); err != nil || len(env) != 0 {
		t.Errorf("no token, nothing to refuse: %q, %v", env, err)
	}
}

// TestSEC6_GitSendsNoTokenInClear points git at a plain-http remote on
// another host through a loopback proxy that records what it is sent: the
// request arrives, the Authorization header does not.
func TestSEC6_GitSendsNoTokenInClear(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.String()+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer proxy.Close()
	remote := "http://ghe.example.com/o/r.git"
	env := append(isolatedEnv(t), "http_proxy="+proxy.URL, "HTTP_PROXY="+proxy.URL, "no_proxy=", "NO_PROXY=")
	env = append(env, repo.AuthEnvFor(remote, testToken)...)
	if _, err := repo.Clone(context.Background(), remote, filepath.Join(t.TempDir(), "c"), env); err == nil {
		t.Fatal("clone through the refusing proxy succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("git sent nothing through the proxy; the test proves nothing")
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " auth=") {
			t.Errorf("git sent credentials in clear: %s", s)
		}
	}
}
