package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

var _ agent.Describer = (*Agent)(nil)

// Describe says, for converge doctor, what a run of this backend would
// use: the CLI's version (empty, and a problem, when `claude --version`
// does not answer: not a working Claude Code), the model and where it
// comes from (Options.Model as --model, else ANTHROPIC_MODEL, else the
// "model" of Claude Code's settings.json, else the CLI's default, which
// Claude Code picks by account, provider and its own release), where the
// credential comes from (a variable's name or the login file's path,
// never a value), and the passed variables that are set. It reads the
// environment a run would get, and runs nothing but --version.
func (a *Agent) Describe(ctx context.Context) agent.Description {
	env := a.Env(agent.Task{})
	e := envOf(env)
	d := agent.Description{Version: agent.CLIVersion(ctx, a.bin, env)}
	switch {
	case a.opts.Model != "":
		d.Model, d.ModelFrom = a.opts.Model, "--model"
		getenv := a.opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if getenv(ModelEnv) == d.Model {
			// backends.New set it from converge's variable.
			d.ModelFrom = ModelEnv
		}
	case e.get("ANTHROPIC_MODEL") != "":
		d.Model, d.ModelFrom = e.get("ANTHROPIC_MODEL"), "ANTHROPIC_MODEL"
	default:
		if m, file := settingsModel(e); m != "" {
			d.Model, d.ModelFrom = m, file
		} else {
			d.ModelFrom = "the CLI's default"
		}
	}
	cred, problem := e.credential()
	d.Credential = cred
	d.PassEnv = a.passedSet()
	if d.Version == "" {
		problem = a.bin + " --version gave no answer: it is not a working Claude Code CLI (set " + BinaryEnv + " to one)"
	}
	d.Problem = problem
	return d
}

// settingsModel is the "model" of Claude Code's user settings
// ($CLAUDE_CONFIG_DIR/settings.json, default ~/.claude/settings.json) and
// that file, "" when it names none.
func settingsModel(e envOf) (model, file string) {
	dir := e.configDir()
	if dir == "" {
		return "", ""
	}
	file = filepath.Join(dir, "settings.json")
	b, err := os.ReadFile(file)
	if err != nil {
		return "", ""
	}
	var s struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(b, &s) != nil || s.Model == "" {
		return "", ""
	}
	return s.Model, file
}

// passedSet are the names of the variables of converge's environment a
// run gets (PassEnv, AgentEnv; a '*' name a prefix) that are set.
func (a *Agent) passedSet() []string {
	var out []string
	for _, kv := range a.opts.Environ() {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || slices.Contains(out, name) {
			continue
		}
		if slices.ContainsFunc(a.passNames(), func(p string) bool { return matchPass(p, name) }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ModelEnv is converge's variable for the claude backend's model
// (backends.New reads it).
const ModelEnv = "CONVERGE_CLAUDE_MODEL"
