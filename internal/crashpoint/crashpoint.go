// Package crashpoint is REL-2's crash matrix hook: the action boundaries
// of a run (before and after each forge write, engine act, journal save,
// git commit and push) are numbered as the process passes them, and a
// test names boundary K with CONVERGE_TEST_CRASH_AT=K: there the process
// SIGKILLs itself, a real crash with nothing flushed or deferred, and the
// test resumes the run without the hook. CONVERGE_TEST_CRASH_LOG=FILE
// appends "K name" for each boundary passed, so a clean run counts them.
//
// Both variables are read once, when the process starts; unset, a
// boundary costs one nil check.
package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The variables; CONVERGE_TEST_ is a prefix converge's configuration
// leaves to its test tooling.
const (
	EnvAt  = "CONVERGE_TEST_CRASH_AT"
	EnvLog = "CONVERGE_TEST_CRASH_LOG"
	// EnvAtName names the boundary to die at by its name ("forge graphql
	// BatchReply: after"): the first boundary of that name. A scenario
	// that crashes at one place on several forges cannot know its number.
	EnvAtName = "CONVERGE_TEST_CRASH_AT_NAME"
)

// hook is nil unless one of the variables is set.
var hook = withName(load(os.Getenv(EnvAt), os.Getenv(EnvLog)), os.Getenv(EnvAtName))

type matrix struct {
	at      int    // the boundary to die at; 0: none
	atName  string // the name of the boundary to die at; "": none
	logPath string // where boundaries are recorded; "": nowhere

	mu   sync.Mutex
	n    int
	log  *os.File
	kill func() // kills the process; tests replace it
}

func load(at, logPath string) *matrix {
	k, err := parseAt(at)
	if err != nil || (k == 0 && logPath == "") {
		// CheckEnv, at the command's start, refuses a bad value.
		return nil
	}
	return &matrix{at: k, logPath: logPath, kill: killSelf}
}

// withName arms m, or a new hook, to die at the first boundary named name.
func withName(m *matrix, name string) *matrix {
	if name == "" {
		return m
	}
	if m == nil {
		m = &matrix{kill: killSelf}
	}
	m.atName = name
	return m
}

func parseAt(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	k, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || k < 1 {
		return 0, fmt.Errorf("%s=%q is not a boundary number: set it to a whole number from 1 (the first boundary), or unset it", EnvAt, v)
	}
	return k, nil
}

// CheckEnv refuses a CONVERGE_TEST_CRASH_AT of environ that is not a
// boundary number: the hook would be off, and a crash test would pass
// without crashing.
func CheckEnv(environ []string) error {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, EnvAt+"="); ok {
			if _, err := parseAt(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Armed reports whether the hook is set: a caller skips the work of
// naming a boundary when it is not.
func Armed() bool { return hook != nil }

// Hit passes the boundary name: it is numbered, recorded in the log when
// one is set, and at CONVERGE_TEST_CRASH_AT the process dies by SIGKILL
// before Hit returns. Boundaries passed concurrently are numbered in the
// order they reach Hit.
func Hit(name string) {
	if hook == nil {
		return
	}
	hook.hit(name)
}

func (m *matrix) hit(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if m.logPath != "" {
		if m.log == nil {
			// Opened at the first boundary: the supervisors converge
			// re-executes inherit the variables but pass none.
			f, err := os.OpenFile(m.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				fmt.Fprintf(os.Stderr, "converge: %s: %v\n", EnvLog, err)
				m.logPath = ""
			}
			m.log = f
		}
		if m.log != nil {
			// One write per line: the kernel keeps it through the kill.
			fmt.Fprintf(m.log, "%d %s\n", m.n, strings.ReplaceAll(name, "\n", " "))
		}
	}
	if m.n == m.at || (m.atName != "" && name == m.atName) {
		// The lock stays held: nothing else passes a boundary while the
		// signal is on its way.
		m.kill()
	}
}

// killSelf is the crash: SIGKILL, which no handler sees and nothing
// survives, then waiting for it to land.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {}
}
