package codex

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// Describe says what a fix run would use, for converge doctor: the CLI's
// version, the model and where it comes from (converge's option, the
// config.toml, the CLI's default), where the credential comes from (a
// variable's name, the login file; never a value), the variables passed
// that are set, and what would stop a run.
func (a *Agent) Describe(ctx context.Context) agent.Description {
	env, s := a.envAndSetup(agent.Task{Kind: agent.TaskKindFix})
	d := agent.Description{
		Version:   agent.CLIVersion(ctx, a.bin, env),
		Model:     s.Model,
		ModelFrom: s.ModelFrom,
	}
	environ := a.opts.Environ()
	for _, n := range append(a.opts.PassNames(), s.providerEnv()...) {
		if agent.EnvValue(environ, n) != "" && !slices.Contains(d.PassEnv, n) {
			d.PassEnv = append(d.PassEnv, n)
		}
	}

	var problems []string
	if d.Version == "" {
		problems = append(problems, fmt.Sprintf("%s --version gave no answer: is it the Codex CLI?", a.bin))
	}
	if s.Err != nil {
		problems = append(problems, "its config.toml cannot be read: "+s.Err.Error())
	}
	switch {
	case s.EnvKey != "" && slices.Contains(agent.ForgeTokenNames, s.EnvKey):
		problems = append(problems, fmt.Sprintf("provider %s reads its key from %s, a forge token's variable, which converge never passes to an agent; give the provider a key variable of its own", s.Provider, s.EnvKey))
	case s.EnvKey != "":
		if agent.EnvValue(env, s.EnvKey) != "" {
			d.Credential = s.EnvKey
		} else {
			problems = append(problems, fmt.Sprintf("provider %s reads its key from %s, which is not set", s.Provider, s.EnvKey))
		}
	case s.OpenAIAuth:
		switch {
		case agent.EnvValue(env, "CODEX_API_KEY") != "":
			d.Credential = "CODEX_API_KEY"
		case s.Login != "":
			how := "API key"
			if s.Login == "chatgpt" {
				how = "ChatGPT"
			}
			d.Credential = fmt.Sprintf("%s (codex login, %s)", filepath.Join(s.Home, "auth.json"), how)
		case s.BaseURL == openAIBaseURL:
			// Codex 0.169 sends no key at all then; OPENAI_API_KEY in
			// the environment is not read by its built-in provider.
			problems = append(problems, "no credential: run `printenv OPENAI_API_KEY | codex login --with-api-key` (Codex does not read OPENAI_API_KEY from the environment) or set CODEX_API_KEY")
		}
	}
	d.Problem = strings.Join(problems, "; ")
	return d
}
