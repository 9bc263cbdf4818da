package gemini

import (
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

func TestArgsAndEnv(t *testing.T) {
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: "/bin/sh", Model: "gemini-x", ExtraArgs: []string{"--sandbox"},
		Environ: func() []string {
			return []string{"PATH=/bin", "HOME=/h", "GH_TOKEN=ghp_x", "GEMINI_API_KEY=k", "OPENAI_API_KEY=o"}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/sh", "-o", "stream-json", "--approval-mode", "yolo", "--skip-trust", "-m", "gemini-x", "--sandbox", "-p", prompt}
	if got := a.Args(agent.Task{}); !slices.Equal(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
	if got := a.Args(agent.Task{Kind: agent.TaskKindReview}); got[4] != "plan" {
		t.Errorf("review argv %q", got)
	}
	// A fix run names its session; the summary turn at the budget
	// (AG-T1) resumes it in plan mode.
	want = []string{"/bin/sh", "-o", "stream-json", "--approval-mode", "yolo", "--skip-trust", "--session-id", "sid-1", "-m", "gemini-x", "--sandbox", "-p", prompt}
	if got := a.SessionArgs(agent.Task{}, "sid-1"); !slices.Equal(got, want) {
		t.Errorf("session argv %q, want %q", got, want)
	}
	want = []string{"/bin/sh", "-o", "stream-json", "--approval-mode", "plan", "--skip-trust", "--resume", "sid-1", "-m", "gemini-x", "--sandbox", "-p", prompt}
	if got := a.ResumeArgs(agent.Task{}, "sid-1"); !slices.Equal(got, want) {
		t.Errorf("summary argv %q, want %q", got, want)
	}
	env := a.Env(agent.Task{})
	if !slices.Contains(env, "GEMINI_API_KEY=k") || slices.Contains(env, "GH_TOKEN=ghp_x") || slices.Contains(env, "OPENAI_API_KEY=o") {
		t.Errorf("env = %q", env)
	}
}

// Events as Gemini CLI 0.61 prints them, cut to the fields read.
const events = `{"type":"init","session_id":"s","model":"m"}
{"type":"message","role":"user","content":"do it"}
{"type":"message","role":"assistant","content":"Let me look.","delta":true}
{"type":"tool_use","tool_name":"read_file","tool_id":"read_file__c1","parameters":{"file_path":"/w/a"}}
{"type":"tool_result","tool_id":"read_file__c1","status":"success","output":""}
{"type":"message","role":"assistant","content":"Done.\n{\"status\":\"complete\",\"next_action\":\"\",","delta":true}
{"type":"message","role":"assistant","content":"\"needs_extension_minutes\":0,\"summary\":\"s\",\"files_changed\":[\"a\"]}","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":170,"input_tokens":150,"output_tokens":20,"cached":50,"input":100,"duration_ms":9,"tool_calls":1}}
`

func TestParseEvents(t *testing.T) {
	e := ParseEvents(events)
	if rec := e.Record(); rec.Status != agent.StatusComplete || rec.Summary != "s" {
		t.Errorf("record = %+v (final %q)", rec, e.Final)
	}
	if e.Usage != (agent.Usage{InputTokens: 100, CacheReadTokens: 50, OutputTokens: 20}) || !slices.Equal(e.Tools, []string{"read_file"}) {
		t.Errorf("events = %+v", e)
	}
	failed := `{"type":"init"}
{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: 404]"},"stats":{}}
`
	rec := ParseEvents(failed).Record()
	if rec.Reason != agent.ReasonUnparseable || !strings.Contains(rec.Summary, "API Error: 404") {
		t.Errorf("failed record = %+v", rec)
	}
	// A valid record in a run Gemini CLI calls failed keeps a concern.
	errored := strings.Replace(events, `"status":"success","stats"`, `"status":"error","stats"`, 1)
	if rec := ParseEvents(errored).Record(); rec.Status != agent.StatusComplete || !slices.Contains(rec.Concerns, "gemini reported status error") {
		t.Errorf("errored record = %+v", rec)
	}
}
