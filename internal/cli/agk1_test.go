//go:build linux

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
)

// AG-K1 end to end: the converge binary runs `converge loop`, and is
// killed by SIGKILL while a process of the run — the agent, or the
// done-check (a build/test run, repo.RunTimeBoxed) — runs under `sh -c`
// with a background writer appending to a file in the repository every
// 100 ms and a child that left for a session of its own (setsid). Two
// seconds after the kill no process of the run is alive, and the files
// do not change after that.

// agk1Bound is SPEC AG-K1's bound: nothing of a run alive 2 s after the
// kill.
const agk1Bound = 2 * time.Second

// agk1Writer is the body of the agent and of the check: it starts the
// writer (appending to writer.log in the repository, its cwd) and the
// setsid escapee (escapee.log), each recording its pid, and waits. Both
// clear proc.OwnerEnv, which hides them from ReapOrphans (REL-2's second
// line, which another converge on this machine may run at any time): the
// supervisor must not need it. %DIR% is a directory outside the
// repository (the agent's environment is scrubbed, so it is named in the
// text).
const agk1Writer = `cat > /dev/null
log=%DIR%
env -u CONVERGE_OWNER sh -c 'echo $$ > "$1/writer.pid"; while :; do date +%s%N >> writer.log; sleep 0.1; done' writer "$log" &
env -u CONVERGE_OWNER setsid sh -c 'echo $$ > "$1/escapee.pid"; while :; do date +%s%N >> escapee.log; sleep 0.1; done' escapee "$log" &
wait
`

// TestAG_K1_KilledConvergeLeavesNothingOfARunAlive: the agent case and
// the done-check case.
func TestAG_K1_KilledConvergeLeavesNothingOfARunAlive(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for _, under := range []string{"agent", "check"} {
		t.Run(under, func(t *testing.T) {
			t.Parallel() // each has its own repository and state
			agk1KillMidRun(t, under)
		})
	}
}

func agk1KillMidRun(t *testing.T, under string) {
	dir, repoDir := t.TempDir(), t.TempDir()
	script := strings.ReplaceAll(agk1Writer, "%DIR%", shellQuote(dir))
	agent := `cat > /dev/null; echo '{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"no","files_changed":[],"reason":"test"}'`
	check := "exit 1"
	if under == "agent" {
		agent = script
	} else {
		check = script
	}
	for name, body := range map[string]string{filepath.Join(dir, "agent.sh"): agent, filepath.Join(repoDir, "check.sh"): check, filepath.Join(repoDir, "todo.txt"): "TODO\n"} {
		if err := os.WriteFile(name, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-c", "user.name=tester", "-c", "user.email=tester@example.com"}, args...)...)
		c.Dir = repoDir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "init")

	// The binary go build makes of cmd/converge, not this test binary
	// standing in for it: its main is what must start the supervisors.
	cmd := exec.Command(buildConverge(t), "loop", "--goal", "no TODO left", "--check", "sh check.sh",
		"--agent-cmd", "sh "+filepath.Join(dir, "agent.sh"), "--max-iterations", "3", uncontainedForPIDs)
	cmd.Dir = repoDir
	cmd.Env = append(cleanEnv(nil), "XDG_STATE_HOME="+t.TempDir())
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	writerLog, escapeeLog := filepath.Join(repoDir, "writer.log"), filepath.Join(repoDir, "escapee.log")
	deadline := time.Now().Add(60 * time.Second)
	for agk1Lines(writerLog) < 3 || agk1Lines(escapeeLog) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the %s's writers never wrote:\n%s", under, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// converge's children (the supervisor), the shells (they carry the
	// owner tag), and the writer and the escapee, which said who they are.
	run := append(agk1ChildrenOf(cmd.Process.Pid), agk1OwnedBy(cmd.Process.Pid)...)
	run = append(run, agk1Named(t, filepath.Join(dir, "writer.pid"), filepath.Join(dir, "escapee.pid"))...)
	t.Cleanup(func() { agk1KillAll(run) })
	if len(run) < 4 {
		t.Fatalf("found %d processes of the run (%v), want the supervisor, the shell, the writer and the escapee:\n%s", len(run), run, out.String())
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = cmd.Wait()
	// Wait out the bound: what is alive at its end fails the test.
	for time.Now().Before(killed.Add(agk1Bound)) && len(agk1Alive(run)) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if left := agk1Alive(run); len(left) > 0 {
		t.Errorf("processes %v of the %s's run are alive %s after converge was killed", left, under, agk1Bound)
	} else {
		t.Logf("the %d processes of the %s's run were gone %s after the kill", len(run), under, time.Since(killed).Round(time.Millisecond))
	}
	if left := agk1Alive(agk1OwnedBy(cmd.Process.Pid)); len(left) > 0 {
		t.Errorf("processes %v started by the killed converge are alive", left)
	}
	// Nothing writes to the repository any more: what the files hold at
	// the bound is what they hold 10 writes later.
	time.Sleep(time.Until(killed.Add(agk1Bound)))
	atBound := [][]byte{agk1Read(t, writerLog), agk1Read(t, escapeeLog)}
	time.Sleep(time.Second)
	for i, f := range []string{writerLog, escapeeLog} {
		if now := agk1Read(t, f); !bytes.Equal(now, atBound[i]) {
			t.Errorf("%s changed after converge was killed (+%d bytes more than %s after the kill)", filepath.Base(f), len(now)-len(atBound[i]), agk1Bound)
		}
	}
}

// ownedBy lists the live processes whose OwnerEnv names the converge
// with pid: every process a Run of it started carries it.
func agk1OwnedBy(pid int) []agk1Proc {
	prefix := []byte(proc.OwnerEnv + "=" + strconv.Itoa(pid) + ".")
	var out []agk1Proc
	for _, p := range proc.Processes() {
		if p.Zombie {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, prefix) {
				out = append(out, agk1Proc{p.PID, p.Start})
				break
			}
		}
	}
	return out
}

// agk1ChildrenOf lists the live children of pid.
func agk1ChildrenOf(pid int) []agk1Proc {
	var out []agk1Proc
	for _, p := range proc.Processes() {
		if p.PPID == pid && !p.Zombie {
			out = append(out, agk1Proc{p.PID, p.Start})
		}
	}
	return out
}

// agk1Named is the live processes whose pids files hold.
func agk1Named(t *testing.T, files ...string) []agk1Proc {
	t.Helper()
	now := map[int]proc.Process{}
	for _, p := range proc.Processes() {
		now[p.PID] = p
	}
	var out []agk1Proc
	for _, f := range files {
		pid, err := strconv.Atoi(strings.TrimSpace(string(agk1Read(t, f))))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p, ok := now[pid]
		if !ok || p.Zombie {
			t.Fatalf("the process %d of %s is not running", pid, filepath.Base(f))
		}
		out = append(out, agk1Proc{pid, p.Start})
	}
	return out
}

// agk1Proc is one process ever: its pid and start time.
type agk1Proc struct {
	pid   int
	start uint64
}

// agk1Alive lists the processes of ps still running (not zombies): a pid
// taken since by another process does not count.
func agk1Alive(ps []agk1Proc) []int {
	now := map[int]proc.Process{}
	for _, p := range proc.Processes() {
		now[p.PID] = p
	}
	var out []int
	for _, p := range ps {
		if q, ok := now[p.pid]; ok && q.Start == p.start && !q.Zombie {
			out = append(out, p.pid)
		}
	}
	return out
}

// agk1KillAll ends what a failing test left.
func agk1KillAll(ps []agk1Proc) {
	for _, pid := range agk1Alive(ps) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

func agk1Lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}

func agk1Read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
