package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/convergeloop/converge/internal/agent"
)

// What Codex's own configuration says about a run: the model, the model
// provider and its endpoint, the variable its key is read from. Codex
// reads $CODEX_HOME/config.toml (CODEX_HOME defaults to ~/.codex), then
// applies each -c KEY=VALUE override in order (VALUE is TOML; what is no
// TOML is a string). converge reads the same, so that a provider a user
// configured gets its key passed (SEC-2 passes only named variables), a
// failing endpoint is named, and doctor can say where things come from.
//
// The built-in provider "openai" (the default) takes its base URL from
// the top-level openai_base_url key only: Codex 0.169 ignores the
// OPENAI_BASE_URL variable (codex-rs model-provider-info
// built_in_model_providers(openai_base_url)). Its key is CODEX_API_KEY or
// the login in $CODEX_HOME/auth.json (`codex login --with-api-key`, or a
// ChatGPT login, whose default endpoint is ChatGPT's backend); an
// OPENAI_API_KEY in the environment is not read. A custom provider
// ([model_providers.ID] with base_url, env_key, wire_api) reads its key
// from its env_key variable and fails at once ("Missing environment
// variable") without it.

// Built-in endpoints (codex-rs model-provider-info).
const (
	openAIBaseURL   = "https://api.openai.com/v1"
	chatGPTBaseURL  = "https://chatgpt.com/backend-api/codex"
	bedrockBaseURL  = "https://bedrock-mantle.us-east-1.api.aws/v1"
	ollamaBaseURL   = "http://localhost:11434/v1"
	lmStudioBaseURL = "http://localhost:1234/v1"
	builtinOpenAI   = "openai"
)

// setup is what a run's configuration resolves to.
type setup struct {
	// Home is the run's CODEX_HOME; File its config.toml, "" when there
	// is none; Err why it could not be read.
	Home, File string
	Err        error
	// Model is the model a run uses, "" for the CLI's default; ModelFrom
	// says where it comes from.
	Model, ModelFrom string
	// Provider is the model provider's id; BaseURL where its requests go
	// ("" when unknown); EnvKey the variable its key is read from ("" for
	// none); HeaderEnv the variables its env_http_headers read.
	Provider, BaseURL, EnvKey string
	HeaderEnv                 []string
	// OpenAIAuth: the provider uses Codex's own login (auth.json) or
	// CODEX_API_KEY, as the built-in openai provider does.
	OpenAIAuth bool
	// Login is the auth.json login's mode ("apikey", "chatgpt"), "" when
	// there is no auth.json.
	Login string
}

// codexHome is the CODEX_HOME of a run with env: its CODEX_HOME, else
// $HOME/.codex; "" when neither is set.
func codexHome(env []string) string {
	if h := agent.EnvValue(env, "CODEX_HOME"); h != "" {
		return h
	}
	if h := agent.EnvValue(env, "HOME"); h != "" {
		return filepath.Join(h, ".codex")
	}
	return ""
}

// resolve reads the configuration of a run with environment env and the
// -c overrides of its command line (argv), with model the model converge
// passes (-m, "" for none) and modelFrom where that comes from.
func resolve(env, argv []string, model, modelFrom string) setup {
	s := setup{Home: codexHome(env)}
	conf := map[string]any{}
	if s.Home != "" {
		file := filepath.Join(s.Home, "config.toml")
		b, err := os.ReadFile(file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.File, s.Err = file, err
		default:
			s.File = file
			if _, err := toml.Decode(string(b), &conf); err != nil {
				s.Err = fmt.Errorf("%s: %v", file, err)
			}
		}
		s.Login = loginMode(filepath.Join(s.Home, "auth.json"))
	}
	overridden := map[string]bool{}
	for _, kv := range overrides(argv) {
		key, _ := splitOverride(kv)
		overridden[key] = true
		merge(conf, parseOverride(kv))
	}

	s.Model, s.ModelFrom = model, modelFrom
	if s.Model == "" {
		if m, ok := conf["model"].(string); ok && m != "" {
			s.Model, s.ModelFrom = m, s.File
			if overridden["model"] {
				s.ModelFrom = "-c model"
			}
		} else {
			s.ModelFrom = "the CLI's default"
		}
	}

	s.Provider = builtinOpenAI
	if p, ok := conf["model_provider"].(string); ok && p != "" {
		s.Provider = p
	}
	switch s.Provider {
	case builtinOpenAI:
		s.OpenAIAuth = true
		s.BaseURL = openAIBaseURL
		if s.Login == "chatgpt" && agent.EnvValue(env, "CODEX_API_KEY") == "" {
			s.BaseURL = chatGPTBaseURL
		}
		if u, ok := conf["openai_base_url"].(string); ok && u != "" {
			s.BaseURL = u
		}
		s.HeaderEnv = []string{"OPENAI_ORGANIZATION", "OPENAI_PROJECT"}
		return s
	case "amazon-bedrock":
		s.BaseURL = bedrockBaseURL
	case "ollama":
		s.BaseURL = ollamaBaseURL
	case "lmstudio":
		s.BaseURL = lmStudioBaseURL
	}
	providers, _ := conf["model_providers"].(map[string]any)
	p, _ := providers[s.Provider].(map[string]any)
	if u, ok := p["base_url"].(string); ok && u != "" {
		s.BaseURL = u
	}
	s.EnvKey, _ = p["env_key"].(string)
	s.OpenAIAuth, _ = p["requires_openai_auth"].(bool)
	if h, ok := p["env_http_headers"].(map[string]any); ok {
		for _, v := range h {
			if name, ok := v.(string); ok && name != "" {
				s.HeaderEnv = append(s.HeaderEnv, name)
			}
		}
		slices.Sort(s.HeaderEnv)
	}
	return s
}

// overrides are the -c/--config values of argv, in order.
func overrides(argv []string) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case (a == "-c" || a == "--config") && i+1 < len(argv):
			out = append(out, argv[i+1])
			i++
		case strings.HasPrefix(a, "--config="):
			out = append(out, strings.TrimPrefix(a, "--config="))
		case strings.HasPrefix(a, "-c") && len(a) > 2 && strings.Contains(a, "="):
			out = append(out, a[2:])
		}
	}
	return out
}

func splitOverride(kv string) (key, value string) {
	key, value, _ = strings.Cut(kv, "=")
	return strings.TrimSpace(key), strings.TrimSpace(value)
}

// parseOverride is the table one -c KEY=VALUE sets: VALUE parsed as TOML,
// or as a string when it is none (as Codex does); KEY a dotted path.
func parseOverride(kv string) map[string]any {
	key, value := splitOverride(kv)
	out := map[string]any{}
	if key == "" {
		return out
	}
	if _, err := toml.Decode(key+" = "+value, &out); err == nil {
		return out
	}
	quoted, _ := json.Marshal(value) // a JSON string is a TOML basic string
	if _, err := toml.Decode(key+" = "+string(quoted), &out); err == nil {
		return out
	}
	return map[string]any{}
}

// merge sets src's values in dst, table by table.
func merge(dst, src map[string]any) {
	for k, v := range src {
		sub, isTable := v.(map[string]any)
		have, hasTable := dst[k].(map[string]any)
		if isTable && hasTable {
			merge(have, sub)
			continue
		}
		dst[k] = v
	}
}

// loginMode is the auth_mode of the auth.json at path ("apikey",
// "chatgpt"), "" when there is none or it cannot be read.
func loginMode(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var a struct {
		Mode   string          `json:"auth_mode"`
		Key    string          `json:"OPENAI_API_KEY"`
		Tokens json.RawMessage `json:"tokens"`
	}
	if json.Unmarshal(b, &a) != nil {
		return ""
	}
	switch {
	case a.Mode != "":
		return strings.ToLower(a.Mode)
	case a.Key != "":
		return "apikey"
	case len(a.Tokens) > 0 && string(a.Tokens) != "null":
		return "chatgpt"
	}
	return ""
}
