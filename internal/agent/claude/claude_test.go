package claude

import (
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

func fakeEnviron() []string {
	return []string{"PATH=/usr/bin", "HOME=/root", "GH_TOKEN=ghp_secret", "GITHUB_TOKEN=x", "CONVERGE_TOKEN=y",
		"ANTHROPIC_API_KEY=sk-ant", "OPENAI_API_KEY=sk-oai", "AWS_SECRET_ACCESS_KEY=z"}
}

func TestArgsAndEnv(t *testing.T) {
	a, err := New(Options{MaxTurns: 7, CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Model: "opus", ExtraArgs: []string{"--effort", "low"},
		Env: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:1"}, Environ: fakeEnviron}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(a.Args(agent.Task{Kind: agent.TaskKindFix}), " ")
	want := "/bin/sh -p --output-format stream-json --verbose --include-partial-messages --permission-mode acceptEdits" +
		" --tools Read,Glob,Grep,Edit,Write,Bash --allowedTools Read,Glob,Grep,Edit,Write,Bash" +
		" --max-turns 7 --model opus --effort low"
	if got != want {
		t.Errorf("argv\n got %s\nwant %s", got, want)
	}
	if rv := strings.Join(a.Args(agent.Task{Kind: agent.TaskKindReview}), " "); !strings.Contains(rv, "--tools Read,Glob,Grep --allowedTools Read,Glob,Grep ") ||
		!strings.Contains(rv, " --no-session-persistence ") {
		t.Errorf("review argv %s", rv)
	}
	// The summary turn at the budget (AG-T1) resumes the run's session
	// read-only.
	got = strings.Join(a.ResumeArgs(agent.Task{Kind: agent.TaskKindFix}, "sid-1"), " ")
	want = "/bin/sh -p --output-format stream-json --verbose --include-partial-messages --permission-mode acceptEdits" +
		" --tools Read,Glob,Grep --allowedTools Read,Glob,Grep --max-turns 3" +
		" --no-session-persistence --disallowedTools Edit,Write,Bash --resume sid-1 --model opus --effort low"
	if got != want {
		t.Errorf("summary argv\n got %s\nwant %s", got, want)
	}
	if slices.Contains(a.Args(agent.Task{}), "--dangerously-skip-permissions") {
		t.Error("argv skips permissions")
	}

	env := a.Env(agent.Task{Env: []string{"PATH=/task/bin", "HOME=/task"}})
	for _, want := range []string{"PATH=/task/bin", "HOME=/task", "ANTHROPIC_API_KEY=sk-ant", "ANTHROPIC_BASE_URL=http://127.0.0.1:1", "DISABLE_AUTOUPDATER=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		for _, bad := range []string{"GH_TOKEN", "GITHUB_TOKEN", "CONVERGE_TOKEN", "OPENAI_API_KEY"} {
			if strings.HasPrefix(kv, bad+"=") {
				t.Errorf("env has %s", kv)
			}
		}
	}
	// A task without an environment gets the scrubbed process environment.
	if env := a.Env(agent.Task{}); !slices.Contains(env, "HOME=/root") || slices.Contains(env, "GH_TOKEN=ghp_secret") {
		t.Errorf("default env = %v", env)
	}
}

func TestNewMissingBinary(t *testing.T) {
	_, err := New(Options{CLIOptions: agent.CLIOptions{Getenv: func(string) string { return "" }, Binary: "no-such-claude-here"}})
	if err == nil || !strings.Contains(err.Error(), `"no-such-claude-here" not found in PATH`) || !strings.Contains(err.Error(), BinaryEnv) {
		t.Errorf("err = %v", err)
	}
	_, err = New(Options{CLIOptions: agent.CLIOptions{Getenv: func(k string) string {
		if k == BinaryEnv {
			return "/nonexistent/claude"
		}
		return ""
	}}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/claude") || !strings.Contains(err.Error(), BinaryEnv) {
		t.Errorf("err = %v", err)
	}
}

// A stream as Claude Code 2.1 prints it, cut to the fields read.
const stream = `{"type":"system","subtype":"init","cwd":"/w","tools":["Read"]}
{"type":"assistant","message":{"content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"t1","name":"Read","input":{}}]},"parent_tool_use_id":null}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]},"parent_tool_use_id":null}
{"type":"assistant","message":{"content":[{"type":"text","text":"{\"status\":\"complete\"}"}]},"parent_tool_use_id":"t9"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Done.\n{\"status\":\"complete\",\"next_action\":\"\",\"needs_extension_minutes\":0,\"summary\":\"s\",\"files_changed\":[\"a\"]}"}]},"parent_tool_use_id":null}
{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"Done.\n{\"status\":\"complete\",\"next_action\":\"\",\"needs_extension_minutes\":0,\"summary\":\"s\",\"files_changed\":[\"a\"]}","total_cost_usd":0.25,"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":30,"output_tokens":40}}
`

func TestParseStream(t *testing.T) {
	s := ParseStream(stream)
	if rec := s.Record(); rec.Status != agent.StatusComplete || rec.Summary != "s" {
		t.Errorf("record = %+v", rec)
	}
	if u := s.Usage(); u != (agent.Usage{InputTokens: 10, OutputTokens: 40, CacheReadTokens: 30, CacheWriteTokens: 2, CostUSD: 0.25, CostReported: true, Turns: 3}) {
		t.Errorf("usage = %+v", u)
	}
	if s.Assistant != 2 {
		t.Errorf("assistant messages = %d, want 2 (the subagent's is not the run's)", s.Assistant)
	}

	// No result event (stopped): the last assistant message of the run
	// itself stands in, still fail-closed.
	cut := stream[:strings.Index(stream, `{"type":"result"`)]
	if rec := ParseStream(cut).Record(); rec.Status != agent.StatusComplete {
		t.Errorf("record without result = %+v", rec)
	}
	noRecord := cut[:strings.Index(cut, `{"type":"assistant","message":{"content":[{"type":"text","text":"Done.`)]
	rec := ParseStream(noRecord).Record()
	if rec.Status != agent.StatusBlocked || rec.Reason != agent.ReasonUnparseable || !strings.Contains(rec.Summary, "no result event") {
		t.Errorf("record = %+v", rec)
	}
	if rec := ParseStream("garbage\n{not json\n").Record(); rec.Reason != agent.ReasonUnparseable {
		t.Errorf("garbage record = %+v", rec)
	}

	// An error result: its text is not taken; the record of the last
	// message is, with a concern.
	errStream := strings.Replace(stream, `"subtype":"success","is_error":false`, `"subtype":"error_max_turns","is_error":true`, 1)
	rec = ParseStream(errStream).Record()
	if rec.Status != agent.StatusComplete || !slices.Contains(rec.Concerns, "claude reported an error: error_max_turns") {
		t.Errorf("error record = %+v", rec)
	}
}
