//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the process in a group of its own so that stopping it
// reaches the shells, compilers and test binaries it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

func signalGroup(cmd *exec.Cmd, force bool) {
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	// The group id is the leader's pid (Setpgid with Pgid 0).
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// killGroup removes what the process left running after the leader ended.
// The kernel does not reuse a pid while a process group of that id lives;
// once it is empty the kill fails with ESRCH, and hitting a stranger would
// need the pid reused by a new group leader in the meantime.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
