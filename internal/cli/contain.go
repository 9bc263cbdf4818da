package cli

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/store"
)

// unsafeNoSandbox is the flag that runs agents uncontained (SEC-7).
const unsafeNoSandbox = "unsafe-no-sandbox"

// addSandboxFlag puts --unsafe-no-sandbox on a command that runs agents
// or their builds.
func addSandboxFlag(f *pflag.FlagSet, p *bool) {
	f.BoolVar(p, unsafeNoSandbox, false, "run agents and their builds and tests uncontained, as you, where this machine cannot contain them (SEC-7): they can then read your tokens and dotfiles, and outlive converge")
}

// containAgents sets how every agent and build/test run of the command
// is contained, before any is started: in a jail that hides stateDir
// (the store, the clone cache, every run's worktree) among the rest
// (proc.Policy), or, with unsafe, not at all, said in one line. Where the
// machine cannot contain them, the command is refused with why and how.
func containAgents(ios *cmdutil.IOStreams, unsafe bool, stateDir string) error {
	hide := proc.CurrentPolicy().Hide
	if stateDir == "" {
		stateDir = filepath.Dir(store.DefaultPath(ios.Getenv))
	}
	if abs, err := filepath.Abs(stateDir); err == nil && !slices.Contains(hide, abs) {
		// Hidden for good: several commands run in one process (tests,
		// MCP), and hiding more is never less safe.
		hide = append(slices.Clone(hide), abs)
	}
	var writable []string
	for _, w := range filepath.SplitList(ios.Getenv("CONVERGE_SANDBOX_WRITABLE")) {
		if !filepath.IsAbs(w) {
			return cmdutil.UsageErr("CONVERGE_SANDBOX_WRITABLE: %q is not an absolute path; name each directory agents may write from /", w)
		}
		writable = append(writable, w)
	}
	if unsafe {
		proc.SetPolicy(proc.Policy{Unsafe: true, Hide: hide})
		fmt.Fprintf(ios.ErrOut, "converge: warning: agents and their builds run uncontained (--%s): they can read this machine's tokens and dotfiles, and outlive converge\n", unsafeNoSandbox)
		return nil
	}
	proc.SetPolicy(proc.Policy{Require: true, Hide: hide, Writable: writable})
	if err := proc.Available(); err != nil {
		return &cmdutil.ExitErr{Code: exitcode.Usage, Err: fmt.Errorf("agents run contained (SEC-7) and this machine cannot contain them: %v; allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns) or pass --%s", err, unsafeNoSandbox)}
	}
	return nil
}

// sandboxFinding is what doctor says of containment.
func sandboxFinding() doctorFinding {
	if err := proc.Available(); err != nil {
		return doctorFinding{What: fmt.Sprintf("NOT available: %v; runs of agents are refused unless --%s", err, unsafeNoSandbox)}
	}
	return doctorFinding{OK: true, What: "agents contained: own user, mount and PID namespaces, the filesystem read-only but their worktree, homes and state hidden, no capabilities, file and process limits"}
}
