package cmdutil

import (
	"io"
	"os"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/config"
)

// IOStreams are the command's streams; tests swap in buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// IsTTY says whether Out is a terminal (live status lines vs plain).
	IsTTY bool
	// Getenv reads the environment; tests replace it. Main's also sees the
	// token variables secure.Harden took out of the process environment.
	Getenv func(string) string
	// Environ lists the environment (nil: the process's), for the check
	// of CONVERGE_* variables that name no setting.
	Environ func() []string
	// Backend builds an agent CLI backend by name (nil: backends.New);
	// tests put a double here.
	Backend func(backends.Config) (agent.Agent, error)
}

// CheckEnv refuses an unknown CONVERGE_* variable (IF-1: exit 2).
func (ios *IOStreams) CheckEnv() error {
	env := os.Environ
	if ios.Environ != nil {
		env = ios.Environ
	}
	if err := config.CheckEnv(config.PRFields(), env()); err != nil {
		return UsageErr("%v", err)
	}
	return nil
}

// System returns the process's streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, IsTTY: stdoutIsTerminal(), Getenv: os.Getenv}
}

// ForceTTYEnv makes converge treat its stdout as a terminal (live status
// lines), as GH_FORCE_TTY does for gh: for a pager or a recording, and
// for the tests.
const ForceTTYEnv = "CONVERGE_FORCE_TTY"

// stdoutIsTerminal reports whether the process's stdout is a terminal,
// or CONVERGE_FORCE_TTY says to treat it as one.
func stdoutIsTerminal() bool {
	if v := os.Getenv(ForceTTYEnv); v != "" && v != "0" && v != "false" {
		return true
	}
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// IsTerminal reports whether Out is a terminal the loops' status lines
// are drawn on (IsTTY; tests set it).
func (ios *IOStreams) IsTerminal() bool { return ios.IsTTY }
