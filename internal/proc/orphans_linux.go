package proc

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

func ownerOf(pid int) string {
	p, ok := stat(pid)
	if !ok {
		return strconv.Itoa(pid)
	}
	return strconv.Itoa(pid) + "." + strconv.FormatUint(p.Start, 10)
}

// ReapOrphans kills the processes that converge processes no longer
// running left behind, and returns how many once they are gone (or after
// a bound). It reads the environment of this user's processes for
// OwnerEnv: a process that cleared its environment is not found.
func ReapOrphans() int {
	self := owner()
	var orphans []int
	for _, p := range Processes() {
		if p.Zombie || p.PID == os.Getpid() {
			continue
		}
		o := ownerIn(p.PID)
		if o == "" || o == self || ownerLive(o) {
			continue
		}
		if syscall.Kill(p.PID, syscall.SIGKILL) == nil {
			orphans = append(orphans, p.PID)
		}
	}
	waitUntil(func() bool { return !slices.ContainsFunc(orphans, Live) }, killWait)
	return len(orphans)
}

// ownerIn is the OwnerEnv value in pid's environment, or "".
func ownerIn(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(OwnerEnv+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// ownerLive reports whether the converge process o names still runs: its
// pid is taken by a live process with the start time o records.
func ownerLive(o string) bool {
	pidText, _, _ := strings.Cut(o, ".")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		// Not ours to judge: leave it.
		return true
	}
	return Live(pid) && ownerOf(pid) == o
}
