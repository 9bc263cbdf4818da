package checkloop

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/verify"
)

// Protected oracle inputs (LOOP-6). A glob is matched against a path
// relative to the repository root, with '/' separators:
//
//   - a glob without '/' matches the base name at any depth
//     ("*_test.go" matches "pkg/a_test.go");
//   - a glob with '/' is anchored at the root ("/check.sh", "scripts/*.sh");
//     a leading '/' only anchors;
//   - "**" is any number of path segments, "dir/" means "dir/**";
//   - within a segment, path.Match syntax (*, ?, [...]) and {a,b}
//     alternatives.

// MatchGlob reports whether the repository path p matches glob.
func MatchGlob(glob, p string) bool {
	for _, g := range expandBraces(glob) {
		if matchOne(g, p) {
			return true
		}
	}
	return false
}

func matchOne(glob, p string) bool {
	if strings.HasSuffix(glob, "/") {
		glob += "**"
	}
	if !strings.Contains(glob, "/") {
		glob = "**/" + glob
	}
	glob = strings.TrimPrefix(glob, "/")
	return matchSegs(strings.Split(glob, "/"), strings.Split(p, "/"))
}

func matchSegs(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			rest := g[1:]
			for i := 0; i <= len(p); i++ {
				if matchSegs(rest, p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], p[0]); err != nil || !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// expandBraces expands the first {a,b,...} of glob, recursively.
func expandBraces(glob string) []string {
	i := strings.IndexByte(glob, '{')
	if i < 0 {
		return []string{glob}
	}
	j := strings.IndexByte(glob[i:], '}')
	if j < 0 {
		return []string{glob}
	}
	j += i
	var out []string
	for _, alt := range strings.Split(glob[i+1:j], ",") {
		out = append(out, expandBraces(glob[:i]+alt+glob[j+1:])...)
	}
	return out
}

// ProtectedPaths are the paths of changed that a protect glob matches, in
// changed's order.
func ProtectedPaths(changed, globs []string) []string {
	var out []string
	for _, p := range changed {
		for _, g := range globs {
			if MatchGlob(g, p) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// protectedPaths are the paths of changed that cfg protects: its globs,
// and test infrastructure by name when ProtectInfra.
func protectedPaths(changed []string, cfg Config) []string {
	out := ProtectedPaths(changed, cfg.Protect)
	if cfg.ProtectInfra {
		for _, p := range changed {
			if verify.IsTestInfraName(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// ecosystems name a repository's test files by the manifests at its root
// (LOOP-6's default protection).
var ecosystems = []struct {
	manifests []string
	tests     []string
}{
	{[]string{"go.mod"}, []string{"*_test.go", "**/testdata/**"}},
	{[]string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "tox.ini", "pytest.ini"},
		[]string{"test_*.py", "*_test.py", "conftest.py", "**/tests/**"}},
	{[]string{"package.json"}, []string{"*.test.{js,jsx,ts,tsx,mjs,cjs,mts,cts}", "*.spec.{js,jsx,ts,tsx,mjs,cjs,mts,cts}", "**/__tests__/**"}},
	{[]string{"Cargo.toml"}, []string{"**/tests/**"}},
	{[]string{"pom.xml", "build.gradle", "build.gradle.kts"}, []string{"**/src/test/**"}},
	{[]string{"Gemfile"}, []string{"*_spec.rb", "*_test.rb", "**/spec/**", "**/test/**"}},
}

// DefaultProtect are the test files of the ecosystems whose manifests sit
// at dir's root, e.g. "*_test.go" for a Go module.
func DefaultProtect(dir string) []string {
	var out []string
	for _, e := range ecosystems {
		for _, m := range e.manifests {
			if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
				out = append(out, e.tests...)
				break
			}
		}
	}
	return dedupe(out)
}

// toolFiles are what a check run through a task runner reads its
// definition from.
var toolFiles = map[string][]string{
	"make": {"Makefile", "makefile", "GNUmakefile"},
	"just": {"justfile", "Justfile", ".justfile"},
	"task": {"Taskfile.yml", "Taskfile.yaml"},
	"npm":  {"package.json"}, "pnpm": {"package.json"}, "yarn": {"package.json"}, "bun": {"package.json"}, "npx": {"package.json"},
	"tox":    {"tox.ini"},
	"pytest": {"pytest.ini"},
}

// CheckNamedFiles are the repository files a check command names (LOOP-6:
// protected by default), as anchored globs: every word of the command
// that is a file or directory inside dir, and the file a task runner
// reads (make → Makefile, npm → package.json, …). A word counts when it
// looks like a path (it has a '/' or a '.').
func CheckNamedFiles(dir, cmdline string) []string {
	var out []string
	words := shellWords(cmdline)
	program := true // the next word that is not an assignment runs
	for _, w := range words {
		if isAssignment(w) {
			continue
		}
		if program {
			program = false
			for _, f := range toolFiles[filepath.Base(w)] {
				if st, err := os.Stat(filepath.Join(dir, f)); err == nil && !st.IsDir() {
					out = append(out, "/"+f)
				}
			}
		}
		// Only words that look like paths: "test" in `go test` is a
		// subcommand, not the directory test/.
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "$`*?[") || strings.Contains(w, "...") || !strings.ContainsAny(w, "/.") {
			continue
		}
		rel, ok := inside(dir, w)
		if !ok || rel == "." {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			continue
		}
		if st.IsDir() {
			out = append(out, "/"+rel+"/**")
		} else {
			out = append(out, "/"+rel)
		}
	}
	return dedupe(out)
}

// interpreters run a script named by their first argument.
var interpreters = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true,
	"python": true, "python3": true, "node": true, "ruby": true, "perl": true,
}

// SelfAuthored refuses a check with no outside path (LOOP-6): the program
// it runs, or the script an interpreter runs, is a path that does not
// exist before the loop starts, so only an iteration could author it.
func SelfAuthored(dir, cmdline string) error {
	words := shellWords(cmdline)
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	missing := func(w string) bool {
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_, err := os.Stat(p)
		return err != nil
	}
	prog := words[0]
	if strings.Contains(prog, "/") && !strings.ContainsAny(prog, "$`*?[") && missing(prog) {
		return fmt.Errorf("the done-check runs %s, which does not exist before the loop starts: a check the run would author itself cannot count (LOOP-6); commit it first", prog)
	}
	if !interpreters[filepath.Base(prog)] {
		return nil
	}
	for _, w := range words[1:] {
		if w == "-c" || w == "-e" || w == "-m" {
			return nil // the script is inline, or a module
		}
		if strings.HasPrefix(w, "-") {
			continue
		}
		if !strings.ContainsAny(w, "$`*?[") && missing(w) {
			return fmt.Errorf("the done-check runs the script %s, which does not exist before the loop starts: a check the run would author itself cannot count (LOOP-6); commit it first", w)
		}
		return nil
	}
	return nil
}

// inside returns w as a clean path relative to dir when it names a path
// inside dir.
func inside(dir, w string) (string, bool) {
	p := w
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// shellWords splits a command line into words the way sh would for plain
// words: quotes removed, operators (;&|<>()) as separators. It does not
// expand anything; words with expansions are kept as written.
func shellWords(s string) []string {
	var (
		words []string
		b     strings.Builder
		in    bool
	)
	flush := func() {
		if in {
			words = append(words, b.String())
		}
		b.Reset()
		in = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || strings.IndexByte(";&|<>()", c) >= 0:
			flush()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+j])
			in = true
			i += j + 1
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				j = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+j])
			in = true
			i += j + 1
		case c == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			in = true
			i++
		default:
			b.WriteByte(c)
			in = true
		}
	}
	flush()
	return words
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
