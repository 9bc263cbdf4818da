package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
)

const endpoint = "https://llm.myco.example/v1"

// TestAG_T4_WatchReadsCodexErrors: each line Codex 0.169 prints when its
// model requests fail, and what it says as it comes.
func TestAG_T4_WatchReadsCodexErrors(t *testing.T) {
	auth := "unexpected status 401 Unauthorized: Incorrect API key provided: sk-bad., url: http://127.0.0.1:9/v1/responses"
	for _, c := range []struct {
		name, line string
		stderr     bool
		want       agent.Signal
	}{
		{name: "an HTTP 401 while retrying fails at once, in Codex's words",
			line: `{"type":"error","message":"Reconnecting... 1/5 (` + auth + `)"}`,
			want: agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: auth, Endpoint: endpoint}}},
		{name: "the last 401 too",
			line: `{"type":"error","message":"` + auth + `"}`,
			want: agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: auth, Endpoint: endpoint}}},
		{name: "a missing key fails at once",
			line: "{\"type\":\"error\",\"message\":\"Missing environment variable: `MYCO_LLM_KEY`.\"}",
			want: agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: "Missing environment variable: `MYCO_LLM_KEY`.", Endpoint: endpoint}}},
		{name: "a WebSocket's 401 is retried over HTTP: a retry",
			line: `{"type":"error","message":"Reconnecting... 2/5 (unexpected status 401 Unauthorized: bad key, url: ws://127.0.0.1:9/v1/responses)"}`,
			want: agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint, Endpoint: endpoint,
				Message: "Reconnecting... 2/5 (unexpected status 401 Unauthorized: bad key, url: ws://127.0.0.1:9/v1/responses)"}}},
		{name: "no connection is a retry naming the endpoint",
			line: `{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`,
			want: agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint, Endpoint: endpoint,
				Message: "Reconnecting... waiting for network (Connection failed: error sending request)"}}},
		{name: "a 503 is a retry",
			line: `{"type":"error","message":"Reconnecting... 3/5 (unexpected status 503 Service Unavailable: down, url: http://127.0.0.1:9/v1/responses)"}`,
			want: agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint, Endpoint: endpoint,
				Message: "Reconnecting... 3/5 (unexpected status 503 Service Unavailable: down, url: http://127.0.0.1:9/v1/responses)"}}},
		{name: "an answer is progress", line: `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hi"}}`,
			want: agent.Signal{Progress: true}},
		{name: "a command is progress", line: `{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"ls"}}`,
			want: agent.Signal{Progress: true}},
		{name: "a completed turn is progress", line: `{"type":"turn.completed","usage":{"input_tokens":1}}`, want: agent.Signal{Progress: true}},
		{name: "a warning item is nothing",
			line: `{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Falling back from WebSockets to HTTPS transport. unexpected status 401 Unauthorized"}}`},
		{name: "a turn that starts is nothing", line: `{"type":"turn.started"}`},
		{name: "stderr's log lines are nothing", stderr: true, line: "ERROR codex_api::endpoint::responses_websocket: 401 Unauthorized"},
		{name: "stray text is nothing", line: "Reconnecting... 1/5 (401 Unauthorized)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &watcher{endpoint: endpoint}
			got := w.line(c.stderr, c.line)
			if fmt.Sprint(deref(got)) != fmt.Sprint(deref(c.want)) {
				t.Errorf("signal = %v, want %v", deref(got), deref(c.want))
			}
		})
	}
	w := &watcher{}
	w.line(false, `{"type":"thread.started","thread_id":"th-1"}`)
	if w.thread() != "th-1" {
		t.Errorf("thread = %q", w.thread())
	}
	// Without a known endpoint the message's URL names it.
	if s := w.line(false, `{"type":"error","message":"`+auth+`"}`); s.Fail == nil || s.Fail.Endpoint != "http://127.0.0.1:9/v1/responses" {
		t.Errorf("endpoint from the message: %+v", s.Fail)
	}
}

func deref(s agent.Signal) []any {
	out := []any{s.Progress}
	for _, e := range []*agent.CLIError{s.Retry, s.Fail} {
		if e != nil {
			out = append(out, *e)
		} else {
			out = append(out, nil)
		}
	}
	return out
}

// fakeAgent is the backend running prog (see fakeCodex, fakeProgram)
// with the custom provider "myco" of config.toml in a CODEX_HOME of its
// own, whose home it returns.
func fakeAgent(t *testing.T, prog string) (*Agent, string) {
	t.Helper()
	home := codexHomeWith(t, map[string]string{"config.toml": mycoConfig})
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary: prog, Grace: time.Second, RetryBound: time.Second,
		Environ: func() []string {
			return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEX_HOME=" + home, "MYCO_LLM_KEY=k"}
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a, home
}

// fakeProgram is a shell script run as codex: body, with stdin read.
func fakeProgram(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat >/dev/null\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAG_T4_TurnFailedIsTheRunsError: a turn.failed that ends a run is
// its error in Codex's words, whatever kind of run it was — a fix, a
// review, a judge, a check — of the kind its message says.
func TestAG_T4_TurnFailedIsTheRunsError(t *testing.T) {
	for _, c := range []struct {
		msg  string
		kind agent.FailKind
	}{
		{"unexpected status 401 Unauthorized: Incorrect API key provided: sk-bad., url: https://llm.myco.example/v1/responses", agent.FailAuth},
		{"stream disconnected before completion: error sending request for url (https://llm.myco.example/v1/responses)", agent.FailEndpoint},
		{"unexpected status 400 Bad Request: The model `nope` does not exist", agent.FailCLI},
	} {
		events := `{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
{"type":"error","message":"` + c.msg + `"}
{"type":"turn.failed","error":{"message":"` + c.msg + `"}}
`
		a, _ := fakeAgent(t, fakeCodex(t, events))
		for _, kind := range []string{agent.TaskKindFix, agent.TaskKindReview, agent.TaskKindJudge, agent.TaskKindCheck} {
			res, err := a.Run(context.Background(), agent.Task{Kind: kind, Workdir: t.TempDir(), Budget: time.Minute, Prompt: "p"})
			var ce *agent.CLIError
			if !errors.As(err, &ce) || ce.Kind != c.kind || ce.Message != c.msg || ce.Endpoint != endpoint {
				t.Errorf("%s run, %q: error %#v, want %s quoting Codex", kind, c.msg, err, c.kind)
				continue
			}
			if res.Record.Status != agent.StatusBlocked || res.Record.Reason != agent.ReasonCLIError {
				t.Errorf("%s run: record %+v", kind, res.Record)
			}
		}
	}
	// A turn that completed has no error, whatever was retried before.
	a, _ := fakeAgent(t, fakeCodex(t, `{"type":"thread.started","thread_id":"th"}
{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"[]"}}
{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}
`))
	if res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindReview, Workdir: t.TempDir(), Budget: time.Minute}); err != nil ||
		res.Record.Status != agent.StatusComplete || res.Output != "[]" {
		t.Errorf("recovered run: %v, %+v", err, res.Record)
	}
}

// TestAG_T4_RunStoppedByTheWatch: an authentication failure stops the run
// at once, a retry that goes on stops it at the retry bound naming the
// provider's endpoint — neither waits for the budget.
func TestAG_T4_RunStoppedByTheWatch(t *testing.T) {
	for _, c := range []struct {
		line string
		kind agent.FailKind
		msg  string
	}{
		{"{\"type\":\"error\",\"message\":\"Missing environment variable: `MYCO_LLM_KEY`.\"}", agent.FailAuth, "Missing environment variable: `MYCO_LLM_KEY`."},
		{`{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`, agent.FailEndpoint,
			"Reconnecting... waiting for network (Connection failed: error sending request) (still failing after 1s of retries)"},
	} {
		prog := fakeProgram(t, "echo '{\"type\":\"thread.started\",\"thread_id\":\"th\"}'\necho '"+c.line+"'\nexec sleep 300")
		a, _ := fakeAgent(t, prog)
		res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: t.TempDir(), Budget: 5 * time.Minute})
		var ce *agent.CLIError
		if !errors.As(err, &ce) || ce.Kind != c.kind || ce.Message != c.msg || ce.Endpoint != endpoint {
			t.Errorf("%s: error %#v", c.kind, err)
		}
		if res.Record.Reason != agent.ReasonCLIError {
			t.Errorf("%s: record %+v, want stopped by the watch", c.kind, res.Record)
		}
	}
}

// rollout writes a rollout for thread under home with token_count events
// of these totals.
func rollout(t *testing.T, home, thread string, totals ...string) {
	t.Helper()
	dir := filepath.Join(home, "sessions", "2026", "01", "02")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"timestamp":"t","type":"session_meta","payload":{"id":"` + thread + `"}}` + "\n")
	b.WriteString(`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}` + "\n")
	for _, tot := range totals {
		b.WriteString(`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"token_count"}]}}` + "\n")
		b.WriteString(`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":` + tot + `,"last_token_usage":{}}}}` + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-01-02T03-04-05-"+thread+".jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAG_B1_UsageOfARunStoppedAtItsBudget: Codex prints usage only when a
// turn completes; a run stopped before has its responses counted from its
// thread's rollout, and the summary turn asked at the budget adds only
// what it used (its turn.completed is the thread's total, the stopped
// run's included).
func TestAG_B1_UsageOfARunStoppedAtItsBudget(t *testing.T) {
	if u, ok := RolloutUsage(t.TempDir(), "none"); ok || u != (agent.Usage{}) {
		t.Errorf("no rollout: %+v %v", u, ok)
	}
	const run = `echo '{"type":"thread.started","thread_id":"th-9"}'
  echo '{"type":"turn.started"}'
  echo '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","exit_code":0,"status":"completed"}}'
  exec sleep 300`
	for _, c := range []struct {
		name, summary string
		want          agent.Usage
	}{
		// The thread's total: the stopped run's 400+40, the summary's
		// 300+30.
		{"the summary turn answers", `echo '{"type":"thread.started","thread_id":"th-9"}'
  echo '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"{\"status\":\"partial\",\"next_action\":\"finish the edit\",\"needs_extension_minutes\":3,\"summary\":\"s\",\"files_changed\":[]}"}}'
  echo '{"type":"turn.completed","usage":{"input_tokens":700,"cached_input_tokens":100,"cache_write_input_tokens":0,"output_tokens":70,"reasoning_output_tokens":7}}'`,
			agent.Usage{InputTokens: 600, CacheReadTokens: 100, OutputTokens: 70, ReasoningTokens: 7}},
		// The stopped run's, from its rollout alone.
		{"the summary turn fails", `echo '{"type":"thread.started","thread_id":"th-9"}'
  exit 1`,
			agent.Usage{InputTokens: 300, CacheReadTokens: 100, OutputTokens: 40, ReasoningTokens: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog := fakeProgram(t, "case \"$2\" in\nresume)\n  "+c.summary+"\n  ;;\n*)\n  "+run+"\n  ;;\nesac")
			a, home := fakeAgent(t, prog)
			a.opts.SummaryBudget = time.Minute
			rollout(t, home, "th-9",
				`{"input_tokens":100,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":110}`,
				`{"input_tokens":400,"cached_input_tokens":100,"cache_write_input_tokens":0,"output_tokens":40,"reasoning_output_tokens":4,"total_tokens":440}`)
			if u, ok := RolloutUsage(home, "th-9"); !ok || u != (agent.Usage{InputTokens: 300, CacheReadTokens: 100, OutputTokens: 40, ReasoningTokens: 4}) {
				t.Errorf("rollout usage = %+v %v", u, ok)
			}
			res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: t.TempDir(), Budget: 2 * time.Second,
				Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != c.want {
				t.Errorf("usage = %+v, want %+v (record %+v)", res.Usage, c.want, res.Record)
			}
		})
	}
}

func TestParseEventsUsageIsTheThreadsTotal(t *testing.T) {
	two := `{"type":"turn.completed","usage":{"input_tokens":100,"output_tokens":10}}
{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":50,"output_tokens":30}}
`
	if e := ParseEvents(two); e.Usage != (agent.Usage{InputTokens: 250, CacheReadTokens: 50, OutputTokens: 30}) || e.Completed != 2 {
		t.Errorf("usage = %+v", e.Usage)
	}
}
