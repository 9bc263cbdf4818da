//go:build unix

package prwork

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
)

// killChildEnv carries, to the child process of
// TestREL2_KilledRoundLeavesWorktreesTheNextClaimSweeps, the PR, its bare
// repository, the state directory and the fixer's start marker.
const killChildEnv = "CONVERGE_TEST_KILLED_ROUND"

type killedRound struct {
	PR     *forge.PullRequest
	Bare   string
	Root   string
	Marker string
}

// TestREL2_KilledRoundChild is the process the test kills: it runs a
// round whose fixer marks its start and then hangs.
func TestREL2_KilledRoundChild(t *testing.T) {
	spec := os.Getenv(killChildEnv)
	if spec == "" {
		t.Skip("the child of TestREL2_KilledRoundLeavesWorktreesTheNextClaimSweeps")
	}
	var k killedRound
	if err := json.Unmarshal([]byte(spec), &k); err != nil {
		t.Fatal(err)
	}
	a := commandAgent(t, `cat >/dev/null; echo fixing >> a.txt; echo $$ > `+k.Marker+`.tmp; mv `+k.Marker+`.tmp `+k.Marker+`; exec sleep 120`, 0)
	ws := testWorkspace(t, k.Bare, a, "")
	ws.Root, ws.RunID = k.Root, "r-killed"
	_, err := ws.Fix(context.Background(), k.PR, 1, []prloop.Finding{{ID: "TA", ThreadID: "TA", Path: "a.txt", EndLine: 2, Summary: "fix a"}})
	t.Fatalf("the round ended (%v); it should have been killed", err)
}

// killRound runs a round in a child process on the state directory root
// and SIGKILLs it while its fixer works, with the fixer.
func killRound(t *testing.T, pr *forge.PullRequest, bare, root string) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "fixer-started")
	spec, _ := json.Marshal(killedRound{PR: pr, Bare: bare, Root: root, Marker: marker})
	cmd := exec.Command(os.Args[0], "-test.run=^TestREL2_KilledRoundChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+string(spec))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		if b, err := os.ReadFile(marker); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				defer syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the child ended before its fixer started: %v", err)
		case <-deadline:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatal("the child's fixer never started")
		case <-time.After(10 * time.Millisecond):
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// TestREL2_KilledRoundLeavesWorktreesTheNextClaimSweeps: a converge
// SIGKILLed mid-round leaves the run's worktree, its fixers' worktrees
// and its registration with the cached clone. The run's next claim
// (resumed, the same run) removes them and makes its worktree anew, and
// its end leaves nothing; a new run (--fresh) of the repository sweeps
// what the dead process's run left too, so its end leaves nothing either.
func TestREL2_KilledRoundLeavesWorktreesTheNextClaimSweeps(t *testing.T) {
	finding := []prloop.Finding{{ID: "TA", ThreadID: "TA", Path: "a.txt", EndLine: 2, Summary: "fix a"}}
	for _, runID := range []string{"r-killed", "r-fresh"} {
		t.Run(runID, func(t *testing.T) {
			pr, bare := localPR(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "a\nA\n"})
			root := t.TempDir()
			killRound(t, pr, bare, root)
			wt := filepath.Join(root, "worktrees", "r-killed")
			fixers, _ := filepath.Glob(filepath.Join(root, "worktrees", "r-killed.fixers", "task-*"))
			if _, err := os.Stat(wt); err != nil || len(fixers) == 0 {
				t.Fatalf("the killed round left no worktree (%v) or no fixer worktree (%v): nothing to sweep", err, fixers)
			}

			a := commandAgent(t, `cat >/dev/null; echo fixed >> a.txt; echo '`+okRecord+`'`, 0)
			ws := testWorkspace(t, bare, a, "")
			ws.Root, ws.RunID = root, runID
			if _, err := ws.Prepare(context.Background(), pr); err != nil {
				t.Fatal(err)
			}
			res, err := ws.Fix(context.Background(), pr, 1, finding)
			if err != nil || len(res.Addressed) != 1 || res.CommitSHA == "" {
				t.Fatalf("the next claim's round: %+v, %v", res, err)
			}
			if b, err := os.ReadFile(filepath.Join(ws.worktree.Dir, "a.txt")); err != nil || strings.Contains(string(b), "fixing") {
				t.Fatalf("the round ran on what the killed one left: a.txt %q, %v", b, err)
			}
			if err := ws.Cleanup(context.Background()); err != nil {
				t.Fatal(err)
			}
			left, _ := os.ReadDir(filepath.Join(root, "worktrees"))
			clones, _ := filepath.Glob(filepath.Join(root, "clones", "*", "acme", "notes"))
			if len(left) != 0 || len(clones) != 0 {
				t.Fatalf("after the next claim's end: worktrees %v, clones %v; want none", left, clones)
			}
		})
	}
}
