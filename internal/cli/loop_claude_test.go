package cli

import (
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

// TestLOOP_1_RealClaudeCodeIsALoopBody: `converge loop --agent claude`
// drives the real Claude Code CLI (against fakemodel) as an iteration:
// it gets the iteration's rendered prompt with the goal, edits the file
// through a real tool call, and the loop's own check — not the agent's
// claim — ends the run complete.
func TestLOOP_1_RealClaudeCodeIsALoopBody(t *testing.T) {
	bin := agenttest.RealCLI(t, claude.BinaryEnv, "claude", "@anthropic-ai/claude-code")
	t.Parallel()
	dir := agenttest.Repo(t, map[string]string{
		"greet.txt": "hello world\n",
		"check.sh":  "grep -q 'hello converge' greet.txt\n",
	})
	for _, args := range [][]string{{"add", "."}, {"commit", "-qm", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	file := filepath.Join(dir, "greet.txt")
	status, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "greeting changed", "files_changed": []string{"greet.txt"}})
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "greet converge instead of the world", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": file}}}},
		{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": file, "old_string": "hello world", "new_string": "hello converge"}}}},
		{Text: "Done.\n" + string(status)},
	}})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "converge", "loop", "--goal", "greet converge instead of the world",
		"--check", "sh check.sh", "--agent", "claude", "--max-iterations", "2", "--state", t.TempDir(),
		// fakemodel scripts the iterations; the pre-flight request is no
		// script's (the check is tested apart).
		"--no-agent-check")
	cmd.Dir = dir
	cmd.Env = cleanEnv(map[string]string{
		"CONVERGE_CLAUDE_BIN": bin,
		"ANTHROPIC_BASE_URL":  url,
		"ANTHROPIC_API_KEY":   "sk-ant-fakemodel",
		"ANTHROPIC_MODEL":     "claude-fakemodel",
		"HOME":                t.TempDir(),
	})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("converge loop: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "converge loop: complete (exit 0)") {
		t.Fatalf("not complete:\n%s", out)
	}
	agenttest.CheckWire(t, srv)
	// The agent was given the iteration's own prompt, not a fixer's.
	prompted := false
	for _, r := range srv.Requests() {
		if r.Script >= 0 && strings.Contains(string(r.Body), "You are one iteration") {
			prompted = true
		}
	}
	if !prompted {
		t.Fatal("no request to the model carried the iteration prompt")
	}
	got, err := os.ReadFile(file)
	if err != nil || string(got) != "hello converge\n" {
		t.Fatalf("greet.txt = %q, %v", got, err)
	}
	if log, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%B").Output(); err != nil || !strings.Contains(string(log), "Converge-Loop:") {
		t.Fatalf("the loop did not commit the iteration: %q, %v", log, err)
	}
}
