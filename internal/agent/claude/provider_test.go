package claude

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// SEC-2, AG-B1: Claude on Bedrock and on Vertex gets its provider's
// variables from converge's environment (the names Claude Code 2.1 reads,
// VERTEX_REGION_<MODEL> by prefix); nothing else's credential and never
// a forge token, whatever the user's agent_env names.
func TestSEC_2_ProviderVariablesPass(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "HOME=/h",
		"GH_TOKEN=ghp_secret", "GITHUB_TOKEN=x", "CONVERGE_TOKEN=y", "OPENAI_API_KEY=sk-oai", "GEMINI_API_KEY=g",
		// Bedrock.
		"CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BEDROCK_BASE_URL=https://gw/bedrock", "CLAUDE_CODE_SKIP_BEDROCK_AUTH=1",
		"AWS_ACCESS_KEY_ID=AKIA", "AWS_SECRET_ACCESS_KEY=s3cr3t", "AWS_SESSION_TOKEN=tok", "AWS_REGION=eu-west-1",
		"AWS_DEFAULT_REGION=eu-west-1", "AWS_PROFILE=p", "AWS_CONFIG_FILE=/h/aws/config", "AWS_SHARED_CREDENTIALS_FILE=/h/aws/creds",
		"AWS_BEARER_TOKEN_BEDROCK=bt", "ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION=us-west-2",
		// Vertex.
		"CLAUDE_CODE_USE_VERTEX=1", "CLOUD_ML_REGION=us-east5", "ANTHROPIC_VERTEX_PROJECT_ID=proj", "ANTHROPIC_VERTEX_BASE_URL=https://gw/vertex",
		"VERTEX_REGION_CLAUDE_4_5_SONNET=europe-west1", "GOOGLE_APPLICATION_CREDENTIALS=/h/sa.json", "CLAUDE_CODE_SKIP_VERTEX_AUTH=1",
		// Models.
		"ANTHROPIC_DEFAULT_SONNET_MODEL=s", "ANTHROPIC_DEFAULT_HAIKU_MODEL=h",
	}
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Environ: func() []string { return environ },
		AgentEnv: []string{"GH_TOKEN", "MY_PROXY_KEY"}}})
	if err != nil {
		t.Fatal(err)
	}
	env := a.Env(agent.Task{Env: []string{"PATH=/task/bin", "HOME=/task"}})
	for _, kv := range environ[7:] {
		if !slices.Contains(env, kv) {
			t.Errorf("run env lacks %s", kv)
		}
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains([]string{"GH_TOKEN", "GITHUB_TOKEN", "CONVERGE_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY"}, name) {
			t.Errorf("run env has %s", kv)
		}
	}
	// A prefix never passes a forge token.
	a.opts.AgentEnv = []string{"GH_*", "GITHUB_*"}
	for _, kv := range a.Env(agent.Task{}) {
		if strings.HasPrefix(kv, "GH_TOKEN=") || strings.HasPrefix(kv, "GITHUB_TOKEN=") {
			t.Errorf("a prefix passed %s", kv)
		}
	}
}

// AG-T4: the endpoint a CLIError names is the one the run talks to, on
// each provider.
func TestAG_T4_EndpointOfEachProvider(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "https://api.anthropic.com"},
		{[]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:1"}, "http://127.0.0.1:1"},
		{[]string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=eu-west-1"}, "https://bedrock-runtime.eu-west-1.amazonaws.com"},
		{[]string{"CLAUDE_CODE_USE_BEDROCK=true", "ANTHROPIC_BEDROCK_BASE_URL=http://gw"}, "http://gw"},
		{[]string{"CLAUDE_CODE_USE_BEDROCK=0", "ANTHROPIC_BASE_URL=http://a"}, "http://a"},
		{[]string{"CLAUDE_CODE_USE_VERTEX=1", "CLOUD_ML_REGION=europe-west4"}, "https://europe-west4-aiplatform.googleapis.com/v1"},
		{[]string{"CLAUDE_CODE_USE_VERTEX=1", "CLOUD_ML_REGION=global"}, "https://aiplatform.googleapis.com/v1"},
		{[]string{"CLAUDE_CODE_USE_VERTEX=1", "ANTHROPIC_VERTEX_BASE_URL=http://v/v1"}, "http://v/v1"},
	} {
		if got := envOf(c.env).endpoint(); got != c.want {
			t.Errorf("endpoint of %v = %q, want %q", c.env, got, c.want)
		}
	}
}

// fakeClaude is a program that answers --version as Claude Code does.
func fakeClaude(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '2.1.328 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// AG-B1 (converge doctor): Describe says the CLI's version, the model and
// where it comes from, where the credential comes from — a variable's
// name or the login file's path, never a value — the passed variables
// that are set, and what would stop a run.
func TestAG_B1_Describe(t *testing.T) {
	bin := fakeClaude(t)
	home := t.TempDir()
	describe := func(model string, environ ...string) agent.Description {
		t.Helper()
		environ = append([]string{"PATH=/usr/bin", "HOME=" + home, "GH_TOKEN=ghp_x"}, environ...)
		a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: bin, Model: model, Environ: func() []string { return environ }}})
		if err != nil {
			t.Fatal(err)
		}
		d := a.Describe(context.Background())
		for _, v := range []string{"sk-ant-secret", "oat-secret", "ghp_x", "AKIA-secret"} {
			if strings.Contains(strings.Join([]string{d.Version, d.Model, d.ModelFrom, d.Credential, d.Problem, strings.Join(d.PassEnv, ",")}, " "), v) {
				t.Errorf("description %+v shows the value %s", d, v)
			}
		}
		return d
	}

	d := describe("claude-x", "ANTHROPIC_API_KEY=sk-ant-secret", "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
	if d.Version != "2.1.328 (Claude Code)" || d.Model != "claude-x" || d.ModelFrom != "--model" ||
		d.Credential != "ANTHROPIC_API_KEY" || d.Problem != "" ||
		!slices.Equal(d.PassEnv, []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}) {
		t.Errorf("API key: %+v", d)
	}

	d = describe("", "ANTHROPIC_MODEL=claude-env")
	if d.Model != "claude-env" || d.ModelFrom != "ANTHROPIC_MODEL" {
		t.Errorf("ANTHROPIC_MODEL: %+v", d)
	}
	// No credential at all: that is the problem, naming where a login
	// would be.
	if d.Credential != "" || !strings.Contains(d.Problem, "no credential found") ||
		!strings.Contains(d.Problem, filepath.Join(home, ".claude", ".credentials.json")) {
		t.Errorf("no credential: %+v", d)
	}

	// A login kept in HOME, and a model in Claude Code's settings.
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	login := filepath.Join(home, ".claude", ".credentials.json")
	if err := os.WriteFile(login, []byte(`{"claudeAiOauth":{"accessToken":"oat-secret","refreshToken":"r","expiresAt":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".claude", "settings.json")
	if err := os.WriteFile(settings, []byte(`{"model":"claude-settings"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d = describe("")
	if d.Credential != "the Claude login in "+login || d.Problem != "" || d.Model != "claude-settings" || d.ModelFrom != settings {
		t.Errorf("login in HOME: %+v", d)
	}
	if err := os.Remove(settings); err != nil {
		t.Fatal(err)
	}
	if d = describe(""); d.Model != "" || d.ModelFrom != "the CLI's default" {
		t.Errorf("default model: %+v", d)
	}

	// Bedrock and Vertex.
	d = describe("", "CLAUDE_CODE_USE_BEDROCK=1", "AWS_ACCESS_KEY_ID=AKIA-secret", "AWS_SECRET_ACCESS_KEY=x", "AWS_REGION=us-east-1")
	if d.Credential != "AWS_ACCESS_KEY_ID" || d.Problem != "" ||
		!slices.Equal(d.PassEnv, []string{"AWS_ACCESS_KEY_ID", "AWS_REGION", "AWS_SECRET_ACCESS_KEY", "CLAUDE_CODE_USE_BEDROCK"}) {
		t.Errorf("bedrock: %+v", d)
	}
	d = describe("", "CLAUDE_CODE_USE_VERTEX=1", "CLOUD_ML_REGION=us-east5")
	if !strings.Contains(d.Problem, "ANTHROPIC_VERTEX_PROJECT_ID") {
		t.Errorf("vertex without a project: %+v", d)
	}
	d = describe("", "CLAUDE_CODE_USE_VERTEX=1", "ANTHROPIC_VERTEX_PROJECT_ID=p", "GOOGLE_APPLICATION_CREDENTIALS=/x.json", "VERTEX_REGION_CLAUDE_HAIKU_4_5=us-east5")
	if d.Credential != "GOOGLE_APPLICATION_CREDENTIALS" || d.Problem != "" || !slices.Contains(d.PassEnv, "VERTEX_REGION_CLAUDE_HAIKU_4_5") {
		t.Errorf("vertex: %+v", d)
	}

	// A program that is not Claude Code (CONVERGE_CLAUDE_BIN=/bin/false)
	// is a problem, not a working claude.
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/false", Environ: func() []string { return []string{"ANTHROPIC_API_KEY=k"} }}})
	if err != nil {
		t.Fatal(err)
	}
	if d := a.Describe(context.Background()); d.Version != "" || !strings.Contains(d.Problem, "not a working Claude Code") {
		t.Errorf("/bin/false: %+v", d)
	}
}
