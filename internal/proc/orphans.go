package proc

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// OwnerEnv is the variable every process Run starts carries: which
// converge process started it. Pdeathsig takes only the direct child
// with a converge killed by SIGKILL; what that child started (an agent's
// shell, a build) lives on, orphaned, and may still write to the tree a
// resumed run resets. The variable is how ReapOrphans finds it.
const OwnerEnv = "CONVERGE_OWNER"

// owner is this process's OwnerEnv value: its pid and, where the process
// table tells it, its start time, so that a later process given the same
// pid is not taken for it.
var owner = sync.OnceValue(func() string { return ownerOf(os.Getpid()) })

// withOwner is env (nil: this process's environment) with OwnerEnv set to
// this process, replacing what a converge above it set.
func withOwner(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, OwnerEnv+"=") })
	return append(out, OwnerEnv+"="+owner())
}

// Owner is this process's OwnerEnv value.
func Owner() string { return owner() }

// Identity names the process pid for as long as it runs: its pid and,
// where the process table tells it, its start time. A later process given
// the same pid (pids wrap, within minutes on a busy machine) has another.
func Identity(pid int) string { return ownerOf(pid) }

// IdentityLive reports whether the process id (from Identity) names still
// runs: its pid is taken by a live process that started when id says.
// Where this platform cannot tell, it is taken for alive.
func IdentityLive(id string) bool { return ownerLive(id) }
