package proc

import (
	"os"
	"strconv"
	"strings"
)

// Processes reads the process table (Linux /proc; nil elsewhere); a
// process that ends while it is read is left out.
func Processes() []Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var ps []Process
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

func stat(pid int) (Process, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Process{}, false
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields after it start past the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Process{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 of proc(5), state; starttime is field 22.
	if len(f) < 20 {
		return Process{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Process{}, false
	}
	return Process{PID: pid, PPID: ppid, PGID: pgrp, Start: start, Zombie: f[0] == "Z" || f[0] == "X"}, true
}

// descendants are the live processes below root in the process tree.
func descendants(root int) []Process {
	all := Processes()
	children := map[int][]Process{}
	for _, p := range all {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Process
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !c.Zombie {
				out = append(out, c)
			}
			queue = append(queue, c.PID)
		}
	}
	return out
}

// Live reports whether pid runs: it exists and is no zombie (where the
// process table is not read, a zombie counts as running).
func Live(pid int) bool {
	if !exists(pid) {
		return false
	}
	p, ok := stat(pid)
	return ok && !p.Zombie
}

// groupLive reports whether a process of group pgid runs. A zombie does
// not: the leader's orphans are reaped by init, which may take its time.
func groupLive(pgid int) bool {
	if !exists(-pgid) {
		return false
	}
	for _, p := range Processes() {
		if p.PGID == pgid && !p.Zombie {
			return true
		}
	}
	return false
}
