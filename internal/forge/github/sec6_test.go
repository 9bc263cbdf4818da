package github

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSEC6_WebHostOfAPI(t *testing.T) {
	tests := []struct{ api, web string }{
		{"https://api.github.com", "github.com"},
		{"https://api.github.com:443/", "github.com"},
		{"https://api.octo.ghe.com", "octo.ghe.com"},
		{"https://ghe.example.com/api/v3", "ghe.example.com"},
		{"ghe.example.com", "ghe.example.com"},
		{"https://GHE.example.com:443/api/v3", "ghe.example.com"},
		{"https://ghe.example.com:8443/api/v3", "ghe.example.com:8443"},
		{"http://127.0.0.1:8080/api/v3", "127.0.0.1:8080"},
		// Only GitHub's own hosts split API and web; an "api." Enterprise
		// host is taken at its word.
		{"https://api.ghe.example.com/api/v3", "api.ghe.example.com"},
		{"https://proxy.example.com/github/api", "proxy.example.com"},
	}
	for _, tt := range tests {
		got, err := WebHost(tt.api)
		if err != nil || got != tt.web {
			t.Errorf("WebHost(%s) = %q, %v; want %q", tt.api, got, err, tt.web)
		}
	}
	if _, err := WebHost("https://user:pw@ghe.example.com"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("WebHost with credentials: %v", err)
	}
}

func TestSEC6_PRHostMustBeTheAPIHost(t *testing.T) {
	tests := []struct {
		name, pr, api string
		allow         bool
		ok            bool
	}{
		{"github.com", "https://github.com/o/r/pull/1", "https://api.github.com", false, true},
		{"www.github.com", "https://www.github.com/o/r/pull/1", "https://api.github.com", false, true},
		{"tenancy", "https://octo.ghe.com/o/r/pull/1", "https://api.octo.ghe.com", false, true},
		{"enterprise", "https://ghe.example.com/o/r/pull/1", "https://ghe.example.com/api/v3", false, true},
		{"enterprise default port spelled", "https://ghe.example.com:443/o/r/pull/1", "https://ghe.example.com/api/v3", false, true},
		{"emulator", "http://127.0.0.1:8080/o/r/pull/1", "http://127.0.0.1:8080/api/v3", false, true},
		{"emulator other port", "http://127.0.0.1:8080/o/r/pull/1", "https://127.0.0.1:8443/api/v3", false, false},
		{"github.com PR, enterprise API", "https://github.com/o/r/pull/1", "https://ghe.example.com/api/v3", false, false},
		{"enterprise PR, github.com API", "https://ghe.example.com/o/r/pull/1", "https://api.github.com", false, false},
		{"PR on another host", "http://evil.example.com/o/r/pull/1", "https://ghe.example.com/api/v3", false, false},
		{"PR on api.github.com is not github.com", "https://api.github.com/o/r/pull/1", "https://api.github.com", false, false},
		{"mismatch allowed", "http://evil.example.com/o/r/pull/1", "https://ghe.example.com/api/v3", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := mustRef(t, tt.pr)
			err := CheckHosts(ref, tt.api, tt.allow)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckHosts = %v, want ok=%v", err, tt.ok)
			}
			var mm *HostMismatchError
			if err != nil && (!errors.As(err, &mm) || !strings.Contains(err.Error(), ref.Host) || !strings.Contains(err.Error(), "--allow-host-mismatch")) {
				t.Errorf("error %q: want one naming the PR host, the API host and the fix", err)
			}
		})
	}
}

func TestSEC6_CloneURLComesFromTheAPI(t *testing.T) {
	tests := []struct {
		name, api, reported string
		want                string // "" means refused
	}{
		{"github.com as reported", "https://api.github.com", "https://github.com/o/r.git", "https://github.com/o/r.git"},
		{"github.com derived", "https://api.github.com", "", "https://github.com/o/r.git"},
		{"tenancy derived", "https://api.octo.ghe.com", "", "https://octo.ghe.com/o/r.git"},
		{"enterprise derived", "https://ghe.example.com/api/v3", "", "https://ghe.example.com/o/r.git"},
		{"emulator over http on loopback", "http://127.0.0.1:8080/api/v3", "http://127.0.0.1:8080/o/r.git", "http://127.0.0.1:8080/o/r.git"},
		{"emulator derived keeps scheme and port", "http://127.0.0.1:8080/api/v3", "", "http://127.0.0.1:8080/o/r.git"},
		{"renamed repository as reported", "https://ghe.example.com/api/v3", "https://ghe.example.com/o/new-name.git", "https://ghe.example.com/o/new-name.git"},
		{"reported on another host", "https://ghe.example.com/api/v3", "https://evil.example.com/o/r.git", ""},
		{"reported over plain http", "https://ghe.example.com/api/v3", "http://ghe.example.com/o/r.git", ""},
		{"derived over plain http", "http://ghe.example.com/api/v3", "", ""},
		{"reported with credentials", "https://ghe.example.com/api/v3", "https://u:pw@ghe.example.com/o/r.git", ""},
		{"reported ssh", "https://api.github.com", "git@github.com:o/r.git", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CloneURL(tt.api, tt.reported, "o", "r")
			if tt.want == "" {
				if err == nil {
					t.Fatalf("CloneURL = %q, want a refusal", got)
				}
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("error leaks the URL's password: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("CloneURL = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSEC6_ClientRefusesTokenOverPlainHTTP(t *testing.T) {
	for _, tt := range []struct {
		api, gql string
		ok       bool
	}{
		{"https://ghe.example.com/api/v3", "", true},
		{"http://127.0.0.1:8080/api/v3", "", true},
		{"http://localhost:8080/api/v3", "http://localhost:8080/api/graphql", true},
		{"http://ghe.example.com/api/v3", "", false},
		{"https://ghe.example.com/api/v3", "http://ghe.example.com/api/graphql", false},
	} {
		_, err := New(Options{APIURL: tt.api, GraphQLURL: tt.gql, Token: "ghp_secret"})
		if (err == nil) != tt.ok {
			t.Errorf("New(%s, %s) = %v, want ok=%v", tt.api, tt.gql, err, tt.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "plain http") || strings.Contains(err.Error(), "ghp_secret")) {
			t.Errorf("error %q: want one saying plain http, without the token", err)
		}
	}
	// Without a token there is nothing to protect: anonymous reads work.
	if _, err := New(Options{APIURL: "http://ghe.example.com/api/v3"}); err != nil {
		t.Errorf("tokenless client refused: %v", err)
	}
}

// TestSEC6_AuthTransportNeverSendsTokenInClear: even a request built by hand
// to an allowed host but over plain http goes out without the token.
func TestSEC6_AuthTransportNeverSendsTokenInClear(t *testing.T) {
	var got []string
	rt := sec6RoundTrip(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.Scheme+" "+r.Header.Get("Authorization"))
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	allowed, _ := url.Parse("http://ghe.example.com/api/v3")
	loop, _ := url.Parse("http://127.0.0.1:9/api/v3")
	tr := &authTransport{next: rt, header: "token ghp_secret", allowed: []*url.URL{allowed, loop}, log: slog.New(slog.DiscardHandler)}
	for _, u := range []string{"http://ghe.example.com/api/v3/user", "http://127.0.0.1:9/api/v3/user"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != "http " || got[1] != "http token ghp_secret" {
		t.Errorf("Authorization sent: %q; want none to ghe.example.com over http, the token to loopback", got)
	}
}

type sec6RoundTrip func(*http.Request) (*http.Response, error)

func (f sec6RoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
