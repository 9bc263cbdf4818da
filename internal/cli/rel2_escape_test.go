package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// timeboxEscape is a hostile fixer that escapes AG-K1: it starts a child,
// then SIGKILLs its own supervisor (the ancestor converge re-executed to
// watch the run), so nothing kills that child when converge dies. The
// child keeps the owner tag every subprocess carries: the second line,
// reaping at the next claim (REL-2), is what remains.
const timeboxEscape = timeboxHead + `sleep 1000 &
echo "$n $$ $! $(awk '{print $5}' /proc/$$/stat) $(date +%s%N)" >> "$log/attempts"
p=$$
while [ "$p" -gt 1 ]; do
  if tr '\0' ' ' < /proc/$p/cmdline | grep -q __supervise; then
    echo "$p" >> "$log/supervisors"
    kill -9 "$p"
    break
  fi
  p=$(awk '{print $4}' /proc/$p/stat)
done
while :; do sleep 1; done
`

// TestREL2_AgentThatKillsItsSupervisorIsReapedAtTheNextClaim: a fixer
// kills its supervisor, so its child outlives the SIGKILLed converge;
// the next converge that claims the run kills it (REL-2's second line
// behind AG-K1).
func TestREL2_AgentThatKillsItsSupervisorIsReapedAtTheNextClaim(t *testing.T) {
	// Not parallel: every converge that claims a run reaps every orphan
	// of a dead converge (REL-2), so a claim by another test of this
	// package would reap the escaped child before the rerun does.
	hub, demo := startHub(t, 100*time.Millisecond)
	r := &timeboxRun{dir: t.TempDir(), prURL: demo.PRURL, hub: hub}
	t.Cleanup(r.killLeftovers)
	escape := filepath.Join(r.dir, "agent.sh")
	giveUp := filepath.Join(r.dir, "give-up.sh")
	for path, script := range map[string]string{
		escape: strings.ReplaceAll(timeboxEscape, "%DIR%", shellQuote(r.dir)),
		giveUp: "#!/bin/sh\ncat >/dev/null\n" + `echo '{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"gave up","files_changed":[],"reason":"gave up at once"}'` + "\n",
	} {
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	args := func(agentCmd string) []string {
		return append(prArgs(hub, demo, state), "--agent", "command", "--agent-cmd", agentCmd,
			"--review-agent", "suggest", "--agent-timeout", "5m")
	}
	cmd := exec.Command("converge", args(escape)...)
	cmd.Env = cleanEnv(authorEnv(hub))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the first attempt has killed its supervisor.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(r.dir, "supervisors")); err == nil && strings.Count(string(b), "\n") > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the fixer never found its supervisor:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	a := r.attempts(t)[0]
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !live(a.child) {
		// Some converge's claim reaped it already: REL-2 at work, but
		// not this rerun's (another package's tests claim runs too).
		// Isolated (`-run`, as `make mutants` runs it) this does not
		// happen, and without reaping the child lives on.
		t.Skipf("the escaped child %d was reaped before the rerun, by another converge's claim", a.child)
	}
	_, rerun := runBin(t, authorEnv(hub), args(giveUp)...)
	if live(a.child) {
		t.Errorf("the escaped child %d outlived the rerun's claim:\nkilled run:\n%s\nrerun:\n%s", a.child, out.String(), rerun)
	}
}
