package secure

import (
	"slices"
	"strings"
)

// TokenEnv names the environment variables that may carry a forge token
// (IF-2). They are what Harden moves out of the environment.
var TokenEnv = []string{"CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"}

// TokenFlag is the command-line flag that may carry a token.
const TokenFlag = "--token"

// handoffEnv names the inherited descriptor the credentials arrive on
// after the re-exec. Its presence also marks the second start, so a
// process never re-execs twice.
const handoffEnv = "_CONVERGE_HANDOFF_FD"

// Start is converge's command line and credentials after Harden.
type Start struct {
	// Args is the command line as the user gave it, --token included: the
	// flag is parsed as before, only /proc no longer shows it.
	Args []string
	// Warning, when set, says why the token could not be hidden; the run
	// goes on as it would have without Harden.
	Warning string
	env     map[string]string
}

// Getenv looks the handed-over variables up first, then next, so token
// resolution sees what the user set although the environment no longer
// holds it.
func (s *Start) Getenv(next func(string) string) func(string) string {
	if s == nil || len(s.env) == 0 {
		return next
	}
	return func(k string) string {
		if v, ok := s.env[k]; ok {
			return v
		}
		return next(k)
	}
}

// payload is what crosses the pipe: the token variables, and the
// command-line words taken out, each with the index it had.
type payload struct {
	Env  map[string]string `json:"env,omitempty"`
	Args []argAt           `json:"args,omitempty"`
}

type argAt struct {
	At    int      `json:"at"`
	Words []string `json:"words"`
}

func (p *payload) empty() bool { return len(p.Env) == 0 && len(p.Args) == 0 }

// split takes the token variables out of environ and every --token out of
// args (before a "--", after which words are not flags).
func split(environ, args []string) (env, argv []string, p payload) {
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" && slices.Contains(TokenEnv, k) {
			if p.Env == nil {
				p.Env = map[string]string{}
			}
			p.Env[k] = v
			continue
		}
		env = append(env, kv)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case i == 0:
		case a == "--":
			argv = append(argv, args[i:]...)
			return env, argv, p
		case a == TokenFlag && i+1 < len(args):
			p.Args = append(p.Args, argAt{At: i, Words: []string{a, args[i+1]}})
			i++
			continue
		case strings.HasPrefix(a, TokenFlag+"="):
			p.Args = append(p.Args, argAt{At: i, Words: []string{a}})
			continue
		}
		argv = append(argv, a)
	}
	return env, argv, p
}

// restore puts the words split took out back where they were.
func (p *payload) restore(argv []string) []string {
	out := slices.Clone(argv)
	for _, a := range p.Args {
		if a.At < 0 || a.At > len(out) {
			a.At = len(out)
		}
		out = slices.Insert(out, a.At, a.Words...)
	}
	return out
}
