package opencode

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

func TestArgsEnvAndConfig(t *testing.T) {
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Model: "anthropic/claude-x",
		Environ: func() []string { return []string{"PATH=/bin", "HOME=/h", "GH_TOKEN=ghp_x", "ANTHROPIC_API_KEY=k"} }},
		Config: map[string]any{"provider": map[string]any{"anthropic": map[string]any{"options": map[string]any{"baseURL": "http://127.0.0.1:1/v1"}}}, "share": "auto"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.Args(agent.Task{Workdir: "/w"}), []string{"/bin/sh", "run", "--print-logs", "--log-level", "WARN", "--format", "json", "--dir", "/w", "-m", "anthropic/claude-x"}; !slices.Equal(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
	// The summary turn at the budget (AG-T1) continues the run's session
	// with a review's permissions.
	if got, want := a.ResumeArgs(agent.Task{Workdir: "/w"}, "ses_1"), []string{"/bin/sh", "run", "--print-logs", "--log-level", "WARN", "--format", "json", "--dir", "/w", "--session", "ses_1", "-m", "anthropic/claude-x"}; !slices.Equal(got, want) {
		t.Errorf("summary argv %q, want %q", got, want)
	}
	if !slices.Contains(a.ResumeEnv(agent.Task{Kind: agent.TaskKindFix}), "OPENCODE_CONFIG_CONTENT="+a.ConfigContent(agent.Task{Kind: agent.TaskKindReview})) {
		t.Error("the summary turn does not have a review's permissions")
	}
	env := a.Env(agent.Task{Kind: agent.TaskKindFix})
	if !slices.Contains(env, "ANTHROPIC_API_KEY=k") || !slices.Contains(env, "OPENCODE_DISABLE_SHARE=1") || slices.Contains(env, "GH_TOKEN=ghp_x") {
		t.Errorf("env = %q", env)
	}
	var cfg struct {
		Share      string                    `json:"share"`
		Autoupdate bool                      `json:"autoupdate"`
		Permission map[string]string         `json:"permission"`
		Provider   map[string]map[string]any `json:"provider"`
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
			if err := json.Unmarshal([]byte(v), &cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cfg.Share != "disabled" || cfg.Autoupdate || cfg.Permission["edit"] != "allow" || cfg.Permission["webfetch"] != "deny" || cfg.Provider["anthropic"] == nil {
		t.Errorf("fix config = %+v", cfg)
	}
	if err := json.Unmarshal([]byte(a.ConfigContent(agent.Task{Kind: agent.TaskKindReview})), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Permission["edit"] != "deny" || cfg.Permission["bash"] != "deny" {
		t.Errorf("review config = %+v", cfg)
	}
	if _, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh"}, Config: map[string]any{"bad": func() {}}}); err == nil {
		t.Error("a config that does not encode is accepted")
	}
}

// Events as OpenCode 1.18 prints them, cut to the fields read.
const events = `{"type":"step_start","part":{"type":"step-start"}}
{"type":"tool_use","part":{"type":"tool","tool":"read","callID":"t1","state":{"status":"completed","input":{"filePath":"/w/a.go"},"output":"..."}}}
{"type":"step_finish","part":{"reason":"tool-calls","type":"step-finish","tokens":{"total":15,"input":10,"output":5,"reasoning":0,"cache":{"write":1,"read":2}},"cost":0.5}}
{"type":"step_start","part":{"type":"step-start"}}
{"type":"text","part":{"type":"text","text":"Done.\n{\"status\":\"blocked\",\"next_action\":\"\",\"needs_extension_minutes\":0,\"summary\":\"s\",\"files_changed\":[],\"reason\":\"needs a human\"}"}}
{"type":"step_finish","part":{"reason":"stop","type":"step-finish","tokens":{"total":30,"input":20,"output":10,"reasoning":3,"cache":{"write":0,"read":0}},"cost":0.25}}
`

func TestParseEvents(t *testing.T) {
	e := ParseEvents(events)
	if rec := e.Record(); rec.Status != agent.StatusBlocked || rec.Reason != "needs a human" {
		t.Errorf("record = %+v", rec)
	}
	want := agent.Usage{InputTokens: 30, OutputTokens: 15, ReasoningTokens: 3, CacheReadTokens: 2, CacheWriteTokens: 1, CostUSD: 0.75, CostReported: true, Turns: 2}
	if e.Usage != want || !slices.Equal(e.Tools, []string{"read"}) {
		t.Errorf("events = %+v", e)
	}
	failed := `{"type":"step_start","part":{}}
{"type":"error","error":{"name":"APIError","data":{"message":"Unauthorized: invalid x-api-key"}}}
`
	rec := ParseEvents(failed).Record()
	if rec.Reason != agent.ReasonUnparseable || !strings.Contains(rec.Summary, "invalid x-api-key") {
		t.Errorf("failed record = %+v", rec)
	}
}
