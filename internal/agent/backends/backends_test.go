package backends

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/claude"
	"github.com/convergeloop/converge/internal/agent/codex"
	"github.com/convergeloop/converge/internal/agent/opencode"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestNewBuildsEachBackend(t *testing.T) {
	getenv := env(map[string]string{
		"CONVERGE_CLAUDE_BIN": "/bin/sh", "CONVERGE_CODEX_BIN": "/bin/sh",
		"CONVERGE_CLAUDE_MODEL": "opus", "CONVERGE_CODEX_MODEL": "gpt-5",
	})
	a, err := New(Config{Name: "claude", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := a.(*claude.Agent)
	if !ok || c.Name() != "claude" || c.Binary() != "/bin/sh" {
		t.Fatalf("claude = %#v", a)
	}
	if argv := c.Args(agent.Task{}); !slices.Contains(argv, "opus") {
		t.Errorf("claude argv %q lacks the model from CONVERGE_CLAUDE_MODEL", argv)
	}

	a, err = New(Config{Name: "codex", Role: RoleReview, Model: "o9", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	x, ok := a.(*codex.Agent)
	if !ok || x.Name() != "review-codex" {
		t.Fatalf("codex = %#v", a)
	}
	if argv := x.Args(agent.Task{}); !slices.Contains(argv, "o9") || slices.Contains(argv, "gpt-5") {
		t.Errorf("codex argv %q: the configured model wins over the environment's", argv)
	}
	if id := ID(a, Config{Name: "codex", Model: "o9", Getenv: getenv}); id != "codex bin=/bin/sh model=o9" {
		t.Errorf("ID = %q", id)
	}
}

func TestNewOpenCode(t *testing.T) {
	a, err := New(Config{Name: "opencode", Role: RoleJudge, Getenv: env(map[string]string{
		"CONVERGE_OPENCODE_BIN": "/bin/sh", "CONVERGE_OPENCODE_MODEL": "anthropic/x"})})
	if err != nil {
		t.Fatal(err)
	}
	o, ok := a.(*opencode.Agent)
	if !ok || o.Name() != "judge-opencode" || !slices.Contains(o.Args(agent.Task{}), "anthropic/x") {
		t.Errorf("opencode = %#v", a)
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{Name: "bogus"})
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "claude, codex, gemini, opencode") {
		t.Errorf("unknown: %v", err)
	}
	_, err = New(Config{Name: "claude", Getenv: env(map[string]string{"CONVERGE_CLAUDE_BIN": "/nonexistent/claude"})})
	if err == nil || errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "CONVERGE_CLAUDE_BIN") {
		t.Errorf("missing binary: %v", err)
	}
	if !Known("codex") || Known("command") || !slices.Equal(Names(), []string{"claude", "codex", "gemini", "opencode"}) {
		t.Error("Known/Names")
	}
}

// TestAG_E1_TaskModelIsTheCLIsModelFlag: every CLI backend passes a
// task's model (a rung of the escalation ladder) as its model flag in
// place of the configured one, and the configured one when the task
// names none.
func TestAG_E1_TaskModelIsTheCLIsModelFlag(t *testing.T) {
	flags := map[string]string{"claude": "--model", "codex": "-m", "gemini": "-m", "opencode": "-m"}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			a, err := New(Config{Name: name, Model: "base-model", Getenv: env(map[string]string{
				"CONVERGE_" + strings.ToUpper(name) + "_BIN": "/bin/sh"})})
			if err != nil {
				t.Fatal(err)
			}
			args := a.(interface{ Args(agent.Task) []string }).Args
			flag := flags[name]
			if flag == "" {
				t.Fatalf("no model flag known for backend %s", name)
			}
			for model, want := range map[string]string{"": "base-model", "strong-model": "strong-model"} {
				argv := args(agent.Task{Kind: agent.TaskKindFix, Workdir: "/w", Model: model})
				i := slices.Index(argv, flag)
				if i < 0 || i+1 >= len(argv) || argv[i+1] != want {
					t.Errorf("task model %q: argv %q, want %s %s", model, argv, flag, want)
				}
				if model != "" && slices.Contains(argv, "base-model") {
					t.Errorf("task model %q: argv %q still names the configured model", model, argv)
				}
			}
		})
	}
}

// TestSEC2_AgentEnvPassesNamedVariablesNeverTheForgeToken: every backend
// gets the variables agent_env names from converge's environment, as they
// are; a forge token's variable never passes, nor any variable whose value
// is the forge token converge resolved (Secrets), whatever its name.
func TestSEC2_AgentEnvPassesNamedVariablesNeverTheForgeToken(t *testing.T) {
	const tok = "tok-resolved-by-converge-0123456789"
	environ := func() []string {
		return []string{"PATH=/bin", "AWS_PROFILE=bedrock", "CLOUD_ML_REGION=us-east5", "GH_TOKEN=ghp_env",
			"MY_TOKEN_COPY=" + tok, "UNRELATED_SECRET=s"}
	}
	for _, name := range Names() {
		a, err := New(Config{Name: name, Binary: "/bin/sh", Getenv: env(nil), Environ: environ, Secrets: []string{tok},
			AgentEnv: []string{"AWS_PROFILE", "CLOUD_ML_REGION", "GH_TOKEN", "MY_TOKEN_COPY", "NOT_SET"}})
		if err != nil {
			t.Fatal(err)
		}
		got := a.(interface{ Env(agent.Task) []string }).Env(agent.Task{})
		for _, want := range []string{"AWS_PROFILE=bedrock", "CLOUD_ML_REGION=us-east5"} {
			if !slices.Contains(got, want) {
				t.Errorf("%s: env lacks %s: %q", name, want, got)
			}
		}
		for _, kv := range got {
			if strings.Contains(kv, tok) || strings.HasPrefix(kv, "GH_TOKEN=") || strings.HasPrefix(kv, "UNRELATED_SECRET=") || strings.HasPrefix(kv, "NOT_SET=") {
				t.Errorf("%s: env passes %q", name, kv)
			}
		}
	}
}
