// Package backends is the registry of the coding-agent CLI backends that
// need no more configuration than a name (AG-B1): `--agent claude`,
// `--agent codex`, `--agent gemini`, `--agent opencode`, and the same for
// `--review-agent` and `--judge-agent` (a judge's tasks run read-only like
// a review's, see agent.ReadOnly). It builds a backend
// from its name, the role it plays and what the environment configures:
//
//	CONVERGE_<NAME>_BIN    the program (else NAME in PATH)
//	CONVERGE_<NAME>_MODEL  the model (else the CLI's default)
//
// with NAME one of CLAUDE, CODEX, GEMINI, OPENCODE.
//
// Build builds every agent converge runs, these and the command and
// suggest agents, from a name, a command line and a role.
package backends

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/claude"
	"github.com/convergeloop/converge/internal/agent/codex"
	"github.com/convergeloop/converge/internal/agent/gemini"
	"github.com/convergeloop/converge/internal/agent/opencode"
)

// Roles an agent plays; a role other than RoleFix prefixes the backend's
// Name ("review-claude"), so logs and failures say which agent it was.
const (
	RoleFix    = "fix"
	RoleReview = "review"
	RoleJudge  = "judge"
)

// ErrUnknown is wrapped by New for a name that is not a backend here.
var ErrUnknown = errors.New("unknown agent backend")

// Config selects and configures a backend.
type Config struct {
	Name  string // "claude", "codex", "gemini" or "opencode"
	Role  string // RoleFix (default), RoleReview, RoleJudge
	Model string // overrides CONVERGE_<NAME>_MODEL
	// Binary overrides CONVERGE_<NAME>_BIN and PATH.
	Binary    string
	ExtraArgs []string
	// AgentEnv names more variables of converge's environment every run
	// gets as they are (agent_env, --agent-env); never a forge token's.
	AgentEnv []string
	// RetryBound is how long the CLI may retry a failing model request
	// before the run is stopped; zero means agent.DefaultRetryBound.
	RetryBound time.Duration
	// Secrets are the forge token and its kin: redacted from what a run
	// keeps, and no variable whose value is one of them reaches the CLI,
	// whatever its name (SEC-2).
	Secrets []string
	// Getenv reads converge's environment; nil means os.Getenv. Environ
	// lists it; nil means os.Environ.
	Getenv  func(string) string
	Environ func() []string
	// NewCommand builds Build's command agent from its name and argv;
	// nil means command.New (converge pr's and plan's protocol). converge
	// loop's children speak the loop's own.
	NewCommand func(name string, argv []string) (agent.Agent, error)
}

var names = []string{"claude", "codex", "gemini", "opencode"}

// Names lists the backends New builds.
func Names() []string { return slices.Clone(names) }

// Known reports whether New builds name.
func Known(name string) bool { return slices.Contains(names, name) }

// New builds the backend cfg names. A CLI that cannot be found is an
// error here, before anything runs (AG-T4 pre-flight): one line naming the
// program and how to fix it.
func New(cfg Config) (agent.Agent, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	model := cfg.Model
	if model == "" && Known(cfg.Name) {
		model = getenv("CONVERGE_" + strings.ToUpper(cfg.Name) + "_MODEL")
	}
	name := roleName(cfg.Role, cfg.Name)
	environ := cfg.Environ
	if environ == nil {
		environ = os.Environ
	}
	secrets := slices.Clone(cfg.Secrets)
	cli := agent.CLIOptions{Name: name, Binary: cfg.Binary, Model: model, ExtraArgs: cfg.ExtraArgs, Getenv: getenv,
		AgentEnv: slices.Clone(cfg.AgentEnv), RetryBound: cfg.RetryBound, Secrets: secrets,
		Environ: func() []string { return agent.WithoutValues(environ(), secrets) }}
	switch cfg.Name {
	case "claude":
		return claude.New(claude.Options{CLIOptions: cli})
	case "codex":
		return codex.New(codex.Options{CLIOptions: cli})
	case "gemini":
		return gemini.New(gemini.Options{CLIOptions: cli})
	case "opencode":
		return opencode.New(opencode.Options{CLIOptions: cli})
	}
	return nil, fmt.Errorf("%w %q: use one of %s", ErrUnknown, cfg.Name, strings.Join(names, ", "))
}

// ID tells apart configurations of one backend where a result is cached
// by agent (the local review's cache key): the name, the program and the
// model.
func ID(a agent.Agent, cfg Config) string {
	id := cfg.Name
	type binary interface{ Binary() string }
	if b, ok := a.(binary); ok {
		id += " bin=" + b.Binary()
	}
	model := cfg.Model
	if model == "" {
		getenv := cfg.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		model = getenv("CONVERGE_" + strings.ToUpper(cfg.Name) + "_MODEL")
	}
	if model != "" {
		id += " model=" + model
	}
	if len(cfg.ExtraArgs) > 0 {
		id += " args=" + strings.Join(cfg.ExtraArgs, " ")
	}
	return id
}
