package repo_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

const testToken = "ghs_TeStToKeN0123456789abcdefXYZ"

// gitHTTPServer serves the bare repositories under root through git's own
// smart-HTTP backend, demanding the Authorization header git sends with
// AuthEnvFor's credential; without it, a 401 asks git for one.
func gitHTTPServer(t *testing.T, root string, tls bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git not installed")
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skip("git-http-backend not available")
	}
	h := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x-access-token"},
	}
	var authed atomic.Int32
	want := "Basic " + repo.BasicAuth(testToken)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		authed.Add(1)
		h.ServeHTTP(w, r)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(handler)
	} else {
		srv = httptest.NewServer(handler)
	}
	t.Cleanup(srv.Close)
	return srv, &authed
}

func bareRepo(t *testing.T, root, name string, env []string) {
	t.Helper()
	g := &repo.Git{Dir: root, Env: env}
	git(t, g, "init", "--quiet", "--bare", "-b", "main", name)
	git(t, &repo.Git{Dir: filepath.Join(root, name), Env: env}, "config", "http.receivepack", "true")
}

// assertNoSecret fails if the token, in any form, is anywhere under dir.
func assertNoSecret(t *testing.T, dir string) {
	t.Helper()
	secrets := repo.Secrets(testToken)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("credential found in %s", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIF2_GitCredentialsNeverOnDisk(t *testing.T) {
	ctx := context.Background()
	env := isolatedEnv(t)
	root := t.TempDir()
	bareRepo(t, root, "o/r.git", env)
	srv, authed := gitHTTPServer(t, root, false)
	url := srv.URL + "/o/r.git"

	// Without the token the server refuses, and git fails at once instead
	// of prompting.
	if _, err := repo.Clone(ctx, url, filepath.Join(t.TempDir(), "noauth"), env); err == nil {
		t.Fatal("clone without credentials succeeded")
	}

	for _, tc := range []struct {
		name string
		auth []string
	}{
		{"scoped", repo.AuthEnvFor(url, testToken)},
		{"scoped-user", repo.AuthEnvForUser(url, "x-access-token", testToken)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "clone")
			genv := append(append([]string{}, env...), tc.auth...)
			g, err := repo.Clone(ctx, url, dir, genv)
			if err != nil {
				t.Fatalf("clone with token: %v", err)
			}
			write(t, g.Dir, tc.name+".txt", "x\n")
			if _, err := g.Commit(ctx, repo.CommitOptions{Message: tc.name}); err != nil {
				t.Fatal(err)
			}
			if err := g.Fetch(ctx, "origin"); err != nil {
				t.Fatalf("fetch: %v", err)
			}
			if err := g.Push(ctx, "origin", "HEAD", "main"); err != nil {
				t.Fatalf("push: %v", err)
			}
			if cfg := git(t, g, "config", "--get", "remote.origin.url"); cfg != url {
				t.Errorf("remote url = %q, want %q unchanged", cfg, url)
			}
			assertNoSecret(t, dir)
		})
	}
	if authed.Load() == 0 {
		t.Fatal("the server never saw the Authorization header")
	}
	assertNoSecret(t, root)
}

func TestIF2_ScopedHeaderStaysOnItsHost(t *testing.T) {
	ctx := context.Background()
	env := isolatedEnv(t)
	root := t.TempDir()
	bareRepo(t, root, "o/r.git", env)
	srv, _ := gitHTTPServer(t, root, false)
	// The token is scoped to another host, or to another port of this
	// one: this server must not get it.
	for _, other := range []string{"https://github.example.com/o/r.git", "http://127.0.0.1:1/o/r.git"} {
		auth := repo.AuthEnvFor(other, testToken)
		if _, err := repo.Clone(ctx, srv.URL+"/o/r.git", filepath.Join(t.TempDir(), "c"), append(env, auth...)); err == nil {
			t.Fatalf("a credential scoped to %s was sent to %s", other, srv.URL)
		}
	}
}

func TestSEC3_GitErrorsCarryNoCredentials(t *testing.T) {
	ctx := context.Background()
	env := append(isolatedEnv(t), repo.AuthEnvFor("http://127.0.0.1:1/o/r.git", testToken)...)
	g := &repo.Git{Dir: t.TempDir(), Env: env}
	// A URL with userinfo, as a user might have configured, and a header
	// git could echo: neither may reach the error.
	_, err := g.Run(ctx, "ls-remote", "http://user:"+testToken+"@127.0.0.1:1/o/r.git")
	if err == nil {
		t.Fatal("ls-remote to a closed port succeeded")
	}
	var ge *repo.Error
	if !errors.As(err, &ge) {
		t.Fatalf("err = %T", err)
	}
	for _, s := range append(repo.Secrets(testToken), "user:") {
		if strings.Contains(err.Error(), s) || strings.Contains(ge.Stderr, s) {
			t.Errorf("error carries %q: %v / %q", s, err, ge.Stderr)
		}
	}
}

func TestIF3_GitTrustsTheCAFile(t *testing.T) {
	ctx := context.Background()
	env := isolatedEnv(t)
	root := t.TempDir()
	bareRepo(t, root, "o/r.git", env)
	srv, _ := gitHTTPServer(t, root, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/o/r.git"
	if _, err := repo.Clone(ctx, url, filepath.Join(t.TempDir(), "untrusted"), append(env, repo.AuthEnvFor(url, testToken)...)); err == nil {
		t.Fatal("clone trusted an unknown CA")
	}
	if _, err := repo.Clone(ctx, url, filepath.Join(t.TempDir(), "a"), append(env, repo.AuthEnvFor(url, testToken, ca)...)); err != nil {
		t.Fatalf("clone with GIT_SSL_CAINFO: %v", err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := repo.CABundle(bundle, ca); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Clone(ctx, url, filepath.Join(t.TempDir(), "c"), append(env, repo.AuthEnvFor(url, testToken, bundle)...)); err != nil {
		t.Fatalf("clone with a CA bundle: %v", err)
	}
}

func TestAuthEnvShape(t *testing.T) {
	env := repo.AuthEnvFor("https://ghe.example.com:8443/o/r.git", testToken, "/ca.pem")
	if len(env) != 2 || env[0] != "GIT_SSL_CAINFO=/ca.pem" {
		t.Fatalf("AuthEnvFor = %q, want the CA and one credential entry", env)
	}
	if !repo.HasToken(env) {
		t.Error("AuthEnvFor's entries carry no token")
	}
	if got := repo.AuthEnvFor("https://ghe.example.com/o/r.git", ""); len(got) != 0 {
		t.Errorf("AuthEnvFor without a token = %q, want nothing", got)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_CONFIG") || strings.Contains(kv, "extraHeader") {
			t.Errorf("AuthEnvFor carries git config: %q", kv)
		}
	}
	// That agents and build/test never see these entries is
	// agent.ScrubEnv's job: TestSEC2_AgentEnvHasNoGitCredentials (cli);
	// that no process can: TestSEC_8_CredentialEntryStartsNoProcess.
}
