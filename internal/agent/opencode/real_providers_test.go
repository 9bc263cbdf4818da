package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// OpenCode's providers as its users configure them, with the real CLI
// against fakemodel. The environment key of the anthropic provider is
// the fix tests' (real_test.go); here a key kept by `opencode auth login`
// and a custom OpenAI-compatible provider whose key is an {env:NAME}
// reference of the user's config.

// TestAG_B1_RealOpenCode_KeyFromOpencodeAuthLogin: the user ran
// `opencode auth login` for anthropic (the key typed at its prompt, kept
// in its data directory's auth.json); no key is in the environment. The
// check run reaches the model with that key.
func TestAG_B1_RealOpenCode_KeyFromOpencodeAuthLogin(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv, url := agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "OK"}}})
	u := newUser(t)
	u.config(t, anthropicAt(url))
	const key = "sk-ant-typed-at-the-login-prompt"
	authLogin(t, bin, u, "anthropic", key)

	a := u.agent(t, bin, "")
	res, err := agent.Check(context.Background(), a, nil, 0)
	if err != nil || !res.Usable {
		t.Fatalf("check = %+v, %v", res, err)
	}
	asked := 0
	for _, r := range srv.Requests() {
		if r.Side {
			continue
		}
		asked++
		if k := r.Header.Get("X-Api-Key"); k != key {
			t.Errorf("request carried key %q, want auth.json's", k)
		}
	}
	if asked == 0 {
		t.Error("the model got no request")
	}
	d := a.Describe(context.Background())
	if !strings.Contains(d.Credential, "auth.json") || strings.Contains(d.Credential, key) || d.Problem != "" {
		t.Errorf("Describe = %+v, want the credential from auth.json (never its value)", d)
	}
}

// authLogin runs `opencode auth login -p PROVIDER` on u's machine as the
// user does, typing key at its prompt (it needs a terminal: script(1)
// gives it one).
func authLogin(t *testing.T, bin string, u *user, provider, key string) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("script(1) is needed to type at opencode auth login's prompt: %v", err)
		}
		t.Skipf("script(1) is needed to type at opencode auth login's prompt: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qfec",
		bin+" auth login -p "+provider+" -m 'Manually enter API Key'", "/dev/null")
	cmd.Env = append(slices.Clone(u.environ), "TERM=dumb")
	cmd.Dir = u.home
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &prompted{marker: []byte("◆"), seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.seen:
	case <-ctx.Done():
		t.Fatalf("opencode auth login showed no prompt: %q", out.String())
	}
	if _, err := io.WriteString(stdin, key+"\r"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("opencode auth login: %v\n%q", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(u.home, ".local", "share", "opencode", "auth.json"))
	if err != nil || !bytes.Contains(b, []byte(key)) {
		t.Fatalf("auth.json after the login: %v (%d bytes)", err, len(b))
	}
}

// prompted is a command's output that signals when marker first shows.
type prompted struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker []byte
	seen   chan struct{}
	once   sync.Once
}

func (p *prompted) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	if bytes.Contains(p.buf.Bytes(), p.marker) {
		p.once.Do(func() { close(p.seen) })
	}
	return len(b), nil
}

func (p *prompted) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// TestAG_B1_RealOpenCode_CustomProviderKeyFromItsEnvReference: the user's
// config defines their own OpenAI-compatible provider "myco" (Chat
// Completions) whose apiKey is {env:MYCO_KEY}, and selects its model. A
// fix run passes MYCO_KEY — no provider list names it — and works with
// that provider's tool calls; the forge token still does not pass.
func TestAG_B1_RealOpenCode_CustomProviderKeyFromItsEnvReference(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	dir := agenttest.Repo(t, map[string]string{"greet.txt": "hello world\n"})
	file := filepath.Join(dir, "greet.txt")
	status, _ := json.Marshal(map[string]any{
		"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "greeting changed", "files_changed": []string{"greet.txt"},
	})
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "read", Input: map[string]any{"filePath": file}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		{Calls: []fakemodel.ToolCall{
			{Name: "edit", Input: map[string]any{"filePath": file, "oldString": "hello world", "newString": "hello converge"}},
			{Shell: "env > env.dump"},
		}, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20}},
		{Text: "Changed the greeting.\n" + string(status), Usage: fakemodel.Usage{InputTokens: 300, OutputTokens: 30}},
	}})
	u := newUser(t)
	u.config(t, `{
  "provider": {
    "myco": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "MyCo",
      "options": {"baseURL": "`+url+`/v1", "apiKey": "{env:MYCO_KEY}"},
      "models": {"myco-coder": {"name": "MyCo Coder", "tool_call": true}}
    }
  },
  "model": "myco/myco-coder"
}`)
	const key = "myco-secret-key"
	u.setenv("MYCO_KEY=" + key)
	a := u.agent(t, bin, "")

	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindFix, Workdir: dir, Budget: 5 * time.Minute,
		Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge."}},
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)
	if got, _ := os.ReadFile(file); string(got) != "hello converge\n" {
		t.Errorf("greet.txt = %q\nstderr: %s", got, res.Stderr)
	}
	if res.Record.Status != agent.StatusComplete {
		t.Errorf("record = %+v\nstderr: %s", res.Record, res.Stderr)
	}
	if u := res.Usage; u.InputTokens != 600 || u.OutputTokens != 60 || u.Turns != 3 {
		t.Errorf("usage = %+v", u)
	}
	chat := 0
	for _, r := range srv.Requests() {
		if r.Path != "/v1/chat/completions" {
			t.Errorf("request to %s, want the provider's chat completions", r.Path)
		}
		chat++
		if h := r.Header.Get("Authorization"); h != "Bearer "+key {
			t.Errorf("request carried Authorization %q, want MYCO_KEY's", h)
		}
	}
	if chat == 0 {
		t.Error("fakemodel got no request")
	}
	agenttest.CheckEnvDump(t, filepath.Join(dir, "env.dump"), "GH_TOKEN", "GITHUB_TOKEN")
	if d := a.Describe(context.Background()); d.Model != "myco/myco-coder" || !strings.Contains(d.Credential, "MYCO_KEY") {
		t.Errorf("Describe = %+v", d)
	}
}
