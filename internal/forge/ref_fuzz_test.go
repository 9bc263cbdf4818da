package forge

import (
	"strings"
	"testing"
)

// FuzzREL_3_ParsePRURL: a PR URL that parses names a positive number, an
// owner and a repository that are single path segments, and its String
// parses back to the same PR — converge's own links and state keys can be
// fed back to it.
func FuzzREL_3_ParsePRURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/acme/widget/pull/1", "http://127.0.0.1:8080/o/r/pull/7", "https://github.com/o/r/pull/7/files#diff",
		" https://ghe.example.com/team/svc/pull/42 ", "https://github.com/o/r/issues/1", "https://github.com/o/r/pull/0",
		"https://github.com/o/r/pull/-1", "ftp://h/o/r/pull/1", "https:///o/r/pull/1", "github.com/o/r/pull/1",
		"https://github.com/o%2Fx/r/pull/1", "https://github.com/o/r/pull/99999999999999999999", "https://user:pw@h/o/r/pull/3?x=1",
		"https://github.com/o%3Fq/r/pull/1", "https://github.com/o/r%23x/pull/1", "https://github.com/./r/pull/1",
		"https://gitlab.com/g/p/-/merge_requests/3", "https://gitlab.example.com/g/sub/p/-/merge_requests/12/diffs",
		"http://127.0.0.1:9/g/p/-/merge_requests/", "https://gitlab.com/-/merge_requests/1", "https://gitlab.com/g/-/merge_requests/1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParsePRURL(s)
		if err != nil {
			if !strings.Contains(err.Error(), "want https://HOST/OWNER/REPO/pull/NUMBER or https://HOST/GROUP/PROJECT/-/merge_requests/IID") {
				t.Fatalf("error for %q does not say what is wanted: %v", s, err)
			}
			return
		}
		// A GitLab project's namespace may hold subgroups; a GitHub owner
		// is one segment.
		if ref.Number <= 0 || ref.Host == "" || ref.Owner == "" || ref.Repo == "" ||
			(ref.Forge == GitHub && strings.Contains(ref.Owner, "/")) || strings.Contains(ref.Repo, "/") || (ref.Scheme != "https" && ref.Scheme != "http") {
			t.Fatalf("ParsePRURL(%q) = %+v", s, ref)
		}
		back, err := ParsePRURL(ref.String())
		if err != nil || back != ref {
			t.Fatalf("ParsePRURL(%q) = %+v, whose URL %q parses as %+v (%v)", s, ref, ref.String(), back, err)
		}
	})
}
