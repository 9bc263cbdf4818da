package classify

import "testing"

// TestPR_S5_StructuralNeverMinorWhenSomethingIsWrong: a comment that says
// something is wrong, missing, broken or unreachable is never minor, on a
// docs page or in code (issue 36: "the path docs/setup.md referenced here
// does not exist" on a README was called minor on the docs page's word).
// Each body below was minor before the says-wrong rule; with it the judge
// decides (borderline), or a defect word decides structural in code.
func TestPR_S5_StructuralNeverMinorWhenSomethingIsWrong(t *testing.T) {
	for _, c := range []struct{ path, body string }{
		// Docs pages.
		{"README.md", "The path docs/setup.md referenced here does not exist."},
		{"docs/guide.md", "`docs/setup.md` doesn't exist in this repo."},
		{"docs/install.md", "This link is dead."},
		{"docs/install.md", "This link 404s."},
		{"README.md", "The link returns a 404."},
		{"README.md", "The anchor #configuration is missing from the page."},
		{"docs/index.rst", "This URL is unreachable from outside the VPN."},
		{"docs/api.md", "There is no such endpoint as /v2/users."},
		{"docs/api.md", "The example response here is inaccurate: the endpoint returns items, not data."},
		{"README.md", "This points to a non-existent page."},
		{"docs/guide.md", "The screenshot is not found."},
		{"README.md", "Typo in the URL: github.com/convergeloop/convrge"},
		{"CHANGELOG.md", "nit: the release notes link was removed upstream."},
		{"docs/guide.md", "The command shown here does not work on macOS."},
		// Code.
		{"internal/x/x.go", "nit: the file this comment references does not exist anymore"},
		{"src/app.ts", "nit: `./utils/helper` doesn't exist"},
		{"internal/x/x.go", "nit: this branch is unreachable"},
		{"scripts/build.py", "nit: the link in this docstring 404s"},
		{"lib/client.rb", "[nitpick] The URL in this doc comment is dead."},
		{"internal/x/x.go", "nit: the referenced helper `loadConfig` was removed in this PR."},
		{"src/main.rs", "nit: this import path is unresolved."},
	} {
		r := Heuristic(onPath(c.path, "See docs/setup.md", c.body))
		if r.Verdict == Minor || !hasRule(r, "says-wrong") {
			t.Errorf("%s %q: %s, want never minor (says-wrong)", c.path, c.body, r)
		}
	}
	// Genuine nits stay minor: a typo, wording, a missing mark or
	// newline, a comment that is only old.
	for _, c := range []struct{ path, body string }{
		{"docs/guide.md", "Typo: recieve -> receive"},
		{"docs/guide.md", "Missing period at the end of the sentence."},
		{"README.md", "nit: missing trailing newline"},
		{"README.md", "The sentence is missing an ending `.`."},
		{"docs/guide.md", "This paragraph reads better as a list."},
		{"internal/x/x.go", "nit: trailing whitespace"},
		{"internal/x/x.go", "nit: a comma is missing after the clause in this comment"},
		{"src/app.ts", "nit: typo in the comment"},
		{"internal/x/x.go", "This comment is outdated: it still mentions the old name."},
	} {
		if r := Heuristic(onPath(c.path, "// Returns the name", c.body)); r.Verdict != Minor {
			t.Errorf("%s %q: %s, want minor", c.path, c.body, r)
		}
	}
}
