package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/crashpoint"
	"github.com/convergeloop/converge/internal/proc"
)

// EnvPrefix starts every variable converge reads.
const EnvPrefix = "CONVERGE_"

// otherEnv are the CONVERGE_* variables converge reads outside the
// settings table: the token (IF-2), the owner mark its own children carry
// (AG-K1), the model a command agent is given (AG-E1), the GitHub App.
var otherEnv = []string{"CONVERGE_TOKEN", proc.OwnerEnv, "CONVERGE_AGENT_MODEL",
	// GitHub App auth (SEC-5): the operator's, never a repository's.
	"CONVERGE_APP_ID", "CONVERGE_APP_KEY", "CONVERGE_APP_INSTALLATION",
	// converge serve's webhook secret and API token (SEC-4).
	"CONVERGE_WEBHOOK_SECRET", "CONVERGE_SERVE_TOKEN",
	// Treat stdout as a terminal: live status lines (UX-1).
	"CONVERGE_FORCE_TTY",
	// Directories contained agents may write besides their worktree
	// (SEC-7): a log directory of the user's own agent command.
	"CONVERGE_SANDBOX_WRITABLE"}

// toolingEnv are prefixes of the variables converge's own test and
// release tooling sets; a converge started under them inherits them.
var toolingEnv = []string{"CONVERGE_TEST_", "CONVERGE_CONTRACT_", "CONVERGE_SOAK_", "CONVERGE_REL1_", "CONVERGE_PROC_TEST_", "CONVERGE_GITHUB_SCHEMA_DIR", "CONVERGE_SPEC"}

// CheckEnv refuses a CONVERGE_* variable of environ that names no setting
// of fs and nothing else converge reads: a misspelt setting
// (CONVERGE_MAX_ITERATION=3) would otherwise be ignored without a word.
// The error names the variable, the nearest setting's, and the fix.
func CheckEnv(fs []Field, environ []string) error {
	if err := crashpoint.CheckEnv(environ); err != nil {
		return err
	}
	known := slices.Clone(otherEnv)
	for _, f := range fs {
		known = append(known, f.Env())
	}
	for _, b := range backends.Names() {
		b = EnvPrefix + strings.ToUpper(b)
		known = append(known, b+"_BIN", b+"_MODEL")
	}
	for _, kv := range environ {
		// An empty variable is an unset one, as Resolve reads it.
		name, val, _ := strings.Cut(kv, "=")
		if val == "" || !strings.HasPrefix(name, EnvPrefix) || slices.Contains(known, name) ||
			slices.ContainsFunc(toolingEnv, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		fix := "unset it (converge config lists the settings)"
		if near := nearest(name, known); near != "" {
			fix = "did you mean " + near + "? Rename or unset it"
		}
		return fmt.Errorf("unknown environment variable %s: it names no converge setting, so it would be ignored; %s", name, fix)
	}
	return nil
}

// nearest is the name of names closest to name by edit distance, when it
// is close enough to be a typo.
func nearest(name string, names []string) string {
	best, bestD := "", 4
	for _, n := range names {
		if d := distance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
