package proc

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// A contained run's control groups (SEC-7): its processes and its memory
// bounded by the kernel's pids and memory controllers, where this machine
// lets converge make a group (root, or a delegated cgroup v2 subtree).
// RLIMIT_NPROC cannot bound a root's run (the kernel exempts root's
// user), nor can a rlimit bound memory a program counts as its own
// (tmpfs pages, the page cache of what it writes): these can. Without a
// group the run goes on under its rlimits alone; Bounds says which.

// runGroup is one run's groups, one per controller hierarchy.
type runGroup struct {
	dirs []string
}

var groupSeq atomic.Int64

// newRunGroup makes the run's groups with the limits, or returns nil
// where none can be made.
func newRunGroup(lim Limits) *runGroup {
	name := "converge-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(groupSeq.Add(1), 10)
	g := &runGroup{}
	for _, h := range hierarchies() {
		dir := filepath.Join(h.dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		wrote := false
		for _, l := range []struct {
			file string
			val  int64
		}{{h.pids, lim.Processes}, {h.mem, lim.Memory}} {
			if l.file == "" || l.val <= 0 {
				continue
			}
			if os.WriteFile(filepath.Join(dir, l.file), []byte(strconv.FormatInt(l.val, 10)), 0o644) == nil {
				wrote = true
			}
		}
		if !wrote {
			_ = os.Remove(dir)
			continue
		}
		g.dirs = append(g.dirs, dir)
	}
	if len(g.dirs) == 0 {
		return nil
	}
	return g
}

// add moves pid (the run's supervisor, before it starts the process)
// into the groups; what it starts is born there.
func (g *runGroup) add(pid int) error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644))
	}
	return errors.Join(errs...)
}

// remove removes the groups, once the run's processes are gone.
func (g *runGroup) remove() {
	if g == nil {
		return
	}
	for _, d := range g.dirs {
		waitUntil(func() bool { return os.Remove(d) == nil || errors.Is(os.Remove(d), os.ErrNotExist) }, killWait)
	}
}

// hierarchy is where a group bounding processes (pids) or memory (mem)
// is made, with the files that bound them.
type hierarchy struct {
	dir, pids, mem string
}

// hierarchies are this process's own groups of the pids and memory
// controllers: cgroup v1's, one per controller, or v2's unified one when
// it offers them.
func hierarchies() []hierarchy {
	own := map[string]string{} // controller ("" for v2) → this process's group
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	_ = f.Close()
	mounts := cgroupMounts()
	var out []hierarchy
	if m, ok := mounts["pids"]; ok {
		out = append(out, hierarchy{dir: filepath.Join(m, own["pids"]), pids: "pids.max"})
	}
	if m, ok := mounts["memory"]; ok {
		out = append(out, hierarchy{dir: filepath.Join(m, own["memory"]), mem: "memory.limit_in_bytes"})
	}
	if m, ok := mounts[""]; ok && len(out) == 0 {
		dir := filepath.Join(m, own[""])
		ctl, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		h := hierarchy{dir: dir}
		for _, c := range strings.Fields(string(ctl)) {
			switch c {
			case "pids":
				h.pids = "pids.max"
			case "memory":
				h.mem = "memory.max"
			}
		}
		if h.pids != "" || h.mem != "" {
			out = append(out, h)
		}
	}
	return out
}

// cgroupMounts maps each v1 controller to its hierarchy's mount point,
// and "" to the v2 mount.
func cgroupMounts() map[string]string {
	out := map[string]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, s := range fields {
			if s == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 || len(fields) < 5 {
			continue
		}
		switch fields[sep+1] {
		case "cgroup2":
			out[""] = fields[4]
		case "cgroup":
			for _, o := range strings.Split(fields[sep+3], ",") {
				if o == "pids" || o == "memory" {
					out[o] = fields[4]
				}
			}
		}
	}
	return out
}
