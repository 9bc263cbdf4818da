package gemini

import (
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// TestRealGemini_JudgeVerdictsParsedAndValidated: the recap judge (PR-G2)
// and the classifier judge (PR-S5) run on the real Gemini CLI. The model
// reads a file, then answers; each judge parses and validates the verdict
// from the CLI's final message, and every request of the run was in plan
// mode (--approval-mode plan: a judge edits nothing).
func TestRealGemini_JudgeVerdictsParsedAndValidated(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	agenttest.JudgeVerdicts(t, agenttest.JudgeCase{
		Agent: func(t *testing.T, url string) agent.Agent { return newAgent(t, bin, url) },
		Name:  "gemini",
		Read: func(file string) fakemodel.ToolCall {
			return fakemodel.ToolCall{Name: "read_file", Input: map[string]any{"file_path": file}}
		},
		ReadOnly: func(r fakemodel.Request) string {
			// Plan mode offers no shell; its write tools may write only
			// plans under Gemini CLI's own directory (its plan policy).
			if slices.Contains(r.Tools, "run_shell_command") || !slices.Contains(r.Tools, "exit_plan_mode") {
				return "it is not in plan mode: " + strings.Join(r.Tools, ",")
			}
			return ""
		},
	})
}
