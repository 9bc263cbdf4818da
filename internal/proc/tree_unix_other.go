//go:build unix && !linux

package proc

// procStat is one process of the table; only Linux's /proc lists it.
type procStat struct{ pid, pgrp int }

// descendants is empty: without /proc the process tree is not read, and
// only the leader's group is signalled.
func descendants(int) []procStat { return nil }

// live and groupLive count a zombie as running: without /proc it cannot
// be told apart, so kill waits for its bound when one is left.
func live(pid int) bool       { return exists(pid) }
func groupLive(pgid int) bool { return exists(-pgid) }
