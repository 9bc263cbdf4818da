package opencode

import (
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// Lines as OpenCode 1.18.33 prints them (recorded against fakemodel).
const (
	line401     = `{"type":"error","timestamp":1796147288396,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"fakemodel refuses: invalid x-api-key","statusCode":401,"isRetryable":false,"responseHeaders":{"content-type":"application/json"},"responseBody":"{}","metadata":{"url":"http://127.0.0.1:37029/v1/messages"}}}}`
	lineNoKey   = `{"type":"error","timestamp":1796147526061,"sessionID":"ses_1","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"Anthropic API key is missing. Pass it using the 'apiKey' parameter or the ANTHROPIC_API_KEY environment variable."}}}`
	line503     = `{"type":"error","timestamp":1,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Service Unavailable","statusCode":503,"isRetryable":true,"metadata":{"url":"http://127.0.0.1:9/v1/messages"}}}}`
	lineUnknown = `{"type":"error","timestamp":1796147532014,"sessionID":"ses_1","error":{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details.","ref":"err_0f416724"}}}`
	lineAborted = `{"type":"error","timestamp":1,"sessionID":"ses_1","error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}`
	lineStep    = `{"type":"step_start","timestamp":1796147282758,"sessionID":"ses_1","part":{"type":"step-start"}}`

	logRefused = `timestamp=2026-12-01T17:49:16.650Z level=ERROR run=ed1f3a85 message="stream error" providerID=anthropic modelID=claude-sonnet-4-5 session.id=ses_1 small=false agent=build mode=primary error.error="AI_APICallError: Cannot connect to API: Unable to connect. Is the computer able to access the url? (cause: Error: Unable to connect. Is the computer able to access the url?)"`
	logTitle   = `timestamp=2026-12-01T17:49:22.107Z level=ERROR run=ed1f3a85 message="stream error" providerID=anthropic modelID=claude-haiku-4-5-20251001 session.id=ses_1 small=true agent=title mode=primary error.error="AI_RetryError: Failed after 3 attempts. Last error: Cannot connect to API"`
	logNoKey   = `timestamp=2026-12-01T17:52:06.037Z level=ERROR run=878be65a message="stream error" providerID=anthropic modelID=claude-sonnet-4-6 session.id=ses_1 small=false agent=build mode=primary error.error="AI_LoadAPIKeyError: Anthropic API key is missing. Pass it using the 'apiKey' parameter or the ANTHROPIC_API_KEY environment variable."`
	logFailed  = `timestamp=2026-12-01T17:52:12.013Z level=ERROR run=7cb6b644 message=failed ref=err_0f416724 error="ProviderModelNotFoundError: Model not found: nope/x. Did you mean: standardcompute?" cause="ProviderModelNotFoundError: Model not found: nope/x.\n    at <anonymous> (/$bunfs/root/chunk-dn9bw1yz.js:439:94416)"`
	logWarn    = `timestamp=2026-12-01T17:52:36.902Z level=WARN run=a5ca609f message="background dependency install failed" dir=/h/.config/opencode error="Cause([Fail(NpmInstallFailedError)])"`
)

func testWatcher() *watcher {
	return newWatcher(func(p string) string { return "https://" + p + ".example/v1" })
}

// TestAG_T4_WatchReadsOpenCodesErrorsAsTheyCome: an error event of a
// rejected or missing key stops the run at once with OpenCode's message;
// a logged failed model request (not the title's) is a retry naming the
// provider's endpoint; a step is progress; other lines say nothing.
func TestAG_T4_WatchReadsOpenCodesErrorsAsTheyCome(t *testing.T) {
	w := testWatcher()
	cases := []struct {
		name   string
		stderr bool
		line   string
		want   agent.Signal
	}{
		{"401", false, line401, agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth,
			Message: "fakemodel refuses: invalid x-api-key", Endpoint: "http://127.0.0.1:37029/v1/messages"}}},
		{"no key event", false, lineNoKey, agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth,
			Message: "Anthropic API key is missing. Pass it using the 'apiKey' parameter or the ANTHROPIC_API_KEY environment variable."}}},
		{"no key log", true, logNoKey, agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth,
			Message: "Anthropic API key is missing. Pass it using the 'apiKey' parameter or the ANTHROPIC_API_KEY environment variable."}}},
		{"retried", true, logRefused, agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint,
			Message:  "Cannot connect to API: Unable to connect. Is the computer able to access the url? (cause: Error: Unable to connect. Is the computer able to access the url?)",
			Endpoint: "https://anthropic.example/v1"}}},
		{"title request", true, logTitle, agent.Signal{}},
		{"503 event", false, line503, agent.Signal{}},
		{"unknown event", false, lineUnknown, agent.Signal{}},
		{"step", false, lineStep, agent.Signal{Progress: true}},
		{"warning", true, logWarn, agent.Signal{}},
		{"not json", false, "{not json", agent.Signal{}},
	}
	for _, c := range cases {
		got := w.line(c.stderr, c.line)
		if !sameSignal(got, c.want) {
			t.Errorf("%s: signal %s, want %s", c.name, show(got), show(c.want))
		}
	}
}

func sameSignal(a, b agent.Signal) bool {
	same := func(x, y *agent.CLIError) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Progress == b.Progress && same(a.Retry, b.Retry) && same(a.Fail, b.Fail)
}

func show(s agent.Signal) string {
	switch {
	case s.Fail != nil:
		return "Fail " + string(s.Fail.Kind) + " " + s.Fail.Message + " @" + s.Fail.Endpoint
	case s.Retry != nil:
		return "Retry " + string(s.Retry.Kind) + " " + s.Retry.Message + " @" + s.Retry.Endpoint
	case s.Progress:
		return "Progress"
	}
	return "nothing"
}

// TestAG_T4_FailureAfterwardsIsTheErrorEvent: read afterwards, an error
// event is the run's error of its kind — a 503 names its URL, an
// UnknownError quotes the error its log gave for the ref — and a run
// stopped by an abort reports none.
func TestAG_T4_FailureAfterwardsIsTheErrorEvent(t *testing.T) {
	w := testWatcher()
	w.line(true, logFailed)
	cases := []struct {
		out  string
		want *agent.CLIError
	}{
		{lineStep + "\n" + line401, &agent.CLIError{Kind: agent.FailAuth, Message: "fakemodel refuses: invalid x-api-key", Endpoint: "http://127.0.0.1:37029/v1/messages"}},
		{line503, &agent.CLIError{Kind: agent.FailEndpoint, Message: "Service Unavailable", Endpoint: "http://127.0.0.1:9/v1/messages"}},
		{lineUnknown, &agent.CLIError{Kind: agent.FailCLI, Message: "Model not found: nope/x. Did you mean: standardcompute?"}},
		{lineAborted, nil},
		{lineStep, nil},
	}
	for _, c := range cases {
		got := w.failure(ParseEvents(c.out))
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("failure of %.60s… = %+v, want %+v", c.out, got, c.want)
		}
	}
	// A ProviderAuthError names no URL; a retryable one without a URL is
	// the provider's endpoint.
	got := w.cliError(ErrorInfo{Name: "APIError", Message: "overloaded", StatusCode: 529, Provider: "anthropic"})
	if got.Kind != agent.FailEndpoint || got.Endpoint != "https://anthropic.example/v1" {
		t.Errorf("529 = %+v", got)
	}
}

func TestLogfmt(t *testing.T) {
	f := logfmt(logFailed)
	if f["level"] != "ERROR" || f["message"] != "failed" || f["ref"] != "err_0f416724" ||
		f["error"] != "ProviderModelNotFoundError: Model not found: nope/x. Did you mean: standardcompute?" ||
		f["cause"] != "ProviderModelNotFoundError: Model not found: nope/x.\n    at <anonymous> (/$bunfs/root/chunk-dn9bw1yz.js:439:94416)" {
		t.Errorf("logfmt = %q", f)
	}
	if f := logfmt(`a=1 b="x \"y\" z" c=`); f["a"] != "1" || f["b"] != `x "y" z` || f["c"] != "" {
		t.Errorf("logfmt = %q", f)
	}
}
