package gemini

import (
	"context"
	"os"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

var _ agent.Describer = (*Agent)(nil)

// noRelaunch keeps Gemini CLI in the process it was started in.
const noRelaunch = "GEMINI_CLI_NO_RELAUNCH=true"

// Describe says, for converge doctor, how a run of the backend would go:
// the CLI's version, the model and where it comes from, where the
// credential comes from (a variable's or a file's name, never a value),
// the variables passed through that are set, and what would stop a run.
func (a *Agent) Describe(ctx context.Context) agent.Description {
	env := a.Env(agent.Task{})
	p := providerOf(env, "")
	// Gemini CLI starts itself again with a larger heap before it does
	// anything, --version included; a version needs no heap, and the
	// second start is most of the five CPU-seconds the answer costs.
	d := agent.Description{
		Version:    agent.CLIVersion(ctx, a.bin, append(env, noRelaunch)),
		Credential: p.Credential,
		Problem:    p.Problem,
	}
	if p.Credential != "" && p.AuthType != "" {
		d.Credential += " (" + p.AuthType + " from " + p.AuthFrom + ")"
	}
	d.Model, d.ModelFrom = a.model(env)
	set := map[string]bool{}
	for _, kv := range a.opts.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			set[k] = true
		}
	}
	for _, name := range a.opts.PassNames() {
		if set[name] {
			d.PassEnv = append(d.PassEnv, name)
		}
	}
	if d.Version == "" {
		bad := a.bin + " gave no version (gemini --version): is it Gemini CLI?"
		if d.Problem != "" {
			bad += "; " + d.Problem
		}
		d.Problem = bad
	}
	return d
}

// model is the model a run would use and where it comes from, as Gemini
// CLI picks it: -m, then GEMINI_MODEL, then model.name in its settings,
// then its default, auto.
func (a *Agent) model(env []string) (model, from string) {
	if m := a.opts.Model; m != "" {
		getenv := a.opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if getenv("CONVERGE_GEMINI_MODEL") == m {
			return m, "CONVERGE_GEMINI_MODEL (passed as -m)"
		}
		return m, "converge's model setting (passed as -m)"
	}
	if m := agent.EnvValue(env, "GEMINI_MODEL"); m != "" {
		return m, "GEMINI_MODEL"
	}
	if s := readSettings(env, ""); s.Model != "" {
		return s.Model, s.ModelFrom
	}
	return "auto", "the CLI's default (auto: its router picks a Pro or a Flash model for each prompt)"
}
