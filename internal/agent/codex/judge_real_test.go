package codex

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// TestRealCodex_JudgeVerdictsParsedAndValidated: the recap judge (PR-G2)
// and the classifier judge (PR-S5) run on the real Codex CLI. The model
// reads a file through the shell, then answers; each judge parses and
// validates the verdict from the CLI's final message, and every request
// of the run carried the read-only sandbox's instructions (-s read-only:
// a judge edits nothing).
func TestRealCodex_JudgeVerdictsParsedAndValidated(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	agenttest.JudgeVerdicts(t, agenttest.JudgeCase{
		Agent: func(t *testing.T, url string) agent.Agent { return newAgent(t, bin, url) },
		Name:  "codex",
		Read:  func(string) fakemodel.ToolCall { return fakemodel.ToolCall{Shell: "cat a.go"} },
		ReadOnly: func(r fakemodel.Request) string {
			body := string(r.Body)
			if !strings.Contains(body, "`sandbox_mode` is `read-only`") {
				return "its sandbox instructions are not read-only"
			}
			for _, mode := range []string{"workspace-write", "danger-full-access"} {
				if strings.Contains(body, "`sandbox_mode` is `"+mode+"`") {
					return "its sandbox instructions say " + mode
				}
			}
			return ""
		},
	})
}
