//go:build unix

package repo

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	// Negative pid: the whole group the command leads.
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
