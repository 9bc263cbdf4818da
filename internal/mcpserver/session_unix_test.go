//go:build unix

package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPR_G5_MCPSessionSignalsDoNotStopItsRuns: a run converge mcp started
// is not the session's: Ctrl-C on the terminal of the client (SIGINT to
// the process group converge mcp runs in) ends converge mcp, but not the
// run, which was started in a session of its own; it goes on and
// completes once its agent is let go.
func TestPR_G5_MCPSessionSignalsDoNotStopItsRuns(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	repo := gitRepo(t, map[string]string{"README": "a repository\n"})
	plan, hold, impl, review := heldPlan(t, work)
	state := filepath.Join(work, "state")
	ctx := context.Background()
	cmd := exec.Command(buildConverge(t), "mcp", "--state", state)
	// A group of its own, as a terminal's foreground job: the test can
	// signal it without signalling itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var out started
	call(t, cs, "start_plan", map[string]any{"workdir": repo, "plan": plan, "agent_cmd": "sh " + impl, "review_agent_cmd": "sh " + review}, &out)
	stopOnCleanup(t, out.PID)
	if len(out.Runs) != 1 {
		t.Fatalf("start_plan: %+v", out)
	}
	waitFor(t, "the implementer starts", func() bool {
		_, err := os.Stat(filepath.Join(work, "started"))
		return err == nil
	})
	must(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	_ = cs.Wait() // converge mcp ended with the session

	must(t, os.Remove(hold))
	r := ended(t, session(t, state, nil, ""), out.Runs[0].ID)
	if r.Status != "complete" || *r.ExitCode != 0 {
		b, _ := os.ReadFile(out.Output)
		t.Fatalf("the run ended %s (exit %d), want complete: the session's signal reached it\n%s", r.Status, *r.ExitCode, b)
	}
	if got := git(t, repo, "show", "HEAD:a.txt"); got != "a\n" {
		t.Errorf("a.txt at the head: %q", got)
	}
}
