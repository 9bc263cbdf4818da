package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// What the coding-agent CLI backends (claude, codex, …) share: finding the
// program and building its environment.

// ResolveBinary finds an agent CLI's program (AG-B1, AG-T4 pre-flight):
// configured (a backend's Options.Binary) when set, else the value of
// envVar (CONVERGE_CLAUDE_BIN, …) when set, else name looked up in PATH. A
// value with a slash is a path and must be an executable file; any other
// is looked up in PATH. The result is absolute, as the agent runs in
// another directory. The error is one line naming the program, where it
// was looked for and how to fix it.
func ResolveBinary(configured, envVar, name string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	prog, from := configured, "the configured binary"
	if prog == "" && envVar != "" {
		prog, from = getenv(envVar), envVar
	}
	if prog == "" {
		prog, from = name, "PATH"
	}
	if !strings.Contains(prog, "/") {
		p, err := exec.LookPath(prog)
		if err != nil {
			hint := ""
			if envVar != "" {
				hint = " or set " + envVar + " to its path"
			}
			return "", fmt.Errorf("agent CLI %q not found in PATH (from %s); install it%s", prog, from, hint)
		}
		prog = p
	}
	abs, err := filepath.Abs(prog)
	if err != nil {
		return "", fmt.Errorf("agent CLI %q (from %s): %v", prog, from, err)
	}
	info, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("agent CLI %q (from %s) cannot be used: %v; check the path", prog, from, err)
	case info.IsDir():
		return "", fmt.Errorf("agent CLI %q (from %s) is a directory; name the program inside it", prog, from)
	case info.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("agent CLI %q (from %s) is not executable; run chmod +x on it", prog, from)
	}
	return abs, nil
}

// CLIEnv is the environment of an agent CLI run (AG-B1, SEC-2): base — the
// task's scrubbed environment, or ScrubEnv(environ) when the task has none
// — then the variables named in pass taken from environ as they are (a
// model API key, a config directory: exact names only, credentials
// included, so only what a backend or the user names), then extra
// KEY=VALUE entries. A later entry replaces an earlier one of the same
// name; order is otherwise kept.
func CLIEnv(base, environ, pass, extra []string) []string {
	if base == nil {
		base = ScrubEnv(environ)
	}
	out := make([]string, 0, len(base)+len(pass)+len(extra))
	at := map[string]int{}
	set := func(kv string) {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return
		}
		if i, seen := at[name]; seen {
			out[i] = kv
			return
		}
		at[name] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		set(kv)
	}
	if len(pass) > 0 {
		want := map[string]bool{}
		for _, p := range pass {
			want[p] = true
		}
		for _, kv := range environ {
			if name, _, ok := strings.Cut(kv, "="); ok && want[name] {
				set(kv)
			}
		}
	}
	for _, kv := range extra {
		set(kv)
	}
	return out
}
