//go:build !unix

package proc

import (
	"os/exec"
	"time"
)

// Without process groups only the process itself can be stopped, and only
// forcibly: there is no SIGTERM to ask it to summarize first.
func setProcessGroup(*exec.Cmd) {}

type family struct {
	cmd    *exec.Cmd
	reaped bool
}

func newFamily(cmd *exec.Cmd, _ *supervisor) *family { return &family{cmd: cmd} }

func (f *family) gone() bool { return true }

func (f *family) stopping(force bool) {
	if force {
		_ = f.cmd.Process.Kill()
	}
}

func (f *family) kill(time.Duration) {}

// Processes is nil: the process table is not read here.
func Processes() []Process { return nil }

// Live is false: whether a process runs is not read here.
func Live(int) bool { return false }
