package agent

import (
	"regexp"
	"slices"
	"strings"
)

// safeEnv is what an agent subprocess needs to build and test code and
// nothing that authenticates anywhere. A trailing '*' matches a prefix.
var safeEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ",
	"LANG", "LANGUAGE", "LC_*",
	"TMPDIR", "TMP", "TEMP",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	// Go toolchain.
	"GOCACHE", "GOPATH", "GOFLAGS", "GOMODCACHE", "GOPROXY", "GOPRIVATE",
	"GONOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOTOOLCHAIN", "GOROOT",
	"GOOS", "GOARCH", "GOTMPDIR", "CGO_ENABLED", "CC", "CXX",
	// JavaScript, Rust, Python, Java toolchains.
	"NODE_*", "npm_config_*", "NPM_CONFIG_*", "COREPACK_*",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"VIRTUAL_ENV", "PYTHONPATH", "PIP_*", "UV_*",
	"JAVA_HOME",
	// Networks that need a proxy or a private CA.
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"CI",
}

// secretMarkers catch credentials by name even when a safe prefix admits
// them (NODE_AUTH_TOKEN, npm_config__authToken, PIP_PASSWORD …).
var secretMarkers = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "_AUTH", "PRIVATE_KEY"}

// isSecretName reports whether an environment variable name looks like it
// holds a credential: GH_TOKEN, GITHUB_TOKEN, CONVERGE_TOKEN,
// GH_ENTERPRISE_TOKEN, *_TOKEN, *_SECRET, *_KEY, *PASSWORD* and kin.
func isSecretName(name string) bool {
	u := strings.ToUpper(name)
	if strings.HasSuffix(u, "_KEY") || strings.HasSuffix(u, "APIKEY") {
		return true
	}
	for _, m := range secretMarkers {
		if strings.Contains(u, m) {
			return true
		}
	}
	return false
}

// LooksLikeCredential reports whether a variable's name says it holds a
// credential (…_TOKEN, …_KEY, …SECRET…, …PASSWORD…).
func LooksLikeCredential(name string) bool { return isSecretName(name) }

func matchName(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// ScrubEnv returns the environment an agent subprocess may see (AG-B1,
// SEC-2): the entries of environ named by a built-in allowlist of toolchain
// and locale variables, plus those named in allow. An allow entry ending in
// '*' is a prefix. Names that look like credentials (see isSecretName) are
// dropped even when the allowlist or an allow prefix admits them; only an
// exact name in allow passes one through — that is how a backend hands an
// agent its own model API key, or a user configures the forge token for an
// agent. Order is kept; malformed entries are dropped.
func ScrubEnv(environ []string, allow ...string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if slices.Contains(allow, name) {
			out = append(out, kv)
			continue
		}
		if isSecretName(name) {
			continue
		}
		admitted := slices.ContainsFunc(safeEnv, func(p string) bool { return matchName(p, name) }) ||
			slices.ContainsFunc(allow, func(p string) bool { return matchName(p, name) })
		if admitted {
			out = append(out, kv)
		}
	}
	return out
}

// RedactedText replaces every secret Redact removes.
const RedactedText = "[REDACTED]"

// tokenShapes are credentials recognisable without being told: GitHub
// tokens of every kind, and model providers' API keys a CLI's error may
// echo ("invalid x-api-key sk-ant-…": Anthropic's and OpenAI's sk-…,
// Google's AIza…). The value part of URL userinfo is urlUserinfo's.
var tokenShapes = regexp.MustCompile(
	`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b|\bsk-[A-Za-z0-9_-]{16,}|\bAIza[0-9A-Za-z_-]{30,}`)

var urlUserinfo = regexp.MustCompile(`(://[^\s/:@]+:)[^\s/@]+@`)

// Redact removes secrets from s before it reaches a log, a comment, the
// store or an error message (SEC-3): each given secret (longest first, so a
// secret containing another is removed whole), GitHub token shapes, and
// passwords in URLs.
func Redact(s string, secrets ...string) string {
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range sorted {
		if strings.TrimSpace(sec) == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, RedactedText)
	}
	s = tokenShapes.ReplaceAllString(s, RedactedText)
	return urlUserinfo.ReplaceAllString(s, "${1}"+RedactedText+"@")
}

// WithoutValues is environ without the entries whose value is one of
// secrets (SEC-2): a forge token copied into a variable of any name never
// reaches an agent, whatever agent_env or a backend names. Blank secrets
// match nothing.
func WithoutValues(environ, secrets []string) []string {
	drop := map[string]bool{}
	for _, s := range secrets {
		if strings.TrimSpace(s) != "" {
			drop[s] = true
		}
	}
	if len(drop) == 0 {
		return environ
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if _, v, ok := strings.Cut(kv, "="); ok && drop[v] {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// forgeTokens are the values of environ's forge token variables
// (ForgeTokenNames).
func forgeTokens(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if name, v, ok := strings.Cut(kv, "="); ok && v != "" && slices.Contains(ForgeTokenNames, name) {
			out = append(out, v)
		}
	}
	return out
}

// EnvValue is the value of name in env (KEY=VALUE entries), the last
// entry winning as it does for a process; "" when unset.
func EnvValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
