//go:build unix

package mcpserver

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in a session of its own: the signals a client sends
// the MCP server's process group at the session's end (or a terminal's
// hang-up) do not reach a run started from it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
