package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/proc/proctest"
)

// TestAG_K1_SupervisorIsTransparent: a run under the supervisor (this
// test binary calls proc.Supervise in TestMain, as converge's main does)
// gets its stdin, and its stdout, stderr and exit code reach the caller
// as they would without it; a program that cannot start is Run's error
// (Started false), as exec.Cmd.Start's was.
func TestAG_K1_SupervisorIsTransparent(t *testing.T) {
	// The process's parent is a supervisor: what the rest checks goes
	// through one.
	r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", `tr '\0' ' ' < /proc/$PPID/cmdline`}})
	if err != nil || !strings.Contains(r.Stdout, " __supervise ") && !strings.Contains(r.Stdout, " __jail ") {
		t.Fatalf("the process's parent is %q (%v), not a supervisor", r.Stdout, err)
	}
	// The process carries this converge's owner tag (REL-2); the
	// supervisor does not: another converge's ReapOrphans, run while the
	// supervisor of a killed converge kills its family, must leave it to
	// kill what carries no tag.
	r, err = proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", `echo "$` + proc.OwnerEnv + `"; tr '\0' '\n' < /proc/$PPID/environ | grep -c ^` + proc.OwnerEnv + `=`}})
	if err != nil || r.Stdout != proc.Owner()+"\n0\n" {
		t.Errorf("the process's owner tag and the supervisor's count of them: %q (%v), want %q and 0", r.Stdout, err, proc.Owner())
	}

	r, err = proc.Run(context.Background(), proc.Spec{
		Argv:  []string{"sh", "-c", `read -r line; echo "out:$line"; echo err >&2; echo "env:$CONVERGE_K1_TEST"; exit 3`},
		Env:   append(os.Environ(), "CONVERGE_K1_TEST=passed"),
		Stdin: []byte("hello\n"),
	})
	if err != nil || r.Stdout != "out:hello\nenv:passed\n" || r.Stderr != "err\n" || r.ExitCode != 3 || r.TimedOut {
		t.Errorf("result %+v, %v; want stdin passed through, both streams and exit code 3", r, err)
	}
	r, err = proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", "echo a; echo b >&2; echo c"}, Combined: true})
	if err != nil || r.Stdout != "a\nb\nc\n" || r.ExitCode != 0 {
		t.Errorf("combined: result %+v, %v", r, err)
	}
	r, err = proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", "kill -9 $$"}})
	if err != nil || r.ExitCode != -1 {
		t.Errorf("a process killed by a signal: result %+v, %v; want exit code -1", r, err)
	}
	// A file that is not executable starts nothing, with exec's error.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = proc.Run(context.Background(), proc.Spec{Argv: []string{"./prog"}, Dir: dir})
	if r.Started || err == nil || !strings.Contains(err.Error(), "fork/exec ./prog: permission denied") {
		t.Errorf("not executable: result %+v, error %v", r, err)
	}
}

// TestAG_K1_TimeBoxUnderTheSupervisor: at the budget the family gets
// SIGTERM through the supervisor, and the agent its grace to print its
// record; what ignores
// SIGTERM is killed at the end of the grace and gone when Run returns:
// a setsid escapee started before the stop, and one the agent started
// in its grace and left behind (which nothing but the supervisor, its
// adoptive parent, can still find).
func TestAG_K1_TimeBoxUnderTheSupervisor(t *testing.T) {
	dir := t.TempDir()
	esc, late := filepath.Join(dir, "escapee.pid"), filepath.Join(dir, "late.pid")
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte("summarize() { ( setsid "+stubborn(late)+" & ); sleep 0.3; echo record; exit 0; }\n"+
		"trap summarize TERM\nwhile :; do sleep 0.05; done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "setsid " + stubborn(esc) + " &\nsh " + agent
	r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", script}, Trusted: true,
		Budget: time.Second, Grace: 2 * time.Second})
	if err != nil || !r.TimedOut || !strings.Contains(r.Stdout, "record") {
		t.Fatalf("result %+v, %v; want stopped at the budget with the record printed in the grace", r, err)
	}
	for i, pid := range readPids(t, esc, late) {
		if proctest.Alive(pid) {
			t.Errorf("the %s %d is alive after Run returned", []string{"setsid escapee", "escapee started in the grace"}[i], pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// hidden is stubborn without proc.OwnerEnv in its environment: no
// ReapOrphans finds it (another converge on this machine may run one at
// any time), only the supervisor.
func hidden(file string) string { return "env -u " + proc.OwnerEnv + " " + stubborn(file) }

// TestAG_K1_FamilyDiesWithAKilledConverge: converge (here the test
// binary as a parent, see parentEnv) is killed by SIGKILL while its run's
// shell has a background child, a child that left for a session of its
// own (setsid), and one whose parent exited (orphaned), each ignoring
// SIGTERM and hidden from ReapOrphans. None of them is alive 2 s after
// the kill (AG-K1's bound).
func TestAG_K1_FamilyDiesWithAKilledConverge(t *testing.T) {
	dir := t.TempDir()
	bg, esc, orphan := filepath.Join(dir, "bg.pid"), filepath.Join(dir, "setsid.pid"), filepath.Join(dir, "orphan.pid")
	script := hidden(bg) + " &\n" +
		"setsid " + hidden(esc) + " &\n" +
		"( " + hidden(orphan) + " & ) \n" +
		"for f in " + bg + " " + esc + " " + orphan + "; do while [ ! -s $f ]; do sleep 0.01; done; done\n" +
		"echo $$ > " + filepath.Join(dir, "child.pid") + "; wait"
	parent, child := startParent(t, filepath.Join(dir, "child.pid"), scriptEnv+"="+script)
	pids := append([]int{child}, readPids(t, bg, esc, orphan)...)
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = parent.Wait()
	for i, pid := range pids {
		if !proctest.WaitGone(pid, time.Until(killed.Add(2*time.Second))) {
			t.Errorf("%s %d is alive 2 s after converge was killed", []string{"the shell", "its background child", "the setsid escapee", "the orphan"}[i], pid)
		}
	}
}

// TestAG_K1_SupervisorKillsWhatTheProcessLeft: a process that ends by
// itself leaves a setsid child and an orphan behind; the supervisor
// kills them before Run returns (Run without it killed only the
// process's own group).
func TestAG_K1_SupervisorKillsWhatTheProcessLeft(t *testing.T) {
	dir := t.TempDir()
	esc, orphan := filepath.Join(dir, "setsid.pid"), filepath.Join(dir, "orphan.pid")
	script := "setsid " + stubborn(esc) + " &\n" +
		"( " + stubborn(orphan) + " & ) \n" +
		"for f in " + esc + " " + orphan + "; do while [ ! -s $f ]; do sleep 0.01; done; done"
	r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", script}, Trusted: true, Budget: 20 * time.Second})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("result %+v, %v", r, err)
	}
	for i, pid := range readPids(t, esc, orphan) {
		if proctest.Alive(pid) {
			t.Errorf("the %s %d is alive after Run returned", []string{"setsid escapee", "orphan"}[i], pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
