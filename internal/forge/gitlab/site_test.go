package gitlab

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestSEC_6_GitLabEndpointsAndCloneURL: the API is on the merge request's
// host unless --api-url names a self-managed root; a token goes only to
// the API's host, over https or to loopback over http.
func TestSEC_6_GitLabEndpointsAndCloneURL(t *testing.T) {
	ref, err := forge.ParsePRURL("https://gitlab.com/acme/platform/api/-/merge_requests/7")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, rest, gql string }{
		{"", "https://gitlab.com/api/v4", "https://gitlab.com/api/graphql"},
		{"https://gl.example.com/api/v4", "https://gl.example.com/api/v4", "https://gl.example.com/api/graphql"},
		{"https://example.com/gitlab/api/v4/", "https://example.com/gitlab/api/v4", "https://example.com/gitlab/api/graphql"},
		{"https://gl.example.com", "https://gl.example.com/api/v4", "https://gl.example.com/api/graphql"},
	} {
		rest, gql, err := Endpoints(ref, c.flag)
		if err != nil || rest != c.rest || gql != c.gql {
			t.Fatalf("Endpoints(%q) = %q, %q, %v; want %q, %q", c.flag, rest, gql, err, c.rest, c.gql)
		}
	}
	for _, bad := range []string{"ftp://gl.example.com/api/v4", "https://user:secret@gl.example.com/api/v4", "gl.example.com"} {
		if _, _, err := Endpoints(ref, bad); err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("Endpoints(%q) err = %v, want a refusal that does not echo credentials", bad, err)
		}
	}
	if err := CheckHosts(ref, "https://gitlab.com:443/api/v4", false); err != nil {
		t.Fatalf("same host refused: %v", err)
	}
	if err := CheckHosts(ref, "https://gl.example.com/api/v4", false); err == nil {
		t.Fatal("a merge request on gitlab.com with the API on gl.example.com was allowed")
	}
	if err := CheckHosts(ref, "https://gl.example.com/api/v4", true); err != nil {
		t.Fatalf("--allow-host-mismatch refused: %v", err)
	}
	for _, c := range []struct {
		rest, reported, want string
		ok                   bool
	}{
		{"https://gitlab.com/api/v4", "https://gitlab.com/acme/api.git", "https://gitlab.com/acme/api.git", true},
		{"https://gitlab.com/api/v4", "", "https://gitlab.com/acme/platform/api.git", true},
		{"https://example.com/gitlab/api/v4", "", "https://example.com/gitlab/acme/platform/api.git", true},
		{"https://gitlab.com/api/v4", "https://evil.example/acme/api.git", "", false},
		{"https://gitlab.com/api/v4", "https://x:y@gitlab.com/acme/api.git", "", false},
		{"http://gl.example.com/api/v4", "http://gl.example.com/acme/api.git", "", false},
		{"http://127.0.0.1:8080/api/v4", "http://127.0.0.1:8080/acme/api.git", "http://127.0.0.1:8080/acme/api.git", true},
	} {
		got, err := CloneURL(c.rest, c.reported, ref)
		if (err == nil) != c.ok || got != c.want {
			t.Fatalf("CloneURL(%q, %q) = %q, %v; want %q ok=%v", c.rest, c.reported, got, err, c.want, c.ok)
		}
	}
}

// TestIF_2_GitLabTokenPrecedence: --token, then CONVERGE_TOKEN, then
// GITLAB_TOKEN, then GL_TOKEN; none is an auth error naming what to set.
func TestIF_2_GitLabTokenPrecedence(t *testing.T) {
	env := map[string]string{"GL_TOKEN": "gl", "GITLAB_TOKEN": "gitlab", "CONVERGE_TOKEN": "conv"}
	get := func(k string) string { return env[k] }
	for _, c := range []struct{ flag, drop, want, src string }{
		{"flag", "", "flag", TokenSourceFlag},
		{"", "", "conv", "CONVERGE_TOKEN"},
		{"", "CONVERGE_TOKEN", "gitlab", "GITLAB_TOKEN"},
		{"", "GITLAB_TOKEN", "gl", "GL_TOKEN"},
	} {
		if c.drop != "" {
			delete(env, c.drop)
		}
		tok, src, err := ResolveToken("gitlab.com", c.flag, get)
		if err != nil || tok != c.want || src != c.src {
			t.Fatalf("ResolveToken = %q, %q, %v; want %q from %s", tok, src, err, c.want, c.src)
		}
	}
	delete(env, "GL_TOKEN")
	_, _, err := ResolveToken("gitlab.com", "", get)
	if forge.KindOf(err) != forge.KindAuth || !strings.Contains(err.Error(), "GITLAB_TOKEN") {
		t.Fatalf("no token: err = %v, want an auth error naming GITLAB_TOKEN", err)
	}
}
