package backends

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/agent/suggest"
)

// The agents Build builds beside the CLI backends: a program run with
// sh -c, and the built-in suggest agent.
const (
	Command = "command"
	Suggest = suggest.Name
)

// ErrNoCommand is Build's error for the command agent without a command
// line; the caller names its flag (--agent-cmd, --judge-cmd, …).
var ErrNoCommand = errors.New("the command agent needs a command line")

// Kinds lists every agent Build builds: the CLI backends, command and
// suggest.
func Kinds() []string { return append(Names(), Command, Suggest) }

// Build builds the agent name in role (RoleFix, RoleReview, RoleJudge)
// with the environment's configuration; cmd is the command agent's
// command line. See Config.Build.
func Build(name, cmd, role string) (agent.Agent, error) {
	return Config{}.Build(name, cmd, role)
}

// Build is the one builder of every agent converge runs, with c's
// settings (c.Name and c.Role are name's and role's):
//
//   - claude, codex, gemini, opencode: the CLI backend (New);
//   - command: cmd run with sh -c, its program made absolute; the program
//     must exist (AG-T4: a pre-flight failure, not a failed run), and an
//     empty cmd is ErrNoCommand; a program's error is returned as
//     command.Preflight words it, for the caller to prefix with its flag;
//   - suggest: the built-in agent that applies suggestion blocks, a
//     fixer only.
//
// A role other than RoleFix prefixes the agent's Name ("review-command").
func (c Config) Build(name, cmd, role string) (agent.Agent, error) {
	c.Name, c.Role = name, role
	switch name {
	case Suggest:
		if role != "" && role != RoleFix {
			return nil, fmt.Errorf("the %s agent only fixes: it cannot %s", Suggest, role)
		}
		return suggest.New(), nil
	case Command:
		if strings.TrimSpace(cmd) == "" {
			return nil, ErrNoCommand
		}
		if err := command.Preflight(cmd); err != nil {
			return nil, err
		}
		argv := []string{"sh", "-c", command.AbsProgram(cmd)}
		n := roleName(role, Command)
		if c.NewCommand != nil {
			return c.NewCommand(n, argv)
		}
		return command.New(argv, command.Options{Name: n})
	}
	if !Known(name) {
		return nil, fmt.Errorf("%w %q: use one of %s", ErrUnknown, name, strings.Join(slices.Concat(names, []string{Command, Suggest}), ", "))
	}
	return New(c)
}

// roleName is name as it plays role: "review-claude", "judge-command".
func roleName(role, name string) string {
	if role != "" && role != RoleFix {
		return role + "-" + name
	}
	return name
}
