package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// How Claude Code finds its model and its credential, as 2.1 reads its
// environment: the Anthropic API (ANTHROPIC_BASE_URL, default
// https://api.anthropic.com) with ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY,
// CLAUDE_CODE_OAUTH_TOKEN or the login `claude /login` keeps in
// $CLAUDE_CONFIG_DIR/.credentials.json (default ~/.claude, in HOME; the
// macOS keychain on a Mac); Amazon Bedrock with CLAUDE_CODE_USE_BEDROCK
// and AWS credentials; Google Vertex AI with CLAUDE_CODE_USE_VERTEX,
// ANTHROPIC_VERTEX_PROJECT_ID, CLOUD_ML_REGION and Google credentials;
// Microsoft Foundry with CLAUDE_CODE_USE_FOUNDRY.

// DefaultPassEnv are the variables of converge's environment a claude run
// gets besides the scrubbed task environment: how Claude Code reaches and
// authenticates to its model on each of its providers, which models it
// uses, and where it keeps its configuration and login. A name ending in
// '*' is a prefix. No forge token is among them.
var DefaultPassEnv = []string{
	// The Anthropic API, or a gateway speaking it.
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
	"ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_BETAS",
	"CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
	// Models.
	"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
	"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
	"CLAUDE_CODE_SUBAGENT_MODEL",
	// Amazon Bedrock: the switch, the endpoint, and the AWS SDK's
	// credential chain (keys, a Bedrock API key, a profile and its
	// files, web identity, container credentials).
	"CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
	"ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION", "AWS_BEARER_TOKEN_BEDROCK",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	"AWS_CA_BUNDLE",
	// Google Vertex AI: the switch, project, regions (one per model in
	// VERTEX_REGION_<MODEL>), the endpoint, and Google's application
	// default credentials.
	"CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "VERTEX_REGION_*",
	"ANTHROPIC_VERTEX_BASE_URL", "CLAUDE_CODE_SKIP_VERTEX_AUTH",
	"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_QUOTA_PROJECT",
	"CLOUDSDK_CONFIG", "CLOUDSDK_CORE_PROJECT", "CLOUDSDK_ACTIVE_CONFIG_NAME",
	// Microsoft Foundry.
	"CLAUDE_CODE_USE_FOUNDRY", "ANTHROPIC_FOUNDRY_RESOURCE", "ANTHROPIC_FOUNDRY_BASE_URL",
	"ANTHROPIC_FOUNDRY_API_KEY", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
}

// DefaultAPIURL is the Anthropic API Claude Code uses without
// ANTHROPIC_BASE_URL.
const DefaultAPIURL = "https://api.anthropic.com"

// envOf looks variables up in a KEY=VALUE list, the last entry winning
// as in a process's environment.
type envOf []string

func (e envOf) get(name string) string {
	v := ""
	for _, kv := range e {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// on is Claude Code's reading of a switch variable: set to anything but
// "", "0", "false", "no" or "off".
func (e envOf) on(name string) bool {
	switch strings.ToLower(strings.TrimSpace(e.get(name))) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// provider is "bedrock", "vertex", "foundry" or "anthropic", as Claude
// Code picks it.
func (e envOf) provider() string {
	switch {
	case e.on("CLAUDE_CODE_USE_BEDROCK"):
		return "bedrock"
	case e.on("CLAUDE_CODE_USE_VERTEX"):
		return "vertex"
	case e.on("CLAUDE_CODE_USE_FOUNDRY"):
		return "foundry"
	}
	return "anthropic"
}

// endpoint is the model endpoint a run with environment e talks to.
func (e envOf) endpoint() string {
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	switch e.provider() {
	case "bedrock":
		region := or(e.get("AWS_REGION"), or(e.get("AWS_DEFAULT_REGION"), "us-east-1"))
		return or(e.get("ANTHROPIC_BEDROCK_BASE_URL"), "https://bedrock-runtime."+region+".amazonaws.com")
	case "vertex":
		region := or(e.get("CLOUD_ML_REGION"), "us-east5")
		host := region + "-aiplatform.googleapis.com"
		if region == "global" {
			host = "aiplatform.googleapis.com"
		}
		return or(e.get("ANTHROPIC_VERTEX_BASE_URL"), "https://"+host+"/v1")
	case "foundry":
		return or(e.get("ANTHROPIC_FOUNDRY_BASE_URL"), "https://"+or(e.get("ANTHROPIC_FOUNDRY_RESOURCE"), "RESOURCE")+".services.ai.azure.com/anthropic")
	}
	return or(e.get("ANTHROPIC_BASE_URL"), DefaultAPIURL)
}

// configDir is where Claude Code keeps its settings and login.
func (e envOf) configDir() string {
	if d := e.get("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	if h := e.get("HOME"); h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

// LoginFile is the file in which `claude /login` keeps its login on
// Linux and Windows: .credentials.json in $CLAUDE_CONFIG_DIR, default
// ~/.claude. On macOS it is in the keychain.
func LoginFile(env []string) string {
	d := envOf(env).configDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, ".credentials.json")
}

// hasLogin says whether file holds a Claude login (an OAuth token, which
// the CLI refreshes when it has expired). Its values are not read out.
func hasLogin(file string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	var c struct {
		ClaudeAiOauth *struct {
			AccessToken  string `json:"accessToken"`
			RefreshToken string `json:"refreshToken"`
		} `json:"claudeAiOauth"`
	}
	return json.Unmarshal(b, &c) == nil && c.ClaudeAiOauth != nil &&
		(c.ClaudeAiOauth.AccessToken != "" || c.ClaudeAiOauth.RefreshToken != "")
}

// credential says where the credential of a run with environment e comes
// from — a variable's name, a file's path, never a value — and, when
// none is found, what is missing.
func (e envOf) credential() (from, problem string) {
	set := func(names ...string) string {
		for _, n := range names {
			if e.get(n) != "" {
				return n
			}
		}
		return ""
	}
	exists := func(p string) bool {
		_, err := os.Stat(p)
		return p != "" && err == nil
	}
	home := e.get("HOME")
	switch e.provider() {
	case "bedrock":
		if e.on("CLAUDE_CODE_SKIP_BEDROCK_AUTH") {
			return "none sent (CLAUDE_CODE_SKIP_BEDROCK_AUTH: a gateway adds it)", ""
		}
		if n := set("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
			"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); n != "" {
			return n, ""
		}
		for _, f := range []string{e.get("AWS_SHARED_CREDENTIALS_FILE"), e.get("AWS_CONFIG_FILE")} {
			if exists(f) {
				return f, ""
			}
		}
		if home != "" {
			for _, f := range []string{filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config")} {
				if exists(f) {
					return f, ""
				}
			}
		}
		return "", "CLAUDE_CODE_USE_BEDROCK is set but no AWS credential was found (AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID, AWS_PROFILE or ~/.aws/credentials)"
	case "vertex":
		if e.get("ANTHROPIC_VERTEX_PROJECT_ID") == "" {
			return "", "CLAUDE_CODE_USE_VERTEX is set but ANTHROPIC_VERTEX_PROJECT_ID is not"
		}
		if e.on("CLAUDE_CODE_SKIP_VERTEX_AUTH") {
			return "none sent (CLAUDE_CODE_SKIP_VERTEX_AUTH: a gateway adds it)", ""
		}
		if f := e.get("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
			return "GOOGLE_APPLICATION_CREDENTIALS", ""
		}
		dir := e.get("CLOUDSDK_CONFIG")
		if dir == "" && home != "" {
			dir = filepath.Join(home, ".config", "gcloud")
		}
		if f := filepath.Join(dir, "application_default_credentials.json"); dir != "" && exists(f) {
			return f, ""
		}
		return "", "CLAUDE_CODE_USE_VERTEX is set but no Google credential was found (GOOGLE_APPLICATION_CREDENTIALS or gcloud auth application-default login)"
	case "foundry":
		if e.on("CLAUDE_CODE_SKIP_FOUNDRY_AUTH") {
			return "none sent (CLAUDE_CODE_SKIP_FOUNDRY_AUTH: a gateway adds it)", ""
		}
		if n := set("ANTHROPIC_FOUNDRY_API_KEY"); n != "" {
			return n, ""
		}
		return "Azure's default credential chain (not checked)", ""
	}
	if n := set("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"); n != "" {
		return n, ""
	}
	if f := LoginFile(e); f != "" && hasLogin(f) {
		return "the Claude login in " + f, ""
	}
	if runtime.GOOS == "darwin" {
		return "the Claude login in the macOS keychain, if any (not checked)", ""
	}
	return "", "no credential found: set ANTHROPIC_API_KEY, or log in with `claude` then /login (kept in " + LoginFile(e) + ")"
}
