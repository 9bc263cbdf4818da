//go:build !unix

package mcpserver

import "os/exec"

// detach: elsewhere a child is not in its parent's process group to
// begin with.
func detach(*exec.Cmd) {}
