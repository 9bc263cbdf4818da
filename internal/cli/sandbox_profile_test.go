package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
)

// TestREL_4_SandboxCopilotProfile: `converge sandbox --copilot-profile
// real` paces the scripted Copilot as github.com does (fakehub's real
// profile); the default stays fast; an unknown profile, or real on the
// GitLab sandbox (no Copilot), is a usage error; the help says so.
func TestREL_4_SandboxCopilotProfile(t *testing.T) {
	testFlags(t, newSandboxCmd, []flagCase[sandboxOptions]{
		{check: func(o *sandboxOptions) bool { return o.CopilotProfile == "" }},
		{args: []string{"--copilot-profile", "real"}, check: func(o *sandboxOptions) bool { return o.CopilotProfile == fakehub.CopilotProfileReal }},
		{args: []string{"--copilot-profile", "Fast"}, check: func(o *sandboxOptions) bool { return o.CopilotProfile == fakehub.CopilotProfileFast }},
		usage[sandboxOptions](`unknown Copilot profile "slow": want fast or real`, "--copilot-profile", "slow"),
	})
	ios, _, _ := testIO(nil)
	err := runSandbox(context.Background(), ios, &sandboxOptions{Forge: forge.GitLab, Addr: "127.0.0.1:0", CopilotProfile: fakehub.CopilotProfileReal})
	var ee *cmdutil.ExitErr
	if !errors.As(err, &ee) || ee.Code != exitcode.Usage || !strings.Contains(err.Error(), "--copilot-profile real") {
		t.Errorf("real profile on the GitLab sandbox: %v, want a usage error", err)
	}
	cmd := newSandboxCmd(noFactory(t), func(*sandboxOptions) error { return nil })
	if !strings.Contains(cmd.Long, "--copilot-profile real") || !strings.Contains(cmd.Long, "30 seconds") || !strings.Contains(cmd.Long, "2 minutes") {
		t.Errorf("the sandbox's help does not document --copilot-profile:\n%s", cmd.Long)
	}
}
