package fakegit

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real git client clones, fetches and pushes through ServeHTTP with
// protocol v0 and v2, and what a push wrote is in the repository; the
// repository InitBare made carries the settings a push and a fetch by
// oid need. Requests git would never make are refused, never served.
func TestServeHTTPIsSmartHTTPForTheRealGitClient(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	bare := filepath.Join(root, "repos", "o", "r.git")
	if err := InitBare(ctx, bare, "main"); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"http.receivepack": "true", "uploadpack.allowanysha1inwant": "true", "receive.denydeletecurrent": "warn"} {
		if got, err := Run(ctx, bare, nil, nil, "config", "--get", key); err != nil || got != want {
			t.Fatalf("config %s = %q, %v; want %q", key, got, err, want)
		}
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base, err := CommitFiles(ctx, bare, "", map[string]string{"a.txt": "one\n"}, "base", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, bare, nil, nil, "update-ref", "refs/heads/main", base); err != nil {
		t.Fatal(err)
	}
	if err := InitBare(ctx, filepath.Join(root, "outside.git"), "main"); err != nil {
		t.Fatal(err)
	}
	var (
		mu          sync.Mutex
		gitRequests []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gitRequests = append(gitRequests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Git-Protocol"))
		mu.Unlock()
		ServeHTTP(w, r, filepath.Join(root, "repos"), "pusher")
	}))
	defer srv.Close()

	for _, version := range []string{"0", "2"} {
		t.Run("protocol v"+version, func(t *testing.T) {
			mu.Lock()
			gitRequests = nil
			mu.Unlock()
			work := filepath.Join(t.TempDir(), "w")
			env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=protocol.version", "GIT_CONFIG_VALUE_0="+version)
			env = append(env, testIdentity...)
			git := func(dir string, args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir, cmd.Env = dir, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return strings.TrimSpace(string(out))
			}
			git(root, "clone", "--quiet", srv.URL+"/o/r.git", work)
			if got := git(work, "rev-parse", "HEAD"); got != base {
				t.Fatalf("cloned HEAD = %s, want %s", got, base)
			}
			// A large change makes git gzip its request body.
			big := strings.Repeat("line of text to make a large pack\n", 2000)
			if err := os.WriteFile(filepath.Join(work, "big-"+version+".txt"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
			git(work, "add", ".")
			git(work, "commit", "--quiet", "-m", "big")
			pushed := git(work, "rev-parse", "HEAD")
			git(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
			if got, err := Run(ctx, bare, nil, nil, "rev-parse", "refs/heads/main"); err != nil || got != pushed {
				t.Fatalf("main after push = %s, %v; want %s", got, err, pushed)
			}
			git(work, "fetch", "--quiet", "origin", base)
			mu.Lock()
			seen := strings.Join(gitRequests, "\n")
			mu.Unlock()
			if version == "2" && !strings.Contains(seen, "version=2") {
				t.Fatalf("no request asked for protocol v2:\n%s", seen)
			}
			if err := os.RemoveAll(work); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(ctx, bare, nil, nil, "update-ref", "refs/heads/main", base); err != nil {
				t.Fatal(err)
			}
		})
	}

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	// A v2 ls-refs request, gzipped as git sends large ones.
	io.WriteString(zw, "0014command=ls-refs\n0001001bref-prefix refs/heads/\n0000")
	zw.Close()
	for _, c := range []struct {
		method, path, contentType string
		body                      []byte
		want                      int
	}{
		{"GET", "/o/r.git/info/refs", "", nil, http.StatusNotFound}, // the dumb protocol
		{"GET", "/o/r.git/HEAD", "", nil, http.StatusNotFound},      // the dumb protocol
		{"GET", "/o/nope.git/info/refs?service=git-upload-pack", "", nil, http.StatusNotFound},
		{"GET", "/../outside.git/info/refs?service=git-upload-pack", "", nil, http.StatusNotFound}, // never above the root
		{"GET", "/o/../o/r.git/info/refs?service=git-upload-pack", "", nil, http.StatusOK},
		{"GET", "/o/r/info/refs?service=git-upload-pack", "", nil, http.StatusOK}, // .git found as http-backend finds it
		{"POST", "/o/r.git/info/refs?service=git-upload-pack", "", nil, http.StatusMethodNotAllowed},
		{"GET", "/o/r.git/git-upload-pack", "", nil, http.StatusMethodNotAllowed},
		{"POST", "/o/r.git/git-upload-pack", "text/plain", []byte("0000"), http.StatusUnsupportedMediaType},
		{"POST", "/o/r.git/git-upload-pack", "application/x-git-receive-pack-request", []byte("0000"), http.StatusUnsupportedMediaType},
		{"POST", "/o/r.git/git-upload-pack", "application/x-git-upload-pack-request", gz.Bytes(), http.StatusOK},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		if bytes.Equal(c.body, gz.Bytes()) {
			req.Header.Set("Content-Encoding", "gzip")
			req.Header.Set("Git-Protocol", "version=2")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d\n%s", c.method, c.path, resp.StatusCode, c.want, body)
		}
		if bytes.Equal(c.body, gz.Bytes()) && !bytes.Contains(body, []byte(base+" refs/heads/main\n")) {
			t.Errorf("gzipped ls-refs: %q", body)
		}
		if c.want == http.StatusOK && strings.HasSuffix(c.path, "service=git-upload-pack") {
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
				t.Errorf("%s: content type %q", c.path, ct)
			}
			if !bytes.HasPrefix(body, []byte("001e# service=git-upload-pack\n0000")) || !bytes.Contains(body, []byte(base)) {
				t.Errorf("%s: advertisement %q", c.path, body)
			}
		}
	}
}
