package claude

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// Lines as Claude Code 2.1.328 printed them against fakemodel (cut to the
// fields read): refused with 401, 403, 404, 429 and 503, unreachable, no
// credential, and run as root with --dangerously-skip-permissions under
// CLAUDE_CODE_STARTUP_FAILURE_RESULTS.
const (
	retry401  = `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":580,"error_status":401,"error":"authentication_failed","session_id":"s"}`
	retry401b = `{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1232,"error_status":401,"error":"authentication_failed","session_id":"s"}`
	retryConn = `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":534,"error_status":null,"error":"unknown","session_id":"s"}`
	retry503  = `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":547,"error_status":503,"error":"server_error","session_id":"s"}`
	retry429  = `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":598,"error_status":429,"error":"rate_limit","session_id":"s"}`

	notLoggedIn    = `{"type":"assistant","message":{"id":"3d37","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"parent_tool_use_id":null,"session_id":"s","error":"authentication_failed","is_api_error_message":true}`
	notLoggedInRes = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"api_error_status":null,"terminal_reason":"api_error","result":"Not logged in · Please run /login","session_id":"s"}`
	invalidKey     = `{"type":"assistant","message":{"id":"f39a","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"Invalid API key · Fix external API key"}]},"parent_tool_use_id":null,"session_id":"s","error":"authentication_failed","is_api_error_message":true,"api_error_status":401,"api_error_type":"authentication_error"}`
	invalidKeyRes  = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"api_error_status":401,"api_error_type":"authentication_error","terminal_reason":"api_error","result":"Invalid API key · Fix external API key","session_id":"s"}`
	connRefused    = `{"type":"assistant","message":{"id":"41ff","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"}]},"parent_tool_use_id":null,"session_id":"s","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}`
	connRefusedRes = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"api_error_status":null,"terminal_reason":"api_error","result":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)","session_id":"s"}`
	forbidden      = `{"type":"assistant","message":{"id":"e311","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"Failed to authenticate. API Error: 403 forbidden thing"}]},"parent_tool_use_id":null,"session_id":"s","error":"authentication_failed","is_api_error_message":true,"api_error_status":403,"api_error_type":"permission_error"}`
	rejected429    = `{"type":"assistant","message":{"id":"07cc","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"API Error: Request rejected (429) · slow down"}]},"parent_tool_use_id":null,"session_id":"s","error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error_type":"rate_limit_error"}`
	unknownModel   = `{"type":"assistant","message":{"id":"9a9a","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it. Run --model to pick a different model."}]},"parent_tool_use_id":null,"session_id":"s","error":"model_not_found","is_api_error_message":true,"api_error_status":404,"api_error_type":"not_found_error"}`
	unknownModelRs = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"api_error_status":404,"terminal_reason":"api_error","result":"There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it. Run --model to pick a different model.","session_id":"s"}`
	startupFailure = `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"errors":["--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"],"startup_failure_reason":"bypass_root","session_id":"s"}`

	modelText    = `{"type":"assistant","message":{"id":"msg_1","model":"claude-fakemodel","role":"assistant","usage":{"input_tokens":100,"output_tokens":1},"content":[{"type":"text","text":"Hello"}]},"parent_tool_use_id":null,"session_id":"s"}`
	messageStart = `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":100,"output_tokens":1}}},"parent_tool_use_id":null,"session_id":"s"}`
)

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// AG-T4: the CLI's own error signals, read as they come, stop a run in
// seconds: a refused credential at its second api_retry (the first may be
// an OAuth login the CLI refreshes), a failing endpoint when the retry
// bound runs out (a Retry naming the endpoint), and the CLI's own API
// error message at once, in its words; the model's messages are Progress.
func TestAG_T4_WatcherSignals(t *testing.T) {
	const ep = "http://127.0.0.1:9"
	w := newWatcher(ep, "ANTHROPIC_API_KEY")
	sig := w.line(false, retry401)
	if sig.Fail != nil || sig.Retry == nil || sig.Retry.Kind != agent.FailAuth {
		t.Errorf("first 401 api_retry = %+v, want a Retry of kind auth", sig)
	}
	sig = w.line(false, retry401b)
	if sig.Fail == nil || sig.Fail.Kind != agent.FailAuth || sig.Fail.Endpoint != ep ||
		!strings.Contains(sig.Fail.Message, "HTTP 401") || !strings.Contains(sig.Fail.Message, `"authentication_failed"`) ||
		!strings.Contains(sig.Fail.Message, "attempt 2 of 10") || !strings.Contains(sig.Fail.Message, "ANTHROPIC_API_KEY") {
		t.Errorf("second 401 api_retry = %+v", sig.Fail)
	}

	for _, l := range []string{retryConn, retry503, retry429} {
		sig := newWatcher(ep, "").line(false, l)
		if sig.Fail != nil || sig.Retry == nil || sig.Retry.Kind != agent.FailEndpoint || sig.Retry.Endpoint != ep {
			t.Errorf("%s\n= %+v, want a Retry of kind endpoint naming %s", l, sig, ep)
		}
	}
	if sig := newWatcher(ep, "").line(false, retryConn); !strings.Contains(sig.Retry.Message, "no HTTP response") {
		t.Errorf("connection api_retry message = %q", sig.Retry.Message)
	}

	for _, c := range []struct {
		line string
		kind agent.FailKind
		msg  string
	}{
		{notLoggedIn, agent.FailAuth, "Not logged in · Please run /login"},
		{invalidKey, agent.FailAuth, "Invalid API key · Fix external API key"},
		{forbidden, agent.FailAuth, "Failed to authenticate. API Error: 403 forbidden thing"},
		{connRefused, agent.FailEndpoint, "API Error: Connection refused"},
		{rejected429, agent.FailEndpoint, "API Error: Request rejected (429)"},
	} {
		sig := newWatcher(ep, "").line(false, c.line)
		if sig.Fail == nil || sig.Fail.Kind != c.kind || !strings.HasPrefix(sig.Fail.Message, c.msg) {
			t.Errorf("%s\n= %+v, want Fail %s %q", c.line, sig.Fail, c.kind, c.msg)
		}
	}
	// An unknown model is the CLI's error too, but its result says so
	// (Stream.Failure); the watcher does not stop the run for it.
	if sig := newWatcher(ep, "").line(false, unknownModel); sig != (agent.Signal{}) {
		t.Errorf("unknown model = %+v", sig)
	}

	for _, l := range []string{modelText, messageStart} {
		if sig := newWatcher(ep, "").line(false, l); !sig.Progress || sig.Fail != nil || sig.Retry != nil {
			t.Errorf("%s\n= %+v, want Progress", l, sig)
		}
	}
	for _, l := range []string{"", "[claude-code:unrecognized_model] {}", "{not json", `{"type":"system","subtype":"init"}`} {
		if sig := newWatcher(ep, "").line(false, l); sig != (agent.Signal{}) {
			t.Errorf("%q = %+v, want nothing", l, sig)
		}
	}
	if sig := newWatcher(ep, "").line(true, notLoggedIn); sig != (agent.Signal{}) {
		t.Errorf("stderr line = %+v, want nothing (the events are on stdout)", sig)
	}
}

// AG-T4: afterwards, a result event with is_error true after the CLI's
// own API error (or before the model ever answered) is the run's
// *CLIError, of its kind, with the result's text as its message; an error
// result after the model worked (max turns) is not.
func TestAG_T4_StreamFailure(t *testing.T) {
	const ep = "https://api.anthropic.com"
	for _, c := range []struct {
		name, out string
		kind      agent.FailKind
		msg       string
	}{
		{"not logged in", lines(notLoggedIn, notLoggedInRes), agent.FailAuth, "Not logged in · Please run /login"},
		{"invalid key", lines(retry401, invalidKey, invalidKeyRes), agent.FailAuth, "Invalid API key · Fix external API key"},
		{"connection refused", lines(retryConn, connRefused, connRefusedRes), agent.FailEndpoint, "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"},
		{"unknown model", lines(unknownModel, unknownModelRs), agent.FailCLI, "There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it. Run --model to pick a different model."},
		{"startup failure", lines(startupFailure), agent.FailCLI, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"},
		{"killed after the error message", lines(notLoggedIn), agent.FailAuth, "Not logged in · Please run /login"},
	} {
		f := ParseStream(c.out).Failure(ep)
		if f == nil || f.Kind != c.kind || f.Message != c.msg || f.Endpoint != ep {
			t.Errorf("%s: failure = %+v, want %s %q", c.name, f, c.kind, c.msg)
		}
	}
	maxTurns := strings.Replace(stream, `"subtype":"success","is_error":false`, `"subtype":"error_max_turns","is_error":true`, 1)
	for name, out := range map[string]string{"success": stream, "max turns": maxTurns, "stopped": lines(messageStart, modelText)} {
		if f := ParseStream(out).Failure(ep); f != nil {
			t.Errorf("%s: failure = %+v, want none", name, f)
		}
	}
	// A model message after an API error (the CLI recovered) ends it.
	if f := ParseStream(lines(connRefused, modelText)).Failure(ep); f != nil {
		t.Errorf("recovered: failure = %+v", f)
	}
}
