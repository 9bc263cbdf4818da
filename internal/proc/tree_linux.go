package proc

import (
	"os"
	"strconv"
	"strings"
)

// procStat is one line of the process table, from /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp int
	zombie          bool
	start           uint64 // clock ticks after boot: with pid, one process ever
}

// table reads the process table; a process that ends while it is read is
// left out.
func table() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var ps []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := stat(pid); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func stat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields after it start past the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 of proc(5), state; starttime is field 22.
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, start: start, zombie: f[0] == "Z" || f[0] == "X"}, true
}

// descendants are the live processes below root in the process tree.
func descendants(root int) []procStat {
	all := table()
	children := map[int][]procStat{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []procStat
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !c.zombie {
				out = append(out, c)
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}

// live reports whether pid runs: it exists and is no zombie.
func live(pid int) bool {
	if !exists(pid) {
		return false
	}
	p, ok := stat(pid)
	return ok && !p.zombie
}

// groupLive reports whether a process of group pgid runs. A zombie does
// not: the leader's orphans are reaped by init, which may take its time.
func groupLive(pgid int) bool {
	if !exists(-pgid) {
		return false
	}
	for _, p := range table() {
		if p.pgrp == pgid && !p.zombie {
			return true
		}
	}
	return false
}
