package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func mustRef(t *testing.T, u string) forge.PRRef {
	t.Helper()
	r, err := forge.ParsePRURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestIF3_EndpointsFromURL(t *testing.T) {
	tests := []struct {
		name, pr, flag string
		env            []string
		rest, gql      string
	}{
		{"github.com", "https://github.com/o/r/pull/1", "", nil,
			"https://api.github.com", "https://api.github.com/graphql"},
		{"enterprise host from PR URL", "https://ghe.example.com/o/r/pull/1", "", nil,
			"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"http emulator keeps scheme and port", "http://127.0.0.1:8080/o/r/pull/1", "", nil,
			"http://127.0.0.1:8080/api/v3", "http://127.0.0.1:8080/api/graphql"},
		{"ghe.com data residency", "https://octo.ghe.com/o/r/pull/1", "", nil,
			"https://api.octo.ghe.com", "https://api.octo.ghe.com/graphql"},
		{"flag full REST base", "https://ghe.example.com/o/r/pull/1", "https://ghe.example.com/api/v3/", nil,
			"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"flag bare host gets /api/v3", "https://ghe.example.com/o/r/pull/1", "https://ghe.example.com", nil,
			"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"flag host without scheme", "https://ghe.example.com/o/r/pull/1", "ghe.example.com", nil,
			"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"flag api.github.com", "https://github.com/o/r/pull/1", "https://api.github.com/", nil,
			"https://api.github.com", "https://api.github.com/graphql"},
		{"flag emulator over https", "http://127.0.0.1:8080/o/r/pull/1", "https://localhost:8443/api/v3", nil,
			"https://localhost:8443/api/v3", "https://localhost:8443/api/graphql"},
		{"flag beats env", "https://ghe.example.com/o/r/pull/1", "https://ghe.example.com/api/v3",
			[]string{"GITHUB_API_URL", "https://other.example.com/api/v3"},
			"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"env for the same host", "https://ghe.example.com/o/r/pull/1", "",
			[]string{"GITHUB_API_URL", "https://ghe.example.com"},
			"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"env for another host is ignored (Actions on github.com, PR elsewhere)", "http://127.0.0.1:8080/o/r/pull/1", "",
			[]string{"GITHUB_API_URL", "https://api.github.com"},
			"http://127.0.0.1:8080/api/v3", "http://127.0.0.1:8080/api/graphql"},
		{"env api.github.com for github.com", "https://github.com/o/r/pull/1", "",
			[]string{"GITHUB_API_URL", "https://api.github.com"},
			"https://api.github.com", "https://api.github.com/graphql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, gql, err := Endpoints(mustRef(t, tt.pr), tt.flag, envOf(tt.env...))
			if err != nil {
				t.Fatalf("Endpoints: %v", err)
			}
			if rest != tt.rest || gql != tt.gql {
				t.Errorf("got %s, %s; want %s, %s", rest, gql, tt.rest, tt.gql)
			}
		})
	}
}

func TestIF3_EndpointsRejectBadFlag(t *testing.T) {
	for _, flag := range []string{"ftp://ghe.example.com", "https://user:pw@ghe.example.com/api/v3", "https://"} {
		_, _, err := Endpoints(mustRef(t, "https://ghe.example.com/o/r/pull/1"), flag, nil)
		if err == nil || !strings.Contains(err.Error(), "--api-url") {
			t.Errorf("flag %q: err = %v, want one naming --api-url", flag, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("error leaks URL credentials: %v", err)
		}
	}
}

func TestIF2_TokenPrecedence(t *testing.T) {
	gh := func(tok string) func(context.Context, string) (string, error) {
		return func(_ context.Context, host string) (string, error) {
			if tok == "" {
				return "", errors.New("not logged in to " + host)
			}
			return tok + "@" + host, nil
		}
	}
	tests := []struct {
		name, host, flag string
		env              []string
		gh               string
		token, source    string
	}{
		{"flag wins", "github.com", "F", []string{"CONVERGE_TOKEN", "C", "GH_TOKEN", "G"}, "gh", "F", "--token"},
		{"CONVERGE_TOKEN next", "github.com", "", []string{"CONVERGE_TOKEN", "C", "GH_TOKEN", "G"}, "gh", "C", "CONVERGE_TOKEN"},
		{"CONVERGE_TOKEN on enterprise", "ghe.example.com", "", []string{"CONVERGE_TOKEN", "C", "GH_ENTERPRISE_TOKEN", "E"}, "", "C", "CONVERGE_TOKEN"},
		{"dotcom GH_TOKEN before GITHUB_TOKEN", "github.com", "", []string{"GH_TOKEN", "G", "GITHUB_TOKEN", "T"}, "gh", "G", "GH_TOKEN"},
		{"dotcom GITHUB_TOKEN", "github.com", "", []string{"GITHUB_TOKEN", "T", "GH_ENTERPRISE_TOKEN", "E"}, "gh", "T", "GITHUB_TOKEN"},
		{"dotcom gh auth token last", "github.com", "", []string{"GH_ENTERPRISE_TOKEN", "E"}, "gh", "gh@github.com", "gh auth token"},
		{"enterprise GH_ENTERPRISE_TOKEN", "ghe.example.com", "", []string{"GH_TOKEN", "G", "GH_ENTERPRISE_TOKEN", "E", "GITHUB_ENTERPRISE_TOKEN", "E2"}, "", "E", "GH_ENTERPRISE_TOKEN"},
		{"enterprise GITHUB_ENTERPRISE_TOKEN", "ghe.example.com", "", []string{"GITHUB_ENTERPRISE_TOKEN", "E2", "GITHUB_TOKEN", "T",
			"GITHUB_API_URL", "https://ghe.example.com/api/v3"}, "", "E2", "GITHUB_ENTERPRISE_TOKEN"},
		{"enterprise GITHUB_TOKEN when GITHUB_API_URL names the host", "ghe.example.com", "", []string{"GITHUB_TOKEN", "T",
			"GITHUB_API_URL", "https://ghe.example.com/api/v3"}, "gh", "T", "GITHUB_TOKEN"},
		{"enterprise GITHUB_TOKEN ignored for another host", "ghe.example.com", "", []string{"GITHUB_TOKEN", "T",
			"GITHUB_API_URL", "https://api.github.com"}, "gh", "gh@ghe.example.com", "gh auth token --hostname ghe.example.com"},
		{"enterprise GITHUB_TOKEN ignored without GITHUB_API_URL", "ghe.example.com", "", []string{"GITHUB_TOKEN", "T", "GH_TOKEN", "G"},
			"gh", "gh@ghe.example.com", "gh auth token --hostname ghe.example.com"},
		{"emulator with port", "127.0.0.1:8080", "", []string{"GITHUB_TOKEN", "T", "GITHUB_API_URL", "http://127.0.0.1:8080/api/v3"}, "", "T", "GITHUB_TOKEN"},
		{"emulator other port does not match", "127.0.0.1:8080", "", []string{"GITHUB_TOKEN", "T", "GITHUB_API_URL", "http://127.0.0.1:9090/api/v3"},
			"gh", "gh@127.0.0.1:8080", "gh auth token --hostname 127.0.0.1:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, src, err := ResolveToken(tt.host, tt.flag, envOf(tt.env...), gh(tt.gh))
			if err != nil {
				t.Fatalf("ResolveToken: %v", err)
			}
			if tok != tt.token || src != tt.source {
				t.Errorf("got %q from %q; want %q from %q", tok, src, tt.token, tt.source)
			}
		})
	}
}

func TestIF2_MissingTokenIsAuthErrorWithFix(t *testing.T) {
	noGH := func(context.Context, string) (string, error) { return "", errors.New("gh: not logged in") }
	_, _, err := ResolveToken("ghe.example.com", "", envOf("GH_TOKEN", "dotcom-only"), noGH)
	if forge.KindOf(err) != forge.KindAuth {
		t.Fatalf("kind = %v, want auth (exit 6)", forge.KindOf(err))
	}
	for _, want := range []string{"ghe.example.com", "GH_ENTERPRISE_TOKEN", "gh auth login --hostname ghe.example.com"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_, _, err = ResolveToken("github.com", "", envOf(), nil)
	if forge.KindOf(err) != forge.KindAuth || !strings.Contains(err.Error(), "GH_TOKEN") {
		t.Errorf("github.com: err = %v, want auth error naming GH_TOKEN", err)
	}
}
