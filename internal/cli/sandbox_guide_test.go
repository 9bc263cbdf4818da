package cli

import (
	"strings"
	"testing"
)

// TestSandboxGuide: on a terminal `converge sandbox` tells how to point gh
// and git at it, git's CA through GIT_SSL_CAINFO (it ignores SSL_CERT_FILE),
// and names the seeded repository and PR; over plain http it offers no gh.
func TestSandboxGuide(t *testing.T) {
	info := sandboxInfo{
		APIURL: "https://127.0.0.1:5000/api/v3", GitURL: "https://127.0.0.1:5000/octo-org/textstats.git",
		PRURL: "https://127.0.0.1:5000/octo-org/textstats/pull/1", CAFile: "/s/ca.pem",
		Tokens: sandboxTokens{Author: "ghp_author"}, Host: "127.0.0.1:5000", Repo: "octo-org/textstats", PRNumber: 1,
	}
	g := sandboxGuide(info, false)
	for _, want := range []string{
		"Serving octo-org/textstats with pull request #1 open: https://127.0.0.1:5000/octo-org/textstats/pull/1",
		"GH_HOST=127.0.0.1:5000 GH_ENTERPRISE_TOKEN=ghp_author", "SSL_CERT_FILE=/s/ca.pem GIT_SSL_CAINFO=/s/ca.pem",
		"gh pr view 1 -R 127.0.0.1:5000/octo-org/textstats\n",
		`git -c http.extraHeader="Authorization: Bearer $GH_ENTERPRISE_TOKEN" clone https://127.0.0.1:5000/octo-org/textstats.git`,
		"converge pr https://127.0.0.1:5000/octo-org/textstats/pull/1 --api-url https://127.0.0.1:5000/api/v3 --ca-file /s/ca.pem",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("guide lacks %q:\n%s", want, g)
		}
	}
	if g := sandboxGuide(info, true); strings.Contains(g, "gh pr view") || strings.Contains(g, "SSL_CERT_FILE=") || !strings.Contains(g, "https only") {
		t.Errorf("plain-http guide:\n%s", g)
	}
}
