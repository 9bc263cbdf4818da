package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// Describe says what a run would use, for converge doctor: OpenCode's
// version, the model and where it is chosen, where the credential of its
// provider comes from (a variable's name, auth.json, a configuration's
// apiKey; never a value), the variables passed that are set, and what
// would stop a run. The project's configuration is that of the current
// directory.
func (a *Agent) Describe(ctx context.Context) agent.Description {
	dir, _ := os.Getwd()
	t := agent.Task{Kind: agent.TaskKindCheck, Workdir: dir}
	s := a.setup(t, true)
	env := envMap(s.env)
	d := agent.Description{Version: agent.CLIVersion(ctx, a.bin, s.env)}

	switch {
	case a.opts.ModelFor(t) != "":
		d.Model = a.opts.ModelFor(t)
		d.ModelFrom = "converge's model setting (passed as -m)"
		getenv := a.opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if getenv("CONVERGE_OPENCODE_MODEL") == d.Model {
			d.ModelFrom = "CONVERGE_OPENCODE_MODEL (passed as -m)"
		}
	default:
		if m, from := s.configured("model"); m != "" {
			d.Model, d.ModelFrom = m, from
			if from == "OPENCODE_CONFIG_CONTENT" {
				d.ModelFrom = "converge's OpenCode config"
			}
		} else {
			d.ModelFrom = "OpenCode's default (the best model of a provider with a credential; " +
				"without any, a free OpenCode Zen model)"
		}
	}

	var passed []string
	for _, kv := range s.env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(a.passNames(s), name) {
			passed = append(passed, name)
		}
	}
	d.PassEnv = passed

	var problems []string
	if d.Version == "" {
		problems = append(problems, a.bin+" gave no version (opencode --version): is it OpenCode?")
	}
	provider, _, _ := strings.Cut(d.Model, "/")
	creds := credentials(s, env)
	d.Credential = strings.Join(creds.all, "; ")
	if provider != "" {
		if c := creds.of[provider]; len(c) > 0 {
			d.Credential = strings.Join(c, "; ")
		} else if needsKey(provider) {
			problems = append(problems, fmt.Sprintf("no credential for provider %s found: set %s, or run opencode auth login",
				provider, strings.Join(providerEnv(provider), " or ")))
		}
	}
	// The project's configuration of the model's provider may name a
	// variable a run does not get on its say.
	for _, c := range s.configs {
		prov, _ := c.cfg["provider"].(map[string]any)
		mine, _ := prov[provider].(map[string]any)
		if c.user || mine == nil {
			continue
		}
		var held []string
		for _, n := range refs(mine) {
			if !slices.Contains(a.passNames(s), n) && s.environ[n] != "" {
				held = append(held, n)
			}
		}
		if len(held) > 0 {
			problems = append(problems, fmt.Sprintf("the project's %s names %s for provider %s, which a run does not get from the project: "+
				"add it to agent_env (--agent-env) to pass it", c.from, strings.Join(held, ", "), provider))
		}
	}
	d.Problem = strings.Join(problems, "; ")
	return d
}

// passNames are the variables a run set up as s gets from converge's
// environment.
func (a *Agent) passNames(s runSetup) []string {
	o := a.opts.CLIOptions
	o.AgentEnv = slices.Clone(o.AgentEnv)
	for _, c := range s.configs {
		if c.user {
			o.AgentEnv = append(o.AgentEnv, refs(c.cfg)...)
		}
	}
	return o.PassNames()
}

// found are the credentials found, by provider and all of them.
type found struct {
	of  map[string][]string
	all []string
}

// credentials are where the run's providers' credentials come from: a
// provider's key variable set in the run's environment env, auth.json,
// OPENCODE_AUTH_CONTENT, a configuration's apiKey. Names only.
func credentials(s runSetup, env map[string]string) found {
	f := found{of: map[string][]string{}}
	add := func(provider, what string) {
		f.of[provider] = append(f.of[provider], what)
		if !slices.Contains(f.all, what) {
			f.all = append(f.all, what)
		}
	}
	for _, p := range knownProviders {
		for _, v := range p.env {
			if env[v] != "" && isKeyName(v) {
				add(p.id, v)
			}
		}
	}
	if path := authFile(env); path != "" {
		for _, id := range authProviders(path) {
			add(id, path)
		}
	}
	if c := env["OPENCODE_AUTH_CONTENT"]; c != "" {
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(c), &m)
		for id := range m {
			add(id, "OPENCODE_AUTH_CONTENT")
		}
	}
	for _, c := range s.configs {
		prov, _ := c.cfg["provider"].(map[string]any)
		for id := range prov {
			key := lookup(c.cfg, "provider", id, "options", "apiKey")
			if key == "" {
				continue
			}
			from := c.from
			if from == "OPENCODE_CONFIG_CONTENT" {
				from = "converge's OpenCode config"
			}
			if m := envRef.FindStringSubmatch(key); m != nil {
				if env[m[1]] == "" {
					continue
				}
				from = m[1] + " (named in " + from + ")"
			}
			add(id, "the apiKey of provider "+id+" in "+from)
		}
	}
	return f
}

// isKeyName tells a credential's variable from a provider's setting (a
// region, a project, a resource name).
func isKeyName(name string) bool {
	for _, m := range []string{"KEY", "TOKEN", "SECRET", "PAT", "CREDENTIALS"} {
		if strings.Contains(name, m) {
			return true
		}
	}
	return false
}

// providerEnv are the credential variables of a known provider.
func providerEnv(id string) []string {
	for _, p := range knownProviders {
		if p.id == id {
			var out []string
			for _, v := range p.env {
				if isKeyName(v) {
					out = append(out, v)
				}
			}
			return out
		}
	}
	return nil
}

// needsKey: a known provider whose credential is a variable (not a cloud
// credential chain, not a local server) cannot run without one.
func needsKey(id string) bool {
	switch id {
	case "amazon-bedrock", "google-vertex", "google-vertex-anthropic", "opencode":
		return false
	}
	for _, p := range knownProviders {
		if p.id == id && (strings.Contains(p.api, "://127.0.0.1") || strings.Contains(p.api, "://localhost")) {
			return false // a local server
		}
	}
	return len(providerEnv(id)) > 0
}
