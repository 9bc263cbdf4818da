//go:build !unix

package proc

import "os/exec"

// Without process groups only the process itself can be stopped, and only
// forcibly: there is no SIGTERM to ask it to summarize first.
func setProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, force bool) {
	if force {
		_ = cmd.Process.Kill()
	}
}

func killGroup(*exec.Cmd) {}
