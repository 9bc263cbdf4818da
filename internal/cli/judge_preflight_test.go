package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/convergeloop/converge/internal/exitcode"
)

// TestAG_B1_JudgeAgentTakesEveryBackend: `--judge-agent` names a CLI
// backend like `--agent` does. A backend whose program is missing, or a
// name that is no backend, fails pre-flight with one line (exit 2) before
// any request reaches the forge (AG-T4); a backend that is found gets past
// pre-flight to the forge.
func TestAG_B1_JudgeAgentTakesEveryBackend(t *testing.T) {
	var requests atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "unexpected", http.StatusTeapot)
	}))
	defer api.Close()
	missing := filepath.Join(t.TempDir(), "claude-that-is-not-there")
	// The backends find their program in converge's own environment.
	t.Setenv("CONVERGE_CLAUDE_BIN", missing)
	t.Setenv("CONVERGE_CODEX_BIN", "/bin/sh")
	run := func(args ...string) (exitcode.Code, string) {
		ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": "ghp_preflighttoken0000000000000000000000"})
		code := Run(context.Background(), append([]string{"pr", "https://github.com/acme/widget/pull/1",
			"--api-url", api.URL, "--allow-host-mismatch", "--state", t.TempDir()}, args...), ios)
		return code, out.String() + errOut.String()
	}
	for _, tc := range []struct{ judge, want string }{
		{"claude", "--judge-agent claude: agent CLI \"" + missing + "\" (from CONVERGE_CLAUDE_BIN) cannot be used"},
		{"bogus", `unknown --judge-agent "bogus": use command, or one of claude, codex, gemini, opencode`},
	} {
		code, out := run("--judge-agent", tc.judge)
		if code != exitcode.Usage || strings.Count(out, "\n") != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("--judge-agent %s: exit %d, want %d and one line with %q:\n%s", tc.judge, code, exitcode.Usage, tc.want, out)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the forge before the pre-flight failed", n)
	}
	if code, out := run("--judge-agent", "codex"); strings.Contains(out, "judge-agent") || requests.Load() == 0 {
		t.Errorf("--judge-agent codex with its program found did not get past pre-flight (exit %d, %d requests):\n%q", code, requests.Load(), out)
	}
}
