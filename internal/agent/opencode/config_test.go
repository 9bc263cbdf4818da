package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

func TestParseJSONC(t *testing.T) {
	cfg, err := parseJSONC([]byte(`{
  // a comment, "with quotes"
  "provider": {"p": {"options": {"baseURL": "http://h//x", /* inline */ "apiKey": "{env:K}",},},},
  "list": [1, 2,],
  "s": "a \" // not a comment",
}`))
	if err != nil {
		t.Fatal(err)
	}
	if lookup(cfg, "provider", "p", "options", "baseURL") != "http://h//x" || cfg["s"] != `a " // not a comment` {
		t.Errorf("cfg = %v", cfg)
	}
	if got := refs(cfg); !slices.Equal(got, []string{"K"}) {
		t.Errorf("refs = %q", got)
	}
	if _, err := parseJSONC([]byte(`{"a": }`)); err == nil {
		t.Error("bad JSON parsed")
	}
}

// TestAG_B1_DefaultPassEnvIsEveryKnownProvidersNeverAForgeToken: the
// variables of OpenCode's providers (catalogue and loaders) and its own
// pass; no forge token does, not even a provider's (GitHub Copilot's
// GITHUB_TOKEN, GitLab's GITLAB_TOKEN).
func TestAG_B1_DefaultPassEnvIsEveryKnownProvidersNeverAForgeToken(t *testing.T) {
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY",
		"GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "AZURE_API_KEY", "AZURE_RESOURCE_NAME",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK",
		"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "MISTRAL_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
		"OPENCODE_API_KEY", "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_AUTH_CONTENT", "ANTHROPIC_BASE_URL"} {
		if !slices.Contains(DefaultPassEnv, want) {
			t.Errorf("DefaultPassEnv lacks %s", want)
		}
	}
	for _, never := range append([]string{"GITLAB_TOKEN", "OPENCODE_CONFIG_CONTENT"}, agent.ForgeTokenNames...) {
		if slices.Contains(DefaultPassEnv, never) {
			t.Errorf("DefaultPassEnv has %s", never)
		}
	}
	if len(knownProviders) < 200 || !slices.IsSortedFunc(knownProviders, func(a, b provider) int { return strings.Compare(a.id, b.id) }) {
		t.Errorf("%d known providers, sorted %v", len(knownProviders), slices.IsSortedFunc(knownProviders, func(a, b provider) int { return strings.Compare(a.id, b.id) }))
	}
}

// home is a HOME holding the user's global OpenCode config cfg.
func home(t *testing.T, cfg string) string {
	t.Helper()
	h := t.TempDir()
	if cfg != "" {
		dir := filepath.Join(h, ".config", "opencode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "opencode.jsonc"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func has(env []string, kv string) bool { return slices.Contains(env, kv) }

func hasName(env []string, name string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// TestAG_B1_UserConfigsEnvReferencesPass: the variables the user's own
// OpenCode configuration references ({env:NAME}: the global config, the
// file OPENCODE_CONFIG names, the user's OPENCODE_CONFIG_CONTENT) pass,
// found through the run's own HOME; a project's opencode.json in the
// worktree is the PR's, and its references do not; a forge token never
// does. A key of a known provider passes without any reference.
func TestAG_B1_UserConfigsEnvReferencesPass(t *testing.T) {
	h := home(t, `{"provider": {"myco": {"options": {"apiKey": "{env:MYCO_KEY}", "headers": {"X-Team": "{env:MYCO_TEAM}"}}}},
  // a reference to the forge token is not honoured
  "provider2": "{env:GH_TOKEN}"}`)
	custom := filepath.Join(t.TempDir(), "custom.json")
	if err := os.WriteFile(custom, []byte(`{"model": "other/{env:OTHER_MODEL}"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "opencode.json"), []byte(`{"provider": {"evil": {"options": {"apiKey": "{env:DATABASE_PASSWORD}"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=/bin", "HOME=" + h, "MYCO_KEY=k1", "MYCO_TEAM=t1", "OTHER_MODEL=m1", "DATABASE_PASSWORD=p1",
		"GH_TOKEN=ghp_x", "GITHUB_TOKEN=ghp_y", "GITLAB_TOKEN=glpat", "DEEPSEEK_API_KEY=d1", "UNRELATED_API_KEY=u1",
		"OPENCODE_CONFIG=" + custom, `OPENCODE_CONFIG_CONTENT={"provider": {"x": {"options": {"apiKey": "{env:X_KEY}"}}}}`, "X_KEY=x1"}
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Environ: func() []string { return environ }}})
	if err != nil {
		t.Fatal(err)
	}
	env := a.Env(agent.Task{Kind: agent.TaskKindFix, Workdir: work})
	for _, kv := range []string{"MYCO_KEY=k1", "MYCO_TEAM=t1", "OTHER_MODEL=m1", "X_KEY=x1", "DEEPSEEK_API_KEY=d1", "OPENCODE_CONFIG=" + custom} {
		if !has(env, kv) {
			t.Errorf("the run lacks %s", kv)
		}
	}
	for _, name := range []string{"DATABASE_PASSWORD", "GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "UNRELATED_API_KEY"} {
		if hasName(env, name) {
			t.Errorf("the run has %s", name)
		}
	}
	// Named by the user (agent_env), GITLAB_TOKEN passes; the forge
	// token still does not.
	a.opts.AgentEnv = []string{"GITLAB_TOKEN", "GH_TOKEN"}
	env = a.Env(agent.Task{Kind: agent.TaskKindFix, Workdir: work})
	if !has(env, "GITLAB_TOKEN=glpat") || hasName(env, "GH_TOKEN") {
		t.Errorf("agent_env: %q", env)
	}
	// The user's OPENCODE_CONFIG_CONTENT stays, under converge's own.
	var cfg map[string]any
	if err := json.Unmarshal([]byte(a.ConfigContent(agent.Task{Kind: agent.TaskKindReview})), &cfg); err != nil {
		t.Fatal(err)
	}
	if lookup(cfg, "provider", "x", "options", "apiKey") != "{env:X_KEY}" || lookup(cfg, "permission", "edit") != "deny" {
		t.Errorf("config content = %v", cfg)
	}
}

// TestAG_T4_EndpointIsTheProvidersBaseURL: the endpoint an error names is
// the provider's base URL as the run would use it: converge's config, the
// project's, the user's, a base URL variable, the catalogue's (its
// ${NAME} expanded); the provider's id when none says.
func TestAG_T4_EndpointIsTheProvidersBaseURL(t *testing.T) {
	h := home(t, `{"provider": {"myco": {"options": {"baseURL": "{env:MYCO_URL}/v1"}}, "openai": {"options": {"baseURL": "http://user.example/v1"}}}}`)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "opencode.json"), []byte(`{"provider": {"openai": {"options": {"baseURL": "http://project.example/v1"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := []string{"HOME=" + h, "MYCO_URL=http://myco.example", "CLOUDFLARE_ACCOUNT_ID=acct", "ANTHROPIC_BASE_URL=http://proxy.example"}
	a, err := New(Options{
		CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Model: "openai/gpt-x", Environ: func() []string { return environ }},
		Config:     map[string]any{"provider": map[string]any{"groq": map[string]any{"options": map[string]any{"baseURL": "http://converge.example/v1"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := a.setup(agent.Task{Kind: agent.TaskKindFix, Workdir: work}, false)
	for provider, want := range map[string]string{
		"myco":                  "http://myco.example/v1",
		"openai":                "http://project.example/v1",
		"":                      "http://project.example/v1", // the run's model's provider
		"groq":                  "http://converge.example/v1",
		"anthropic":             "http://proxy.example",
		"deepseek":              "https://api.deepseek.com",
		"cloudflare-workers-ai": "https://api.cloudflare.com/client/v4/accounts/acct/ai/v1",
		"nobody":                "nobody",
	} {
		if got := s.endpoint(provider); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", provider, got, want)
		}
	}
}

// TestAG_B1_DescribeSaysWhatARunWouldUse: the version, the model and
// where it is chosen, where the credential comes from (never a value),
// the variables passed that are set, and what would stop a run.
func TestAG_B1_DescribeSaysWhatARunWouldUse(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "opencode")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n[ \"$1\" = --version ] && echo 1.18.33\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := home(t, `{"model": "anthropic/claude-x"}`)
	authDir := filepath.Join(h, ".local", "share", "opencode")
	if err := os.MkdirAll(authDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(authDir, "auth.json"), []byte(`{"openai": {"type": "api", "key": "sk-auth-secret"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=/bin", "HOME=" + h, "ANTHROPIC_API_KEY=sk-ant-secret", "GH_TOKEN=ghp_secret", "AWS_REGION=eu-west-1"}
	describe := func(model string, environ []string) agent.Description {
		a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: bin, Model: model,
			Environ: func() []string { return environ }, Getenv: func(string) string { return "" }}})
		if err != nil {
			t.Fatal(err)
		}
		d := a.Describe(context.Background())
		b, _ := json.Marshal(d)
		for _, secret := range []string{"sk-ant-secret", "ghp_secret", "sk-auth-secret"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("Describe shows a credential's value: %s", b)
			}
		}
		return d
	}

	d := describe("", environ)
	if d.Version != "1.18.33" || d.Model != "anthropic/claude-x" || d.ModelFrom != filepath.Join(h, ".config", "opencode", "opencode.jsonc") {
		t.Errorf("Describe = %+v", d)
	}
	if d.Credential != "ANTHROPIC_API_KEY" || d.Problem != "" {
		t.Errorf("credential %q, problem %q", d.Credential, d.Problem)
	}
	if !slices.Equal(d.PassEnv, []string{"ANTHROPIC_API_KEY", "AWS_REGION"}) {
		t.Errorf("pass_env = %q", d.PassEnv)
	}

	// auth.json's provider.
	if d := describe("openai/gpt-x", environ); d.Model != "openai/gpt-x" || d.ModelFrom != "converge's model setting (passed as -m)" ||
		d.Credential != filepath.Join(authDir, "auth.json") || d.Problem != "" {
		t.Errorf("openai: %+v", d)
	}
	// A key in OPENCODE_AUTH_CONTENT (auth.json's shape) is its
	// provider's.
	withAuth := append(slices.Clone(environ), `OPENCODE_AUTH_CONTENT={"deepseek": {"type": "api", "key": "sk-auth-secret"}}`)
	if d := describe("deepseek/chat", withAuth); d.Credential != "OPENCODE_AUTH_CONTENT" || d.Problem != "" {
		t.Errorf("deepseek in OPENCODE_AUTH_CONTENT: %+v", d)
	}
	// A provider without its key.
	if d := describe("deepseek/chat", environ); !strings.Contains(d.Problem, "DEEPSEEK_API_KEY") || !strings.Contains(d.Problem, "opencode auth login") {
		t.Errorf("deepseek: %+v", d)
	}
	// No model anywhere: OpenCode's default; every credential found.
	noModel := slices.Clone(environ)
	noModel[1] = "HOME=" + t.TempDir()
	if d := describe("", noModel); d.Model != "" || !strings.Contains(d.ModelFrom, "OpenCode's default") || d.Credential != "ANTHROPIC_API_KEY" {
		t.Errorf("default: %+v", d)
	}
	// A CLI that does not answer --version has no version.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d := describe("", environ); d.Version != "" || !strings.Contains(d.Problem, "gave no version") {
		t.Errorf("a failing CLI: %+v", d)
	}
}

// TestAG_B1_DescribeNamesAProjectsHeldBackReferences: a project's
// opencode.json (in the current directory, the PR's content) that names
// a variable a run does not get says so, and how to pass it.
func TestAG_B1_DescribeNamesAProjectsHeldBackReferences(t *testing.T) {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "opencode.json"), []byte(`{"model": "team/coder",
  "provider": {"team": {"options": {"apiKey": "{env:TEAM_KEY}"}}, "other": {"options": {"apiKey": "{env:OTHER_KEY}"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	environ := []string{"HOME=" + t.TempDir(), "TEAM_KEY=t", "OTHER_KEY=o"}
	bin := filepath.Join(t.TempDir(), "opencode")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 1.18.33\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: bin, Environ: func() []string { return environ }}})
	if err != nil {
		t.Fatal(err)
	}
	// Only the model's provider matters: another's variable stops no run.
	if d := a.Describe(context.Background()); !strings.Contains(d.Problem, "TEAM_KEY") || !strings.Contains(d.Problem, "agent_env") ||
		strings.Contains(d.Problem, "OTHER_KEY") || d.Model != "team/coder" {
		t.Errorf("Describe = %+v", d)
	}
	a.opts.AgentEnv = []string{"TEAM_KEY"}
	if d := a.Describe(context.Background()); d.Problem != "" || !slices.Contains(d.PassEnv, "TEAM_KEY") {
		t.Errorf("with agent_env: %+v", d)
	}
}
