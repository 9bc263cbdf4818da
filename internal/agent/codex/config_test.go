package codex

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// codexHomeWith is a CODEX_HOME holding files (name → content).
func codexHomeWith(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// fakeCodex is a program that answers --version as Codex 0.169 does and
// otherwise prints events (a shell here-document), then exits.
func fakeCodex(t *testing.T, events string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'codex-cli 0.169.0'; exit 0; fi\ncat >/dev/null\ncat <<'EOF'\n" + events + "EOF\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const mycoConfig = `model = "myco-large"
model_provider = "myco"

[model_providers.myco]
name = "MyCo"
base_url = "https://llm.myco.example/v1"
env_key = "MYCO_LLM_KEY"
env_http_headers = { "X-Project" = "MYCO_PROJECT" }

[model_providers.other]
base_url = "https://other.example/v1"
env_key = "OTHER_KEY"

[model_providers.github]
base_url = "https://models.github.example/v1"
env_key = "GITHUB_TOKEN"
`

// TestSEC_2_ProviderKeyFromConfigPasses: the provider a user configured in
// config.toml reads its key from its env_key; the backend passes that
// variable (and the one of a provider selected with -c, and its header
// variables) without any setting, and never a forge token's, even when a
// provider names one.
func TestSEC_2_ProviderKeyFromConfigPasses(t *testing.T) {
	home := codexHomeWith(t, map[string]string{"config.toml": mycoConfig})
	environ := []string{"PATH=/usr/bin", "HOME=/root", "CODEX_HOME=" + home, "GH_TOKEN=ghp_secret", "GITHUB_TOKEN=ghs_secret",
		"MYCO_LLM_KEY=m", "MYCO_PROJECT=p", "OTHER_KEY=o", "ANTHROPIC_API_KEY=a"}
	newA := func(config ...string) *Agent {
		a, err := New(Options{Config: config, CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Environ: func() []string { return environ }}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	has := func(env []string, name string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	}
	env := newA().Env(agent.Task{})
	for _, want := range []string{"MYCO_LLM_KEY", "MYCO_PROJECT", "CODEX_HOME"} {
		if !has(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	for _, not := range []string{"OTHER_KEY", "GH_TOKEN", "GITHUB_TOKEN", "ANTHROPIC_API_KEY"} {
		if has(env, not) {
			t.Errorf("env has %s", not)
		}
	}
	if env := newA(`model_provider="other"`).Env(agent.Task{}); !has(env, "OTHER_KEY") || has(env, "MYCO_LLM_KEY") {
		t.Errorf("-c model_provider=other: env %v, want OTHER_KEY and not MYCO_LLM_KEY", env)
	}
	if env := newA(`model_provider="github"`).Env(agent.Task{}); has(env, "GITHUB_TOKEN") || has(env, "GH_TOKEN") {
		t.Errorf("a provider whose env_key is a forge token's variable got it: %v", env)
	}
	a, err := New(Options{Provider: &Provider{ID: "gh", BaseURL: "http://x/v1", EnvKey: "GH_TOKEN"},
		CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Environ: func() []string { return environ }}})
	if err != nil {
		t.Fatal(err)
	}
	if has(a.Env(agent.Task{}), "GH_TOKEN") {
		t.Error("Options.Provider.EnvKey GH_TOKEN was passed")
	}
}

func TestResolveProviderAndEndpoint(t *testing.T) {
	home := codexHomeWith(t, map[string]string{"config.toml": mycoConfig})
	s := resolve([]string{"CODEX_HOME=" + home}, nil, "", "")
	if s.Provider != "myco" || s.BaseURL != "https://llm.myco.example/v1" || s.EnvKey != "MYCO_LLM_KEY" ||
		s.Model != "myco-large" || s.ModelFrom != filepath.Join(home, "config.toml") || s.Err != nil {
		t.Errorf("config.toml: %+v", s)
	}
	s = resolve([]string{"CODEX_HOME=" + home}, []string{"exec", "-c", `model_provider="converge"`,
		"-c", `model_providers.converge={name="c",base_url="http://127.0.0.1:9/v1",env_key="FM_KEY"}`, "-c", "model=gpt-x"}, "", "")
	if s.Provider != "converge" || s.BaseURL != "http://127.0.0.1:9/v1" || s.EnvKey != "FM_KEY" || s.Model != "gpt-x" || s.ModelFrom != "-c model" {
		t.Errorf("-c overrides: %+v", s)
	}
	s = resolve([]string{"CODEX_HOME=" + home}, []string{"-c", "model_providers.myco.env_key=OTHER", "-c", "model_providers.myco.base_url=http://gw/v1"}, "m", "opt")
	if s.EnvKey != "OTHER" || s.BaseURL != "http://gw/v1" || s.Model != "m" || s.ModelFrom != "opt" {
		t.Errorf("dotted overrides (a bare string is a string): %+v", s)
	}

	// The built-in provider: openai_base_url, else OpenAI's API, or
	// ChatGPT's backend for a ChatGPT login.
	plain := codexHomeWith(t, map[string]string{"config.toml": "openai_base_url = \"http://127.0.0.1:9/v1\"\n"})
	if s := resolve([]string{"CODEX_HOME=" + plain}, nil, "", ""); s.Provider != "openai" || s.BaseURL != "http://127.0.0.1:9/v1" || !s.OpenAIAuth ||
		s.EnvKey != "" || s.ModelFrom != "the CLI's default" {
		t.Errorf("openai_base_url: %+v", s)
	}
	chatgpt := codexHomeWith(t, map[string]string{"auth.json": `{"auth_mode":"chatgpt","tokens":{"id_token":"x"}}`})
	if s := resolve([]string{"HOME=/nowhere", "CODEX_HOME=" + chatgpt}, nil, "", ""); s.BaseURL != chatGPTBaseURL || s.Login != "chatgpt" {
		t.Errorf("ChatGPT login: %+v", s)
	}
	if s := resolve([]string{"HOME=" + t.TempDir()}, nil, "", ""); s.BaseURL != openAIBaseURL || s.Home == "" || s.File != "" || s.Err != nil {
		t.Errorf("no config: %+v", s)
	}
	bad := codexHomeWith(t, map[string]string{"config.toml": "model = \n"})
	if s := resolve([]string{"CODEX_HOME=" + bad}, nil, "", ""); s.Err == nil {
		t.Errorf("a broken config.toml: %+v", s)
	}
}

// TestAG_T4_Describe: doctor's view of a codex backend, per provider
// setup: the version, the model and where it comes from, the credential's
// source (never its value), the variables passed, what would stop a run.
func TestAG_T4_Describe(t *testing.T) {
	bin := fakeCodex(t, "")
	describe := func(t *testing.T, opts Options, environ ...string) agent.Description {
		t.Helper()
		opts.Binary = bin
		opts.Environ = func() []string { return append([]string{"PATH=/usr/bin:/bin"}, environ...) }
		opts.Getenv = func(k string) string { return agent.EnvValue(environ, k) }
		a, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		d := a.Describe(context.Background())
		for _, kv := range environ {
			if _, v, _ := strings.Cut(kv, "="); strings.Contains(v, "secret") && strings.Contains(strings.Join([]string{d.Credential, d.Problem, d.Model}, " "), v) {
				t.Errorf("description holds the value of %s: %+v", kv, d)
			}
		}
		return d
	}

	t.Run("login and openai_base_url", func(t *testing.T) {
		home := codexHomeWith(t, map[string]string{
			"config.toml": "model = \"gpt-x\"\nopenai_base_url = \"http://127.0.0.1:9/v1\"\n",
			"auth.json":   `{"auth_mode":"apikey","OPENAI_API_KEY":"sk-login-secret"}`,
		})
		d := describe(t, Options{}, "CODEX_HOME="+home, "GH_TOKEN=ghp_notpassed")
		if d.Version != "codex-cli 0.169.0" || d.Model != "gpt-x" || d.ModelFrom != filepath.Join(home, "config.toml") ||
			d.Credential != filepath.Join(home, "auth.json")+" (codex login, API key)" || d.Problem != "" ||
			!slices.Equal(d.PassEnv, []string{"CODEX_HOME"}) {
			t.Errorf("description = %+v", d)
		}
	})
	t.Run("CODEX_API_KEY and a model option", func(t *testing.T) {
		d := describe(t, Options{CLIOptions: agent.CLIOptions{Model: "gpt-y"}}, "HOME="+t.TempDir(), "CODEX_API_KEY=sk-env-secret", "CONVERGE_CODEX_MODEL=gpt-y")
		if d.Credential != "CODEX_API_KEY" || d.Model != "gpt-y" || d.ModelFrom != "CONVERGE_CODEX_MODEL" || d.Problem != "" ||
			!slices.Equal(d.PassEnv, []string{"CODEX_API_KEY"}) {
			t.Errorf("description = %+v", d)
		}
	})
	t.Run("no credential for OpenAI", func(t *testing.T) {
		d := describe(t, Options{}, "HOME="+t.TempDir(), "OPENAI_API_KEY=sk-ignored-secret")
		if d.Credential != "" || !strings.Contains(d.Problem, "codex login --with-api-key") || d.ModelFrom != "the CLI's default" {
			t.Errorf("description = %+v", d)
		}
	})
	t.Run("custom provider", func(t *testing.T) {
		home := codexHomeWith(t, map[string]string{"config.toml": mycoConfig})
		d := describe(t, Options{}, "CODEX_HOME="+home, "MYCO_LLM_KEY=myco-secret")
		if d.Credential != "MYCO_LLM_KEY" || d.Problem != "" || !slices.Equal(d.PassEnv, []string{"CODEX_HOME", "MYCO_LLM_KEY"}) {
			t.Errorf("description = %+v", d)
		}
		d = describe(t, Options{}, "CODEX_HOME="+home)
		if d.Credential != "" || !strings.Contains(d.Problem, "provider myco reads its key from MYCO_LLM_KEY, which is not set") {
			t.Errorf("unset key: %+v", d)
		}
		d = describe(t, Options{Config: []string{`model_provider="github"`}}, "CODEX_HOME="+home, "GITHUB_TOKEN=ghs_secret")
		if d.Credential != "" || !strings.Contains(d.Problem, "forge token") || slices.Contains(d.PassEnv, "GITHUB_TOKEN") {
			t.Errorf("forge token as env_key: %+v", d)
		}
	})
	t.Run("not the Codex CLI", func(t *testing.T) {
		a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/false", Environ: func() []string { return []string{"CODEX_API_KEY=k"} }}})
		if err != nil {
			t.Fatal(err)
		}
		if d := a.Describe(context.Background()); d.Version != "" || !strings.Contains(d.Problem, "--version gave no answer") {
			t.Errorf("description = %+v", d)
		}
	})
}
