package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
)

// countingServer is a plain loopback web server that only counts what it
// is sent: the "other host" no credential or request may reach.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "not a forge", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestSEC6_PRHostOtherThanAPIHostIsRefused: a PR URL on one host with
// --api-url on another stops at start with exit 2 and one line naming both
// hosts and the fix; neither host is sent a request. With
// --allow-host-mismatch the run goes ahead, and git clones from the
// clone URL the API reports, never from the PR URL's host.
func TestSEC6_PRHostOtherThanAPIHostIsRefused(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	other, hits := countingServer(t)
	otherURL, _ := url.Parse(other.URL)
	apiURL, _ := url.Parse(hub.APIURL())
	prURL := fmt.Sprintf("%s/%s/%s/pull/%d", other.URL, demo.Owner, demo.Repo, demo.Number)
	tok := hub.Tokens().Author
	args := []string{"pr", prURL, "--api-url", hub.APIURL(), "--ca-file", hub.CAFile(),
		"--state", t.TempDir(), "--poll-min", "50ms", "--poll-max", "500ms"}

	before := hub.RequestCount()
	ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": tok})
	code := Run(context.Background(), args, ios)
	if code != exitcode.Usage {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	msg := errOut.String()
	if strings.Count(msg, "\n") != 1 {
		t.Errorf("want one error line, got:\n%s", msg)
	}
	for _, want := range []string{otherURL.Host, apiURL.Host, "--allow-host-mismatch"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg+out.String(), tok) {
		t.Error("error leaks the token")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the PR URL's host got %d requests", n)
	}
	if after := hub.RequestCount(); after.Total() != before.Total() || after.Git != before.Git {
		t.Errorf("the API host was contacted before the refusal: %+v → %+v", before, after)
	}

	t.Run("allowed", func(t *testing.T) {
		ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": tok})
		code := Run(context.Background(), append(args, "--allow-host-mismatch", "--max-iterations", "1"), ios)
		if code == exitcode.Usage || code == exitcode.Auth {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the PR URL's host got %d requests; git must clone from the API's clone URL", n)
		}
		if hub.RequestCount().Git == before.Git {
			t.Errorf("nothing was cloned from the API's host:\n%s%s", out, errOut)
		}
	})
}

// TestSEC6_TokenNeverOverPlainHTTP: a PR on a non-loopback host over
// plain http would send the token in clear to the API and to git: refused
// at start, exit 2, nothing sent (the host does not even resolve).
func TestSEC6_TokenNeverOverPlainHTTP(t *testing.T) {
	const tok = "ghp_PLAINhttpPLAINhttp0123456789"
	ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": tok})
	code := Run(context.Background(), []string{"pr", "http://ghe.invalid/o/r/pull/1", "--state", t.TempDir()}, ios)
	if code != exitcode.Usage || !strings.Contains(errOut.String(), "plain http") || !strings.Contains(errOut.String(), "ghe.invalid") {
		t.Fatalf("exit %d, want 2 naming plain http and the host\n%s%s", code, out, errOut)
	}
	if strings.Contains(errOut.String()+out.String(), tok) {
		t.Error("error leaks the token")
	}
}

// TestSEC6_GitRemoteFollowsTheAPI: the remote is the API's clone URL, or
// one derived on the API's host; a clone URL elsewhere or in clear is
// refused with exit 2, and credentials are scoped to the remote's host.
func TestSEC6_GitRemoteFollowsTheAPI(t *testing.T) {
	ref := forgeRef(t, "https://ghe.example.com/o/r/pull/1")
	remote := gitRemote("https://ghe.example.com/api/v3", ref, "tok", nil)
	for _, tc := range []struct{ reported, want string }{
		{"https://ghe.example.com/o/r.git", "https://ghe.example.com/o/r.git"},
		{"", "https://ghe.example.com/o/r.git"},
		{"https://elsewhere.example.com/o/r.git", ""},
		{"http://ghe.example.com/o/r.git", ""},
	} {
		u, env, err := remote(tc.reported)
		if tc.want == "" {
			if cmdutil.ExitCodeOf(err) != exitcode.Usage {
				t.Errorf("%q: err %v, want exit 2", tc.reported, err)
			}
			continue
		}
		if scope, user := repo.TokenScope(env); err != nil || u != tc.want || scope != "https://ghe.example.com/" || user != repo.GitHubUser {
			t.Errorf("%q: %q, token for %q as %q, %v", tc.reported, u, scope, user, err)
		}
	}
	// GitLab's git takes the token as oauth2's password.
	lab := forgeRef(t, "https://gitlab.example.com/g/p/-/merge_requests/1")
	_, env, err := gitRemote("https://gitlab.example.com/api/v4", lab, "tok", nil)("https://gitlab.example.com/g/p.git")
	if scope, user := repo.TokenScope(env); err != nil || scope != "https://gitlab.example.com/" || user != repo.GitLabUser {
		t.Errorf("GitLab: token for %q as %q, %v", scope, user, err)
	}
}

// TestSEC2_AgentEnvHasNoGitCredentials: git gets its credentials through
// a credential helper on a descriptor (SEC-8), from an entry no process
// can be started with (repo.AuthEnvFor); the environment built for
// agents drops that entry and GIT_CONFIG_* variables, whichever way they
// got into converge's own.
func TestSEC2_AgentEnvHasNoGitCredentials(t *testing.T) {
	const tok = "ghp_GITcredGITcred0123456789"
	environ := append(os.Environ(), repo.AuthEnvFor("https://ghe.example.com/o/r.git", tok, "/ca.pem")...)
	environ = append(environ,
		"GIT_CONFIG_PARAMETERS='http.extraHeader'='Authorization: Basic "+repo.BasicAuth(tok)+"'",
		"GIT_ASKPASS=/bin/echo", "GIT_CONFIG_GLOBAL=/tmp/creds")
	got := agent.ScrubEnv(environ)
	for _, kv := range got {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") {
			t.Errorf("agent env keeps %s", name)
		}
		for _, s := range repo.Secrets(tok) {
			if strings.Contains(kv, s) {
				t.Errorf("agent env holds the token in %s", name)
			}
		}
	}
}

func forgeRef(t *testing.T, u string) forge.PRRef {
	t.Helper()
	ref, err := forge.ParsePRURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
