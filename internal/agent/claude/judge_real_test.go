package claude

import (
	"fmt"
	"slices"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// TestRealClaude_JudgeVerdictsParsedAndValidated: the recap judge (PR-G2)
// and the classifier judge (PR-S5) run on the real Claude Code CLI. The
// model reads a file, then answers; each judge parses and validates the
// verdict from the CLI's final message, and the model was offered only
// the read-only tools (a judge edits nothing).
func TestRealClaude_JudgeVerdictsParsedAndValidated(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	agenttest.JudgeVerdicts(t, agenttest.JudgeCase{
		Agent: func(t *testing.T, url string) agent.Agent { return newAgent(t, bin, url) },
		Name:  "claude",
		Read: func(file string) fakemodel.ToolCall {
			return fakemodel.ToolCall{Name: "Read", Input: map[string]any{"file_path": file}}
		},
		ReadOnly: readOnlyTools,
	})
}

// readOnlyTools says what is wrong unless the request offered the model
// the ReviewTools and none of the fix run's other tools (edits, the
// shell). Claude Code may add tools of its own making (a placeholder for
// deferred tools), which change nothing.
func readOnlyTools(r fakemodel.Request) string {
	for _, tool := range DefaultTools {
		if slices.Contains(r.Tools, tool) != slices.Contains(ReviewTools, tool) {
			return fmt.Sprintf("the model was offered tools %v: want %v, and none of the rest of %v", r.Tools, ReviewTools, DefaultTools)
		}
	}
	return ""
}
