package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/convergeloop/converge/internal/exitcode"
)

// TestAG_T4_MissingAgentProgramFailsPreflight: `converge pr` with an
// --agent-cmd whose program does not exist exits 2 with one line naming
// the program and the fix, before any request reaches the forge and
// before a run is recorded.
func TestAG_T4_MissingAgentProgramFailsPreflight(t *testing.T) {
	var requests atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "unexpected", http.StatusTeapot)
	}))
	defer api.Close()
	missing := filepath.Join(t.TempDir(), "fixer-that-is-not-there")
	for _, tc := range []struct {
		name, cmdline, want string
	}{
		{"path", missing + " --fix", `agent program "` + missing + `" not found`},
		{"PATH lookup after env assignments", "MODEL=x no-such-fixer-xyz --fix", `agent program "no-such-fixer-xyz" not found in PATH; install it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": "ghp_preflighttoken0000000000000000000000"})
			code := Run(context.Background(), []string{"pr", "https://github.com/acme/widget/pull/1",
				"--api-url", api.URL, "--state", state, "--agent", "command", "--agent-cmd", tc.cmdline}, ios)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d\nstdout:%s\nstderr:%s", code, exitcode.Usage, out, errOut)
			}
			msg := errOut.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "--agent-cmd") {
				t.Errorf("stderr %q, want one line with %q", msg, tc.want)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests reached the forge before the pre-flight failed", n)
			}
			if _, err := os.Stat(filepath.Join(state, "converge.db")); err == nil {
				t.Error("a run was recorded")
			}
		})
	}
}

// TestAG_T5_TimeBoxFlagsMustBePositive: a zero or negative time-box is
// bad input, not "no limit".
func TestAG_T5_TimeBoxFlagsMustBePositive(t *testing.T) {
	for _, flag := range []string{"--agent-timeout", "--test-timeout"} {
		ios, out, errOut := testIO(nil)
		code := Run(context.Background(), []string{"pr", "https://github.com/acme/widget/pull/1", flag, "0s"}, ios)
		if code != exitcode.Usage || !strings.Contains(errOut.String(), "0s is below the minimum 1s") {
			t.Errorf("%s 0s: exit %d\nstdout:%s\nstderr:%s", flag, code, out, errOut)
		}
	}
}
