package opencode

import (
	"slices"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// TestRealOpenCode_JudgeVerdictsParsedAndValidated: the recap judge
// (PR-G2) and the classifier judge (PR-S5) run on the real OpenCode CLI.
// The model reads a file, then answers; each judge parses and validates
// the verdict from the CLI's final message, and no request of the run
// offered the model a tool that edits or runs commands (edit and bash
// denied: a judge edits nothing).
func TestRealOpenCode_JudgeVerdictsParsedAndValidated(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	agenttest.JudgeVerdicts(t, agenttest.JudgeCase{
		Agent: func(t *testing.T, url string) agent.Agent { return newAgent(t, bin, url) },
		Name:  "opencode",
		Read: func(file string) fakemodel.ToolCall {
			return fakemodel.ToolCall{Name: "read", Input: map[string]any{"filePath": file}}
		},
		ReadOnly: func(r fakemodel.Request) string {
			for _, tool := range r.Tools {
				if slices.Contains([]string{"bash", "edit", "write", "patch", "apply_patch"}, tool) {
					return "it is offered " + tool
				}
			}
			return ""
		},
	})
}
