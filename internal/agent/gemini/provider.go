package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// How Gemini CLI 0.61 picks its provider (packages/cli/src/
// validateNonInterActiveAuth.ts, packages/core/src/core/
// contentGenerator.ts): the auth type chosen in its settings
// (security.auth.selectedType, written by its /auth dialog), else one
// read from the environment — GOOGLE_GENAI_USE_GCA=true Login with
// Google, GOOGLE_GENAI_USE_VERTEXAI=true Vertex AI, GOOGLE_GEMINI_BASE_URL
// a gateway (which 0.61 itself refuses: "Invalid auth method selected."),
// GEMINI_API_KEY the Gemini API, CLOUD_SHELL or GEMINI_CLI_USE_COMPUTE_ADC
// the machine's credentials. The environment includes the first .env
// file found from the working directory up, then ~/.gemini/.env and
// ~/.env (never replacing a variable already set).
//
// The Gemini API is at GOOGLE_GEMINI_BASE_URL, else
// https://generativelanguage.googleapis.com. Vertex AI is at
// GOOGLE_VERTEX_BASE_URL, else https://LOCATION-aiplatform.googleapis.com
// (aiplatform.googleapis.com for the global location and for express
// mode, a GOOGLE_API_KEY without project), with GOOGLE_CLOUD_PROJECT and
// GOOGLE_CLOUD_LOCATION and Google credentials (GOOGLE_APPLICATION_
// CREDENTIALS, gcloud's application-default login, the metadata server).
// Login with Google talks to Code Assist (cloudcode-pa.googleapis.com)
// with the login kept in ~/.gemini/oauth_creds.json.

// Auth types as Gemini CLI names them in its settings.
const (
	authAPIKey  = "gemini-api-key"
	authVertex  = "vertex-ai"
	authLogin   = "oauth-personal"
	authCompute = "compute-default-credentials"
	authShell   = "cloud-shell"
	authGateway = "gateway"
)

// settings is what converge reads of Gemini CLI's settings files.
type settings struct {
	// AuthType is security.auth.selectedType (or the v1 selectedAuthType)
	// and AuthFrom the file that set it.
	AuthType, AuthFrom string
	// Model is model.name (or the v1 model) and ModelFrom its file.
	Model, ModelFrom string
}

// settingsFiles are Gemini CLI's settings files, lowest precedence first:
// system defaults, the user's, the workspace's (dir, when set), the
// system's.
func settingsFiles(env []string, dir string) []string {
	sysDir := "/etc/gemini-cli"
	if runtime.GOOS == "darwin" {
		sysDir = "/Library/Application Support/GeminiCli"
	}
	defaults := agent.EnvValue(env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
	if defaults == "" {
		defaults = filepath.Join(sysDir, "system-defaults.json")
	}
	system := agent.EnvValue(env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH")
	if system == "" {
		system = filepath.Join(sysDir, "settings.json")
	}
	files := []string{defaults, filepath.Join(cliHome(env), ".gemini", "settings.json")}
	if dir != "" {
		files = append(files, filepath.Join(dir, ".gemini", "settings.json"))
	}
	return append(files, system)
}

// readSettings merges the settings files for env and the workspace dir.
func readSettings(env []string, dir string) settings {
	var s settings
	for _, file := range settingsFiles(env, dir) {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var f struct {
			Security struct {
				Auth struct {
					SelectedType string `json:"selectedType"`
				} `json:"auth"`
			} `json:"security"`
			SelectedAuthType string          `json:"selectedAuthType"`
			Model            json.RawMessage `json:"model"`
		}
		if json.Unmarshal(stripJSONComments(b), &f) != nil {
			continue
		}
		if t := firstOf(f.Security.Auth.SelectedType, f.SelectedAuthType); t != "" {
			s.AuthType, s.AuthFrom = t, file
		}
		var m struct {
			Name string `json:"name"`
		}
		var v1 string
		switch {
		case json.Unmarshal(f.Model, &m) == nil && m.Name != "":
			s.Model, s.ModelFrom = m.Name, file
		case json.Unmarshal(f.Model, &v1) == nil && v1 != "":
			s.Model, s.ModelFrom = v1, file
		}
	}
	return s
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// stripJSONComments removes // and /* */ comments outside strings:
// Gemini CLI's settings files are JSON with comments.
func stripJSONComments(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && (b[i] != '*' || b[i+1] != '/') {
				i++
			}
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}

// dotEnv is a variable from the .env files Gemini CLI reads beside its
// environment: ~/.gemini/.env, else ~/.env (the working directory's
// own, looked for first by the CLI, is the repository's business).
// from is the file's path.
func dotEnv(env []string, name string) (value, from string) {
	home := cliHome(env)
	for _, file := range []string{filepath.Join(home, ".gemini", ".env"), filepath.Join(home, ".env")} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		// The CLI reads only the first file it finds.
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == name {
				value = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
		return value, file
	}
	return "", ""
}

// getenv is name's value in env, else in the .env files the CLI reads;
// from says where ("" when unset: the variable's name when in env).
func getenv(env []string, name string) (value, from string) {
	if v := agent.EnvValue(env, name); v != "" {
		return v, name
	}
	if v, file := dotEnv(env, name); v != "" {
		return v, name + " in " + file
	}
	return "", ""
}

// provider is how a run of Gemini CLI would reach its model.
type provider struct {
	// AuthType is the CLI's auth type, "" when none is chosen; AuthFrom
	// says where it was chosen (a settings file, a variable).
	AuthType, AuthFrom string
	// Endpoint is the model API's base URL.
	Endpoint string
	// Credential says where the credential comes from, never its value;
	// "" when none was found.
	Credential string
	// Problem is what would stop a run, "" when nothing found would.
	Problem string
}

// providerOf reads env (the run's environment) and the CLI's settings for
// the workspace dir ("" for none) as Gemini CLI 0.61 would.
func providerOf(env []string, dir string) provider {
	s := readSettings(env, dir)
	p := provider{AuthType: s.AuthType, AuthFrom: s.AuthFrom}
	is := func(name string) bool { v, _ := getenv(env, name); return v == "true" }
	set := func(name string) bool { v, _ := getenv(env, name); return v != "" }
	if p.AuthType == "" {
		switch {
		case is("GOOGLE_GENAI_USE_GCA"):
			p.AuthType, p.AuthFrom = authLogin, "GOOGLE_GENAI_USE_GCA"
		case is("GOOGLE_GENAI_USE_VERTEXAI"):
			p.AuthType, p.AuthFrom = authVertex, "GOOGLE_GENAI_USE_VERTEXAI"
		case set("GOOGLE_GEMINI_BASE_URL"):
			p.AuthType, p.AuthFrom = authGateway, "GOOGLE_GEMINI_BASE_URL"
		case set("GEMINI_API_KEY"):
			p.AuthType, p.AuthFrom = authAPIKey, "GEMINI_API_KEY"
		case is("CLOUD_SHELL") || is("GEMINI_CLI_USE_COMPUTE_ADC"):
			p.AuthType, p.AuthFrom = authCompute, "GEMINI_CLI_USE_COMPUTE_ADC"
		}
	}
	home := cliHome(env)
	switch p.AuthType {
	case "":
		p.Endpoint = "https://generativelanguage.googleapis.com"
		p.Problem = "no auth method: set GEMINI_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI=true with Vertex AI's variables), " +
			"or run gemini once and choose one (security.auth.selectedType in ~/.gemini/settings.json)"
	case authAPIKey:
		p.Endpoint = firstOf(agent.EnvValue(env, "GOOGLE_GEMINI_BASE_URL"), "https://generativelanguage.googleapis.com")
		if _, from := getenv(env, "GEMINI_API_KEY"); from != "" {
			p.Credential = from
		} else {
			p.Problem = "no GEMINI_API_KEY in the environment, ~/.gemini/.env or ~/.env " +
				"(a key saved by gemini's /auth in the system keychain is not visible here: converge doctor --check tries it)"
		}
	case authGateway:
		p.Endpoint = agent.EnvValue(env, "GOOGLE_GEMINI_BASE_URL")
		_, p.Credential = getenv(env, "GEMINI_API_KEY")
		p.Problem = `GOOGLE_GEMINI_BASE_URL is set but no auth type is chosen: Gemini CLI refuses this ("Invalid auth method selected."); ` +
			`set security.auth.selectedType to "gemini-api-key" in ~/.gemini/settings.json`
	case authVertex:
		project, _ := getenv(env, "GOOGLE_CLOUD_PROJECT")
		if project == "" {
			project, _ = getenv(env, "GOOGLE_CLOUD_PROJECT_ID")
		}
		location, _ := getenv(env, "GOOGLE_CLOUD_LOCATION")
		_, keyFrom := getenv(env, "GOOGLE_API_KEY")
		p.Endpoint = vertexEndpoint(agent.EnvValue(env, "GOOGLE_VERTEX_BASE_URL"), location)
		switch {
		case keyFrom != "":
			p.Credential = keyFrom + " (Vertex AI express mode)"
		case project == "" || location == "":
			p.Problem = "Vertex AI needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION, or GOOGLE_API_KEY (express mode)"
		default:
			p.Credential, p.Problem = googleCredential(env, home)
		}
	case authLogin:
		p.Endpoint = firstOf(agent.EnvValue(env, "CODE_ASSIST_ENDPOINT"), "https://cloudcode-pa.googleapis.com")
		creds := filepath.Join(home, ".gemini", "oauth_creds.json")
		if _, err := os.Stat(creds); err == nil {
			p.Credential = "Login with Google (" + creds + ")"
		} else if agent.EnvValue(env, "GEMINI_FORCE_ENCRYPTED_FILE_STORAGE") == "true" {
			p.Credential = "Login with Google (gemini's encrypted credential store)"
		} else {
			p.Problem = "not logged in: run gemini in a terminal and choose Login with Google (" + creds + " is missing)"
		}
	case authCompute, authShell:
		p.Endpoint = firstOf(agent.EnvValue(env, "CODE_ASSIST_ENDPOINT"), "https://cloudcode-pa.googleapis.com")
		p.Credential = "the machine's Google credentials (metadata server)"
	default:
		p.Endpoint = "https://generativelanguage.googleapis.com"
		p.Problem = "unknown auth type " + p.AuthType + " (from " + p.AuthFrom + ")"
	}
	return p
}

// vertexEndpoint is Vertex AI's base URL for the location.
func vertexEndpoint(base, location string) string {
	switch {
	case base != "":
		return base
	case location == "us":
		return "https://aiplatform.us.rep.googleapis.com"
	case location == "eu":
		return "https://aiplatform.eu.rep.googleapis.com"
	case location == "" || location == "global":
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + location + "-aiplatform.googleapis.com"
}

// googleCredential is where Google's application default credentials
// come from: GOOGLE_APPLICATION_CREDENTIALS, else gcloud's
// application-default login, else (on Google Cloud) the metadata
// server, which converge cannot see.
func googleCredential(env []string, home string) (credential, problem string) {
	if file := agent.EnvValue(env, "GOOGLE_APPLICATION_CREDENTIALS"); file != "" {
		if _, err := os.Stat(file); err != nil {
			return "", "GOOGLE_APPLICATION_CREDENTIALS names a file that cannot be read: " + err.Error()
		}
		return "GOOGLE_APPLICATION_CREDENTIALS", ""
	}
	dir := firstOf(agent.EnvValue(env, "CLOUDSDK_CONFIG"), filepath.Join(home, ".config", "gcloud"))
	adc := filepath.Join(dir, "application_default_credentials.json")
	if _, err := os.Stat(adc); err == nil {
		return "gcloud application-default login (" + adc + ")", ""
	}
	return "", "no Google credentials found: set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth application-default login " +
		"(on Google Cloud the metadata server may serve them: converge doctor --check tries it)"
}
