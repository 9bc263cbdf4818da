//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

// setProcessGroup puts the process in a group of its own so that stopping it
// reaches the shells, compilers and test binaries it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// family is what one Run started: the leader's process group (its id is
// the leader's pid, from Setpgid with Pgid 0) and the groups descendants
// made with setpgid or setsid, which a signal to the leader's group does
// not reach.
type family struct {
	pid int // the leader
	// root is whose descendants the family are: the leader, or in the
	// supervisor, the supervisor itself, which adopts what the leader
	// leaves (a child subreaper).
	root   int
	groups []int // groups a descendant leads
	strays []int // descendants that joined a group none of the family leads
	// reaped: the leader's exit was collected, so its pid may name
	// another process now and its descendants are not looked for.
	reaped bool
	// sup is converge's end of the supervisor the run sits under (AG-K1),
	// or nil: the supervisor is then the leader, and stops the family
	// itself when told to.
	sup *supervisor
}

// newFamily is the family of cmd, just started.
func newFamily(cmd *exec.Cmd, sup *supervisor) *family {
	pid := cmd.Process.Pid
	return &family{pid: pid, root: pid, sup: sup}
}

// look records where the leader's descendants are now. It is called while
// the leader lives, before each signal: once the leader is gone its
// children are orphans, and nothing ties them to this run any more. A
// group is signalled whole only when a descendant leads it; one that
// joined another group (converge's own, another job's) is signalled
// alone, so nothing outside the family is.
func (f *family) look() {
	if f.reaped {
		return
	}
	desc := descendants(f.root)
	leads := map[int]bool{}
	for _, p := range desc {
		leads[p.PID] = p.PGID == p.PID
	}
	for _, p := range desc {
		switch {
		case p.PGID == f.pid:
		case leads[p.PGID]:
			if !slices.Contains(f.groups, p.PGID) {
				f.groups = append(f.groups, p.PGID)
			}
		case !slices.Contains(f.strays, p.PID):
			f.strays = append(f.strays, p.PID)
		}
	}
}

// signal sends sig to every group and stray of the family. A group id is
// not reused while a process of that group lives, and strays were seen
// as descendants moments before; a signal to a reused pid needs the pid
// to be freed and taken again in between.
func (f *family) signal(sig syscall.Signal) {
	_ = syscall.Kill(-f.pid, sig)
	for _, g := range f.groups {
		_ = syscall.Kill(-g, sig)
	}
	for _, p := range f.strays {
		_ = syscall.Kill(p, sig)
	}
}

// stopping asks the family to end (SIGTERM), or forces it (SIGKILL).
func (f *family) stopping(force bool) {
	if f.sup != nil {
		f.sup.stop(force)
		return
	}
	f.look()
	if force {
		f.signal(syscall.SIGKILL)
		return
	}
	f.signal(syscall.SIGTERM)
}

// kill removes what the family left running after the leader ended, and
// returns once none of it runs, or after bound: a SIGKILLed process needs
// to be scheduled before it is gone, which on a loaded machine is not at
// once, and whoever called Run next resets the tree the process was in.
// A process that outlives the bound is stuck in the kernel, where it runs
// no code of its own.
func (f *family) kill(bound time.Duration) {
	if f.sup != nil {
		// The supervisor has exited, and it exits once its family is
		// gone; closing the control pipe is all that is left.
		f.sup.close()
		return
	}
	f.signal(syscall.SIGKILL)
	waitUntil(f.gone, bound)
}

func (f *family) gone() bool {
	if f.sup != nil {
		return f.reaped
	}
	if slices.ContainsFunc(f.strays, Live) {
		return false
	}
	return !groupLive(f.pid) && !slices.ContainsFunc(f.groups, groupLive)
}

// exists reports whether kill(2) finds the target: a zombie counts.
func exists(target int) bool {
	return !errors.Is(syscall.Kill(target, 0), syscall.ESRCH)
}
