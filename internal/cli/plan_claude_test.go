package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/agent/claude"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// TestPLAN_1_RealClaudeCodeImplementsAndReviews: `converge plan run
// --agent claude --review-agent claude` drives the real Claude Code CLI
// (against fakemodel) as the implementer, which edits the task's file
// through a real tool call, and as the reviewer, which is given the
// task's diff — not the implementer's report — and answers the review
// schema; the task is committed and DONE.
func TestPLAN_1_RealClaudeCodeImplementsAndReviews(t *testing.T) {
	bin := agenttest.RealCLI(t, claude.BinaryEnv, "claude", "@anthropic-ai/claude-code")
	t.Parallel()
	dir := agenttest.Repo(t, map[string]string{"greet.txt": "hello world\n"})
	for _, args := range [][]string{{"add", "."}, {"commit", "-qm", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(planFile, []byte("groups:\n  - tasks:\n      - id: greet\n        prompt: Make greet.txt greet converge instead of the world.\n        files: [greet.txt]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "greet.txt")
	status, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "IMPLEMENTER-SUMMARY greeting changed", "files_changed": []string{"greet.txt"}, "implementer_status": "DONE"})
	review, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "the greeting is right", "files_changed": []string{}, "approved": true,
		"issues": []map[string]any{{"severity": "minor", "summary": "a trailing newline would be nice", "file": "greet.txt"}}})
	srv, url := agenttest.Serve(t,
		fakemodel.Script{Match: "You are the implementer of task greet", Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": file}}}},
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": file, "old_string": "hello world", "new_string": "hello converge"}}}},
			{Text: "Done.\n" + string(status)},
		}},
		fakemodel.Script{Match: "You review task greet", Turns: []fakemodel.Turn{{Text: "Reviewed.\n" + string(review)}}},
	)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "converge", "plan", "run", planFile, "--agent", "claude", "--review-agent", "claude", "--json", "--state", t.TempDir(),
		// fakemodel scripts the tasks and reviews; the pre-flight request
		// is no script's (the check is tested apart).
		"--no-agent-check")
	cmd.Dir = dir
	cmd.Env = cleanEnv(map[string]string{
		"CONVERGE_CLAUDE_BIN": bin,
		"ANTHROPIC_BASE_URL":  url,
		"ANTHROPIC_API_KEY":   "sk-ant-fakemodel",
		"ANTHROPIC_MODEL":     "claude-fakemodel",
		"HOME":                t.TempDir(),
	})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("converge plan run: %v\n%s%s", err, out, stderr.Bytes())
	}
	assertEvents(t, string(out))
	for _, want := range []string{`"status":"complete","exit_code":0`, `"id":"greet","group":"group-1","status":"DONE"`, `"issues":[{"severity":"minor","summary":"a trailing newline would be nice","file":"greet.txt"}]`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the result lacks %s:\n%s", want, out)
		}
	}
	agenttest.CheckWire(t, srv)
	sawDiff := false
	for _, r := range srv.Requests() {
		body := string(r.Body)
		if r.Script == 1 && strings.Contains(body, "IMPLEMENTER-SUMMARY") {
			t.Error("the reviewer was given the implementer's report")
		}
		if r.Script == 1 && strings.Contains(body, "+hello converge") {
			sawDiff = true
		}
	}
	if !sawDiff {
		t.Error("no request of the reviewer carried the task's diff")
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "hello converge\n" {
		t.Fatalf("greet.txt = %q, %v", got, err)
	}
	if log, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%B").Output(); err != nil || !strings.Contains(string(log), "Converge-Task:") {
		t.Fatalf("the task was not committed: %q, %v", log, err)
	}
}
