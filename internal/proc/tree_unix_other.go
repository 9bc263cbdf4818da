//go:build unix && !linux

package proc

// Processes is nil: without /proc the table is not read.
func Processes() []Process { return nil }

// descendants is empty: without /proc the process tree is not read, and
// only the leader's group is signalled.
func descendants(int) []Process { return nil }

// Live and groupLive count a zombie as running: without /proc it cannot
// be told apart, so kill waits for its bound when one is left.
func Live(pid int) bool       { return exists(pid) }
func groupLive(pgid int) bool { return exists(-pgid) }
