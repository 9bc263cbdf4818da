package cmdutil

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/text"
	"github.com/spf13/pflag"
)

// AgentConfig is what every agent CLI backend of a run is built with: the
// agent settings (agent_env, agent_retry_bound) and the forge token's
// values, which reach no agent under any name (SEC-2).
type AgentConfig struct {
	Env        []string
	RetryBound time.Duration
	Secrets    []string
}

// agentSettings resolves the agent settings from the flags (set), the
// environment and file (nil: none).
func AgentSettings(ios *IOStreams, set map[string]string, file *config.File) (AgentConfig, error) {
	ss, err := config.Resolve(config.AgentFields(), config.Inputs{File: file, Getenv: ios.Getenv, Flags: set})
	if err != nil {
		return AgentConfig{}, UsageErr("%v", err)
	}
	v := config.ValuesOf(ss)
	env := v.List("agent_env")
	for _, s := range ss {
		if s.Key == "agent_env" && s.Source == config.FromFile {
			env = fileAgentEnv(ios, env, s.Where)
		}
	}
	return AgentConfig{Env: env, RetryBound: v.Duration("agent_retry_bound")}, nil
}

// fileAgentEnv is the agent_env a repository's .converge.yaml (at where)
// may set: the repository is not the user, and must not hand the user's
// credentials to an agent that reads its untrusted text (SEC-2). A name
// that looks like a credential passes only when the user names it
// (--agent-env, CONVERGE_AGENT_ENV); the file's is dropped with a
// warning saying so.
func fileAgentEnv(ios *IOStreams, names []string, where string) []string {
	var out []string
	for _, n := range names {
		if agent.LooksLikeCredential(n) {
			fmt.Fprintf(ios.ErrOut, "converge: warning: %s names %s in agent_env, which looks like a credential; a repository's file cannot pass credentials to agents, so it does not pass (give --agent-env %s yourself to pass it)\n", where, n, n)
			continue
		}
		out = append(out, n)
	}
	return out
}

// taskEnv is the scrubbed environment every agent run of the run starts
// from (agent.Task.Env), without a value that is one of ac's secrets.
func (ac AgentConfig) TaskEnv() []string {
	return agent.WithoutValues(agent.ScrubEnv(os.Environ()), ac.Secrets)
}

// AgentBuilder builds a run's agents with its AgentConfig (Factory.
// Agent), and remembers each CLI backend for the pre-flight check
// (AgentChecker).
type AgentBuilder struct {
	f  *Factory
	ac AgentConfig
	// Command builds the command agent (backends.Config.NewCommand);
	// nil: converge pr's and plan's.
	Command func(name string, argv []string) (agent.Agent, error)
	mu      sync.Mutex
	checks  []CheckTarget
}

// NewAgentBuilder builds a run's agents through f.Agent with ac.
func NewAgentBuilder(f *Factory, ac AgentConfig) *AgentBuilder {
	return &AgentBuilder{f: f, ac: ac}
}

// Agent builds the agent name in role (backends.Build), cmd the command
// agent's command line.
func (b *AgentBuilder) Agent(name, cmd, role string) (agent.Agent, error) {
	return b.build(backends.Config{}, name, cmd, role)
}

// Backend builds the CLI backend cfg names, with cfg's own environment.
func (b *AgentBuilder) Backend(cfg backends.Config) (agent.Agent, error) {
	return b.build(cfg, cfg.Name, "", cfg.Role)
}

func (b *AgentBuilder) build(cfg backends.Config, name, cmd, role string) (agent.Agent, error) {
	cfg.AgentEnv, cfg.RetryBound, cfg.Secrets = b.ac.Env, b.ac.RetryBound, b.ac.Secrets
	cfg.NewCommand = b.Command
	a, err := b.f.Agent(cfg, name, cmd, role)
	if err != nil {
		return nil, err
	}
	if !backends.Known(name) {
		// The command and suggest agents have no model to check.
		return a, nil
	}
	cfg.Name, cfg.Role = name, role
	// One backend in two roles (a fixer and its reviewer) is one
	// identity: checked once.
	key := backends.ID(a, cfg)
	if len(cfg.AgentEnv) > 0 {
		key += " env=" + strings.Join(cfg.AgentEnv, ",")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.ContainsFunc(b.checks, func(c CheckTarget) bool { return c.key == key }) {
		b.checks = append(b.checks, CheckTarget{agent: a, key: key})
	}
	return a, nil
}

// Built is every backend built so far, one per identity.
func (b *AgentBuilder) Built() []CheckTarget {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.checks)
}

// CheckTarget is a backend to check before the run writes anything, and
// its identity (backends.ID and the variables it is given).
type CheckTarget struct {
	agent agent.Agent
	key   string
}

// AgentChecker is the pre-flight of a run's agents (AG-T4): before the
// first write to the forge and before anything is recorded, each CLI
// backend proves it reaches its model with one minimal read-only request
// (agent.Check). A backend identity that answered is not asked again by
// the checker, which a command makes once (a process runs one command):
// a backend serving as fixer and reviewer, or the same agents of several
// PRs, is checked once. The command and suggest agents
// are not checked: their programs were found, and they have no model of
// converge's to reach.
type AgentChecker struct {
	// Budget time-boxes each check; zero means agent.DefaultCheckBudget.
	Budget time.Duration
	mu     sync.Mutex
	passed map[string]bool
}

// Check checks each of ts not checked yet, one at a time, with env as
// their task's environment. The error is the first failure: exit 6 when
// the CLI said its credentials failed, else exit 2, in one line with the
// CLI's own words.
func (c *AgentChecker) Check(ctx context.Context, ts []CheckTarget, env []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passed == nil {
		c.passed = map[string]bool{}
	}
	for _, t := range ts {
		if c.passed[t.key] {
			continue
		}
		_, err := agent.Check(ctx, t.agent, env, c.Budget)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return AgentCheckError(t.agent.Name(), err)
		}
		c.passed[t.key] = true
	}
	return nil
}

// agentCheckError is a failed pre-flight check as the command ends with
// it: exit 6 for an authentication failure (agent.FailAuth), else exit 2.
func AgentCheckError(name string, err error) error {
	code := exitcode.Usage
	if agent.KindOf(err) == agent.FailAuth {
		code = exitcode.Auth
	}
	msg := text.OneLine(err.Error())
	if !strings.Contains(msg, name) {
		msg = "agent " + name + ": " + msg
	}
	return &ExitErr{Code: code, Err: fmt.Errorf("pre-flight check of the agents: %s; nothing was written (--no-agent-check skips the check)", msg)}
}

// AgentFlags are the agent settings as flags of converge loop and plan
// (converge pr has them with its other settings), and --no-agent-check.
type AgentFlags struct {
	// Set are the agent settings given as flags, by key.
	Set map[string]string
	// NoCheck is --no-agent-check.
	NoCheck bool
}

// AddAgentFlags adds the agent settings and --no-agent-check to f.
func AddAgentFlags(f *pflag.FlagSet) *AgentFlags {
	af := &AgentFlags{Set: map[string]string{}}
	for _, fd := range config.AgentFields() {
		f.Var(&FieldFlag{Field: fd, Values: af.Set}, fd.Flag(), fd.Help)
	}
	AddNoAgentCheck(f, &af.NoCheck)
	return af
}

// AddNoAgentCheck adds --no-agent-check to f.
func AddNoAgentCheck(f *pflag.FlagSet, p *bool) {
	f.BoolVar(p, "no-agent-check", false, "skip the pre-flight check that each agent CLI reaches its model (one minimal read-only request per backend before anything is written)")
}

// Checker is the pre-flight of the run's agents; nil when skipped.
func (af *AgentFlags) Checker() *AgentChecker {
	if af.NoCheck {
		return nil
	}
	return &AgentChecker{}
}
