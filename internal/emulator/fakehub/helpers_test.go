package fakehub

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// newHub starts a hub for one test and closes it at cleanup.
func newHub(t *testing.T, opts Options) *Hub {
	t.Helper()
	if opts.CopilotDelay == 0 {
		opts.CopilotDelay = 50 * time.Millisecond
	}
	if opts.Logger == nil && os.Getenv("FAKEHUB_DEBUG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// seedPR makes acme/widget with one PR changing main.go.
func seedPR(t *testing.T, h *Hub, ro RepoOptions) int {
	t.Helper()
	files := map[string]string{
		"go.mod":  "module example.com/widget\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
		"lib.go":  "package main\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
	}
	if err := h.CreateRepo("acme", "widget", files, ro); err != nil {
		t.Fatal(err)
	}
	n, err := h.CreatePR("acme", "widget", NewPR{
		Head: "feature/greet", Title: "Greet politely", Body: "Says hello nicely.",
		Files: map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n\tprintln(\"bye\")\n}\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type gqlResp struct {
	Data   json.RawMessage  `json:"data"`
	Errors []map[string]any `json:"errors"`
}

// gql posts one GraphQL document with token.
func gql(t *testing.T, h *Hub, token, query string, vars map[string]any) gqlResp {
	t.Helper()
	status, body := do(t, h, token, "POST", h.GraphQLURL(), map[string]any{"query": query, "variables": vars})
	if status != 200 {
		t.Fatalf("graphql status %d: %s", status, body)
	}
	var r gqlResp
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("graphql body: %v: %s", err, body)
	}
	return r
}

func do(t *testing.T, h *Hub, token, method, url string, in any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// git runs git with the hub's env for token.
func gitCmd(t *testing.T, h *Hub, token, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), h.GitEnv(token)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, h *Hub, token, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(t, h, token, dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// waitFor waits for an event matching ok, failing the test on timeout.
func waitFor(t *testing.T, events <-chan Event, d time.Duration, ok func(Event) bool) Event {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			if ok(ev) {
				return ev
			}
		case <-timer.C:
			t.Fatalf("timed out after %s waiting for event", d)
			return Event{}
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
