package forge

import "testing"

// TestREL_3_ParseMergeRequestURL: a GitLab merge request URL, subgroups
// included, parses to its project path and iid, and its String is the
// same URL; a GitHub URL stays GitHub's.
func TestREL_3_ParseMergeRequestURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want PRRef
		url  string
	}{
		{"https://gitlab.com/acme/api/-/merge_requests/7", PRRef{Host: "gitlab.com", Scheme: "https", Owner: "acme", Repo: "api", Number: 7, Forge: GitLab}, "https://gitlab.com/acme/api/-/merge_requests/7"},
		{"https://gl.example.com/acme/platform/svc/-/merge_requests/12/diffs#x", PRRef{Host: "gl.example.com", Scheme: "https", Owner: "acme/platform", Repo: "svc", Number: 12, Forge: GitLab}, "https://gl.example.com/acme/platform/svc/-/merge_requests/12"},
		{"https://github.com/acme/api/pull/7", PRRef{Host: "github.com", Scheme: "https", Owner: "acme", Repo: "api", Number: 7}, "https://github.com/acme/api/pull/7"},
	} {
		got, err := ParsePRURL(c.in)
		if err != nil || got != c.want {
			t.Fatalf("ParsePRURL(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if got.String() != c.url {
			t.Fatalf("String() = %q, want %q", got.String(), c.url)
		}
	}
	for _, bad := range []string{"https://gitlab.com/acme/-/merge_requests/7", "https://gitlab.com/acme/api/-/merge_requests/", "https://gitlab.com/acme/api/-/merge_requests/x", "https://gitlab.com/acme/api/-/issues/7", "https://gitlab.com/a%3Fb/api/-/merge_requests/7"} {
		if ref, err := ParsePRURL(bad); err == nil {
			t.Fatalf("ParsePRURL(%q) = %+v, want an error", bad, ref)
		}
	}
	if k, err := ParseKind("GitLab"); err != nil || k != GitLab || k.String() != "gitlab" {
		t.Fatalf("ParseKind(GitLab) = %q, %v", k, err)
	}
	if k, err := ParseKind("github"); err != nil || k != GitHub || k.String() != "github" {
		t.Fatalf("ParseKind(github) = %q, %v", k, err)
	}
	if _, err := ParseKind("bitbucket"); err == nil {
		t.Fatal("ParseKind(bitbucket) accepted")
	}
}
