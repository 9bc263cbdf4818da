package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// Lines as Gemini CLI 0.61 prints them against fakemodel (a 401, a 503,
// a closed port, no key, no login), cut to one line each.
const (
	stderr401 = `Error when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-sendMessageStream-2026-12-01T17-51-36-471Z.json _ApiError: {"error":{"code":401,"message":"refused by fakemodel","status":"UNAUTHENTICATED"}}`
	stderr503 = `Attempt 2 failed with status 503. Retrying with backoff... _ApiError: {"error":{"code":503,"message":"refused by fakemodel","status":"UNAVAILABLE"}}`
	stderrECR = `Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request`
	stderrKey = `When using Gemini API, you must specify the GEMINI_API_KEY environment variable.`
	stderrGCA = "\x1b[31mManual authorization is required but the current session is non-interactive. Please run the Gemini CLI in an interactive terminal to log in, provide a GEMINI_API_KEY, or ensure Application Default Credentials are configured.\x1b[0m"
	result401 = `{"type":"result","timestamp":"2026-12-01T17:51:36.473Z","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"refused by fakemodel\",\"status\":\"UNAUTHENTICATED\"}}]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0}}`
)

// TestAG_T4_GeminiWatchReadsTheCLIsSignals: a rejected or missing
// credential fails at once in the CLI's words (without its colours or the
// path of its error report); a retried request is a Retry naming the
// endpoint; the model's text and tool calls are progress; anything else
// says nothing.
func TestAG_T4_GeminiWatchReadsTheCLIsSignals(t *testing.T) {
	w := watcher("http://127.0.0.1:9")
	for _, line := range []string{stderr401, stderrKey, stderrGCA, "Invalid auth method selected.",
		"[API Error: Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.]"} {
		sig := w(true, line)
		if sig.Fail == nil || sig.Fail.Kind != agent.FailAuth || strings.Contains(sig.Fail.Message, "Full report") || strings.Contains(sig.Fail.Message, "\x1b") {
			t.Errorf("%q: %+v", line, sig)
		}
	}
	if sig := w(true, stderr401); sig.Fail.Message != `Error when talking to Gemini API _ApiError: {"error":{"code":401,"message":"refused by fakemodel","status":"UNAUTHENTICATED"}}` {
		t.Errorf("message %q", sig.Fail.Message)
	}
	for _, line := range []string{stderr503, stderrECR, `Attempt 3 failed with status 429. Retrying with backoff... _ApiError: {"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`} {
		sig := w(true, line)
		if sig.Retry == nil || sig.Retry.Kind != agent.FailEndpoint || sig.Retry.Endpoint != "http://127.0.0.1:9" || sig.Retry.Message != line {
			t.Errorf("%q: %+v", line, sig)
		}
	}
	for _, line := range []string{
		`{"type":"message","role":"assistant","content":"Hi","delta":true}`,
		`{"type":"tool_use","tool_name":"read_file","tool_id":"t","parameters":{}}`,
		`{"type":"tool_result","tool_id":"t","status":"success"}`,
		`{"type":"result","status":"success","stats":{}}`,
	} {
		if sig := w(false, line); !sig.Progress {
			t.Errorf("%s: %+v, want progress", line, sig)
		}
	}
	if sig := w(false, result401); sig.Fail == nil || sig.Fail.Kind != agent.FailAuth {
		t.Errorf("result 401: %+v", sig)
	}
	for _, line := range []string{
		`{"type":"init","session_id":"s","model":"auto"}`, `{"type":"message","role":"user","content":"status 401"}`,
		"YOLO mode is enabled. All tool calls will be automatically approved.", "Ripgrep is not available. Falling back to GrepTool.",
		// A tool's failure is not the CLI's credential.
		`{"type":"result","status":"error","error":{"type":"FatalToolExecutionError","message":"Error executing tool web_fetch: Request failed with status code 403"}}`,
	} {
		if sig := w(!strings.HasPrefix(line, "{"), line); sig != (agent.Signal{}) {
			t.Errorf("%s: %+v, want nothing", line, sig)
		}
	}
}

// TestAG_T4_GeminiResultErrorIsTheRunsCLIError: an error result is the
// run's *CLIError in the CLI's words for a review, judge or check run
// and for a fix run without a record; its kind says auth, endpoint
// (named) or another error; a fix run whose record came before the error
// keeps it.
func TestAG_T4_GeminiResultErrorIsTheRunsCLIError(t *testing.T) {
	for _, c := range []struct {
		message string
		kind    agent.FailKind
	}{
		{`[API Error: {\"error\":{\"code\":401,\"message\":\"refused\",\"status\":\"UNAUTHENTICATED\"}}]`, agent.FailAuth},
		{`[API Error: {\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"INVALID_ARGUMENT\"}}]`, agent.FailAuth},
		{`[API Error: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}]`, agent.FailEndpoint},
		{`[API Error: exception TypeError: fetch failed sending request]`, agent.FailEndpoint},
		{`[API Error: {\"error\":{\"code\":404,\"message\":\"models/x is not found\",\"status\":\"NOT_FOUND\"}}]`, agent.FailCLI},
	} {
		out := `{"type":"init"}` + "\n" + `{"type":"result","status":"error","error":{"type":"unknown","message":"` + c.message + `"},"stats":{}}` + "\n"
		e := ParseEvents(out)
		for _, readOnly := range []bool{true, false} {
			f := e.CLIFailure(readOnly, "https://generativelanguage.googleapis.com")
			if f == nil || f.Kind != c.kind || !strings.HasPrefix(f.Message, "[API Error: ") {
				t.Errorf("%s (read-only %v): %+v", c.message, readOnly, f)
				continue
			}
			if (f.Endpoint != "") != (c.kind == agent.FailEndpoint) {
				t.Errorf("%s: endpoint %q", c.message, f.Endpoint)
			}
		}
	}
	withRecord := strings.Replace(events, `{"type":"result","status":"success"`, `{"type":"result","status":"error","error":{"message":"[API Error: fetch failed]"}`, 1)
	e := ParseEvents(withRecord)
	if f := e.CLIFailure(false, ""); f != nil {
		t.Errorf("a fix run with a record: %+v", f)
	}
	if f := e.CLIFailure(true, ""); f == nil {
		t.Error("a review run's error result is no CLI error")
	}
	if f := ParseEvents(events).CLIFailure(true, ""); f != nil {
		t.Errorf("a run that succeeded: %+v", f)
	}
}

// TestAG_B1_GeminiSessionUsage: the usage of a run without a result
// event is what its session file recorded: each model answer once (the
// last version of a message appended again, and those a rewrite of the
// history dropped), none already counted, none of another session.
func TestAG_B1_GeminiSessionUsage(t *testing.T) {
	home := t.TempDir()
	id := "6e7c3a84-4795-417e-94d0-dd7c6f3edb21"
	dir := filepath.Join(home, ".gemini", "tmp", "work", "chats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	session := `{"sessionId":"` + id + `","projectHash":"h","startTime":"t","kind":"main"}
{"$set":{"messages":[{"id":"u0","type":"user","content":[{"text":"ctx"}]},{"id":"g0","type":"gemini","content":"","tokens":{"input":1000,"output":10,"cached":0,"thoughts":0,"tool":0,"total":1010}}]}}
{"id":"u1","type":"user","content":[{"text":"fix it"}]}
{"id":"g1","type":"gemini","content":"","toolCalls":[],"model":"m"}
{"id":"g1","type":"gemini","content":"","toolCalls":[],"model":"m","tokens":{"input":150,"output":20,"cached":50,"thoughts":5,"tool":0,"total":175}}
{"$set":{"lastUpdated":"t2"}}
{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"fix it"}]}]}}
{"id":"g2","type":"gemini","content":"done","tokens":{"input":300,"output":30,"cached":0,"thoughts":0,"tool":0,"total":330}}
{"id":"g3","type":"gem`
	if err := os.WriteFile(filepath.Join(dir, "session-2026-12-01T17-49-6e7c3a84.jsonl"), []byte(session), 0o644); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(session, id, "6e7c3a84-0000-0000-0000-000000000000", 1)
	if err := os.WriteFile(filepath.Join(dir, "session-2026-12-01T18-00-6e7c3a84.jsonl"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	counted := map[string]bool{}
	u, found := sessionUsage(home, id, counted)
	want := agent.Usage{InputTokens: 1000 + 100 + 300, CacheReadTokens: 50, OutputTokens: 10 + 25 + 30, ReasoningTokens: 5}
	if !found || u != want {
		t.Errorf("usage %+v (found %v), want %+v", u, found, want)
	}
	if u, _ := sessionUsage(home, id, counted); u != (agent.Usage{}) {
		t.Errorf("counted again: %+v", u)
	}
	if _, found := sessionUsage(home, "ffffffff-0000", map[string]bool{}); found {
		t.Error("found a session that is not there")
	}
}
