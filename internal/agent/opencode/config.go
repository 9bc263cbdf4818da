package opencode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// What converge reads of the user's own OpenCode configuration: the
// variables its {env:NAME} references name (passed to a run, as OpenCode
// substitutes them), each provider's base URL (the endpoint an error
// names), the model it selects, and the credentials `opencode auth login`
// keeps. The files are OpenCode's (its config.ts): the global
// $XDG_CONFIG_HOME/opencode/{config.json,opencode.json,opencode.jsonc}, the
// file OPENCODE_CONFIG names, ~/.opencode and OPENCODE_CONFIG_DIR's
// opencode.json(c), and OPENCODE_CONFIG_CONTENT; all may be JSONC.
//
// A project's opencode.json in the worktree is read for the base URL and
// the model only: it is the pull request's content, so the variables it
// names do not pass unless the user names them (agent_env) — a PR could
// otherwise ask for any secret of converge's environment and send it to a
// URL of its choosing (SEC-2, SEC-6).

// configSource is one OpenCode configuration and where it came from.
type configSource struct {
	from string // a path, or an environment variable's name
	cfg  map[string]any
	// user: the user's own configuration (its {env:} references pass),
	// not the project's.
	user bool
}

// envRef is OpenCode's {env:NAME} substitution in a configuration.
var envRef = regexp.MustCompile(`\{env:([^}\s]+)\}`)

// userConfigs are the user's own configurations OpenCode loads in the
// environment env (the run's: its HOME is the one OpenCode sees), lowest
// precedence first; converge's own Options.Config is not among them.
func userConfigs(env map[string]string) []configSource {
	var out []configSource
	add := func(from string, user bool) {
		b, err := os.ReadFile(from)
		if err != nil {
			return
		}
		if cfg, err := parseJSONC(b); err == nil {
			out = append(out, configSource{from: from, cfg: cfg, user: user})
		}
	}
	home := env["HOME"]
	cfgHome := env["XDG_CONFIG_HOME"]
	if cfgHome == "" && home != "" {
		cfgHome = filepath.Join(home, ".config")
	}
	if cfgHome != "" {
		for _, name := range []string{"config.json", "opencode.json", "opencode.jsonc"} {
			add(filepath.Join(cfgHome, "opencode", name), true)
		}
	}
	if p := env["OPENCODE_CONFIG"]; p != "" {
		add(p, true)
	}
	if home != "" {
		for _, name := range []string{"opencode.json", "opencode.jsonc"} {
			add(filepath.Join(home, ".opencode", name), true)
		}
	}
	if d := env["OPENCODE_CONFIG_DIR"]; d != "" {
		for _, name := range []string{"opencode.json", "opencode.jsonc"} {
			add(filepath.Join(d, name), true)
		}
	}
	if c := env["OPENCODE_CONFIG_CONTENT"]; c != "" {
		if cfg, err := parseJSONC([]byte(c)); err == nil {
			out = append(out, configSource{from: "OPENCODE_CONFIG_CONTENT", cfg: cfg, user: true})
		}
	}
	return out
}

// projectConfigs are the project's configurations in dir and the
// directories above it up to the repository's root (OpenCode's
// findUp), nearest last.
func projectConfigs(dir string) []configSource {
	if dir == "" {
		return nil
	}
	var found []configSource
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range []string{"opencode.jsonc", "opencode.json", filepath.Join(".opencode", "opencode.jsonc"), filepath.Join(".opencode", "opencode.json")} {
			p := filepath.Join(d, name)
			if b, err := os.ReadFile(p); err == nil {
				if cfg, err := parseJSONC(b); err == nil {
					found = append(found, configSource{from: p, cfg: cfg})
				}
			}
		}
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil || filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(found)
	return found
}

// refs are the variable names cfg's {env:NAME} references name.
func refs(cfg map[string]any) []string {
	b, _ := json.Marshal(cfg)
	var out []string
	for _, m := range envRef.FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// lookup is the string at path in cfg ("provider", "anthropic",
// "options", "baseURL"), "" when there is none.
func lookup(cfg map[string]any, path ...string) string {
	var v any = cfg
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// expand substitutes OpenCode's {env:NAME} and the catalogue's ${NAME}
// with values of env.
func expand(s string, env map[string]string) string {
	s = envRef.ReplaceAllStringFunc(s, func(m string) string { return env[envRef.FindStringSubmatch(m)[1]] })
	return os.Expand(s, func(name string) string { return env[name] })
}

// merge lays over onto base, maps merged key by key (OpenCode merges its
// configurations so), and returns base.
func merge(base, over map[string]any) map[string]any {
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = merge(bm, om)
				continue
			}
			cp := map[string]any{}
			base[k] = merge(cp, om)
			continue
		}
		base[k] = v
	}
	return base
}

// parseJSONC reads a JSON object with comments (// and /* */) and
// trailing commas, as OpenCode's configuration files may have them.
func parseJSONC(b []byte) (map[string]any, error) {
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out.WriteByte(c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && (b[i] != '*' || b[i+1] != '/') {
				i++
			}
			i++
		case c == ',':
			// A comma before a closing bracket is dropped.
			j := i + 1
			for j < len(b) && strings.ContainsRune(" \t\r\n", rune(b[j])) {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				continue
			}
			out.WriteByte(c)
		default:
			out.WriteByte(c)
		}
	}
	var cfg map[string]any
	if err := json.Unmarshal(out.Bytes(), &cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// envMap is a KEY=VALUE list as a map, a later entry winning.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// authFile is where `opencode auth login` keeps credentials in the
// environment env: $XDG_DATA_HOME/opencode/auth.json, else
// ~/.local/share/opencode/auth.json.
func authFile(env map[string]string) string {
	data := env["XDG_DATA_HOME"]
	if data == "" {
		if env["HOME"] == "" {
			return ""
		}
		data = filepath.Join(env["HOME"], ".local", "share")
	}
	return filepath.Join(data, "opencode", "auth.json")
}

// authProviders are the providers auth.json at path holds a credential
// for, sorted; never the credentials.
func authProviders(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []string
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
