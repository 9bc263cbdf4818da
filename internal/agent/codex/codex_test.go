package codex

import (
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

func TestArgsAndEnv(t *testing.T) {
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Model: "gpt-5",
		Environ: func() []string {
			return []string{"PATH=/usr/bin", "HOME=/root", "GH_TOKEN=ghp_secret", "GW_KEY=k", "OPENAI_API_KEY=o", "ANTHROPIC_API_KEY=a"}
		}},
		Provider: &Provider{ID: "gw", BaseURL: `http://127.0.0.1:1/v1`, EnvKey: "GW_KEY"},
		Config:   []string{"model_reasoning_effort=\"low\""},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := a.Args(agent.Task{Kind: agent.TaskKindFix, Workdir: "/w"})
	provider := []string{"-m", "gpt-5",
		"-c", `model_provider="gw"`, "-c", `model_providers.gw={name="gw",base_url="http://127.0.0.1:1/v1",wire_api="responses",env_key="GW_KEY"}`,
		"-c", `model_reasoning_effort="low"`}
	want := append([]string{"/bin/sh", "exec", "--json", "-s", "workspace-write", "-C", "/w", "--skip-git-repo-check",
		"--color", "never"}, append(provider, "-")...)
	if !slices.Equal(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
	if rv := a.Args(agent.Task{Kind: agent.TaskKindReview, Workdir: "/w"}); !slices.Contains(rv, "read-only") || slices.Contains(rv, "workspace-write") ||
		!slices.Contains(rv, "--ephemeral") {
		t.Errorf("review argv %q", rv)
	}
	// The summary turn at the budget (AG-T1) resumes the run's session
	// read-only.
	got = a.ResumeArgs(agent.Task{Kind: agent.TaskKindFix, Workdir: "/w"}, "sid-1")
	want = append(append([]string{"/bin/sh", "exec", "resume", "--json", "--skip-git-repo-check", "--ephemeral"}, provider...),
		"-c", `sandbox_mode="read-only"`, "sid-1", "-")
	if !slices.Equal(got, want) {
		t.Errorf("summary argv\n got %q\nwant %q", got, want)
	}
	env := a.Env(agent.Task{})
	for _, want := range []string{"HOME=/root", "GW_KEY=k", "OPENAI_API_KEY=o"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GH_TOKEN=") || strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") {
			t.Errorf("env has %s", kv)
		}
	}
}

func TestProviderValidation(t *testing.T) {
	if _, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh"}, Provider: &Provider{ID: "x"}}); err == nil {
		t.Error("a provider without a base URL is accepted")
	}
	if _, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh"}, Provider: &Provider{ID: "a.b", BaseURL: "u"}}); err == nil {
		t.Error("a provider id that is no bare TOML key is accepted")
	}
	if _, err := New(Options{CLIOptions: agent.CLIOptions{Getenv: func(string) string { return "" }, Binary: "no-such-codex-here"}}); err == nil ||
		!strings.Contains(err.Error(), BinaryEnv) {
		t.Errorf("missing binary: %v", err)
	}
}

func TestTomlString(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:       `"plain"`,
		`a"b\c`:       `"a\"b\\c"`,
		"tab\tnl\n":   `"tab\u0009nl\u000A"`,
		"ünïcode ✓":   `"ünïcode ✓"`,
		"bad\xffbyte": `"bad\uFFFDbyte"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// Events as Codex 0.169 prints them.
const events = `{"type":"thread.started","thread_id":"t"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`m`" + ` not found."}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Done.\n{\"status\":\"partial\",\"next_action\":\"run the tests\",\"needs_extension_minutes\":5,\"summary\":\"s\",\"files_changed\":[]}"}}
{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":100,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":20}}
`

func TestParseEvents(t *testing.T) {
	e := ParseEvents(events)
	if rec := e.Record(); rec.Status != agent.StatusPartial || rec.NextAction != "run the tests" {
		t.Errorf("record = %+v", rec)
	}
	if e.Usage != (agent.Usage{InputTokens: 400, CacheReadTokens: 100, OutputTokens: 50, ReasoningTokens: 20}) {
		t.Errorf("usage = %+v", e.Usage)
	}
	if !slices.Equal(e.Commands, []string{"/bin/bash -lc ls"}) || e.Completed != 1 {
		t.Errorf("events = %+v", e)
	}

	failed := `{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"stream disconnected"}
{"type":"turn.failed","error":{"message":"unexpected status 401"}}
`
	if ev := ParseEvents(failed); ev.TurnFailed != "unexpected status 401" {
		t.Errorf("TurnFailed = %q", ev.TurnFailed)
	}
	rec := ParseEvents(failed).Record()
	if rec.Status != agent.StatusBlocked || rec.Reason != agent.ReasonUnparseable || !strings.Contains(rec.Summary, "unexpected status 401") {
		t.Errorf("failed record = %+v", rec)
	}
	if rec := ParseEvents("").Record(); rec.Reason != agent.ReasonUnparseable {
		t.Errorf("empty record = %+v", rec)
	}
}
