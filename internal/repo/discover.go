package repo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Commands are a repository's own build, test and lint commands (REPO-C1).
// A nil command means the repository names none: converge never invents
// one.
type Commands struct {
	Test, Build, Lint []string
	// Why says, per kind ("test", "build", "lint"), which file and rule
	// decided, or that nothing matched; `converge doctor` prints it.
	Why map[string]string
}

// Command kinds, the keys of Commands.Why.
const (
	KindTest  = "test"
	KindBuild = "build"
	KindLint  = "lint"
)

var kinds = []string{KindTest, KindBuild, KindLint}

// Discover finds dir's commands. For each kind the first source that names
// one wins, in this order:
//  1. AGENTS.md, CONTRIBUTING.md, then README.md: the first line of a shell
//     code block (```sh, bash, shell, console, zsh or unlabelled) that is a
//     recognisable command of that kind; in README.md the block must sit
//     under a heading that names the kind, since READMEs also show install
//     and usage commands;
//  2. Makefile targets test, build, lint (`make test`);
//  3. justfile recipes (`just test`), then Taskfile tasks (`task test`);
//  4. package.json scripts (`npm test`, `npm run build`, `npm run lint`;
//     pnpm or yarn when their lockfile is present); npm's placeholder
//     "no test specified" script does not count;
//  5. the ecosystem's standard command for a manifest: go.mod (`go test
//     ./...`, `go build ./...`, `go vet ./...`), Cargo.toml (`cargo test`,
//     `cargo build`), pyproject.toml or setup.py (`pytest`).
func Discover(dir string) Commands {
	c := Commands{Why: map[string]string{}}
	set := func(kind string, argv []string, why string) {
		if argv == nil || c.Why[kind] != "" {
			return
		}
		switch kind {
		case KindTest:
			c.Test = argv
		case KindBuild:
			c.Build = argv
		case KindLint:
			c.Lint = argv
		}
		c.Why[kind] = why
	}
	sources := []func(dir string, set func(kind string, argv []string, why string)){
		func(d string, s func(string, []string, string)) { fromDoc(d, "AGENTS.md", false, s) },
		func(d string, s func(string, []string, string)) { fromDoc(d, "CONTRIBUTING.md", false, s) },
		func(d string, s func(string, []string, string)) { fromDoc(d, "README.md", true, s) },
		fromMakefile,
		fromJustfile,
		fromTaskfile,
		fromPackageJSON,
		fromManifests,
	}
	for _, src := range sources {
		src(dir, set)
	}
	for _, k := range kinds {
		if c.Why[k] == "" {
			c.Why[k] = "none found: no " + k + " command in AGENTS.md, CONTRIBUTING.md, README.md, Makefile, justfile, Taskfile, package.json, or a go.mod/Cargo.toml/pyproject.toml/setup.py manifest"
		}
	}
	return c
}

// docPatterns recognise a command line of each kind in documentation.
var docPatterns = map[string]*regexp.Regexp{
	KindTest:  regexp.MustCompile(`^(make (.* )?(test|check)\b|go test\b|gotestsum\b|(npm|pnpm|yarn|bun) (run )?test\b|npx (jest|vitest)\b|(python3? -m )?pytest\b|tox\b|nox\b|cargo (nextest run|test)\b|just test\b|task test\b|mvn .*\b(test|verify)\b|(\./gradlew|gradle) .*\b(test|check)\b|bundle exec (rspec|rake test)\b|rake test\b|dotnet test\b|ctest\b|mix test\b)`),
	KindBuild: regexp.MustCompile(`^(make (.* )?build\b|go build\b|(npm|pnpm|yarn|bun) run build\b|cargo build\b|just build\b|task build\b|mvn .*\b(package|compile|install)\b|(\./gradlew|gradle) .*\b(build|assemble)\b|dotnet build\b|cmake --build\b)`),
	KindLint:  regexp.MustCompile(`^(make (.* )?(lint|vet)\b|go vet\b|golangci-lint\b|staticcheck\b|(npm|pnpm|yarn|bun) run lint\b|npx eslint\b|eslint\b|cargo clippy\b|ruff( check)?\b|flake8\b|pylint\b|mypy\b|just lint\b|task lint\b|rubocop\b)`),
}

var headingWords = map[string][]string{
	KindTest:  {"test"},
	KindBuild: {"build", "compil"},
	KindLint:  {"lint", "vet", "static analysis", "style"},
}

var shellInfo = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true, "zsh": true, "shell-session": true}

func fromDoc(dir, name string, needHeading bool, set func(string, []string, string)) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return
	}
	defer f.Close()
	var (
		heading string
		fence   string // the opening fence while inside a block
		shell   bool
		lineNo  int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lineNo++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if fence == "" {
			if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
				fence = line[:3]
				info := strings.ToLower(strings.TrimSpace(strings.Trim(line, "`~")))
				info, _, _ = strings.Cut(info, " ")
				shell = shellInfo[strings.Trim(info, "{}.")]
				continue
			}
			if strings.HasPrefix(line, "#") {
				heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			}
			continue
		}
		if strings.HasPrefix(line, fence) {
			fence = ""
			continue
		}
		if !shell {
			continue
		}
		cmd := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, "$"), " "))
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		for _, k := range kinds {
			if !docPatterns[k].MatchString(stripEnvAssign(cmd)) {
				continue
			}
			if needHeading && !headingNames(heading, k) {
				continue
			}
			where := "a code block"
			if heading != "" {
				where = fmt.Sprintf("a code block under %q", heading)
			}
			set(k, shellArgv(cmd), fmt.Sprintf("%s:%d: %s names `%s`", name, lineNo, where, cmd))
		}
	}
}

func headingNames(heading, kind string) bool {
	h := strings.ToLower(heading)
	for _, w := range headingWords[kind] {
		if strings.Contains(h, w) {
			return true
		}
	}
	return false
}

// shellArgv splits a simple command line; anything using shell syntax
// runs through sh -c so that it means what the document says.
func shellArgv(line string) []string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	fields := strings.Fields(line)
	if strings.ContainsAny(line, "|&;<>()$`*?[]{}~\\\"'") || len(fields) > 0 && envAssign.MatchString(fields[0]) {
		return []string{"sh", "-c", line}
	}
	return fields
}

// envAssign matches a leading VAR=value word of a command line.
var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// stripEnvAssign drops leading VAR=value words, to recognise the command.
func stripEnvAssign(line string) string {
	for {
		f, rest, _ := strings.Cut(line, " ")
		if !envAssign.MatchString(f) || rest == "" {
			return line
		}
		line = strings.TrimSpace(rest)
	}
}

var makeTarget = regexp.MustCompile(`^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*::?(?:[^=]|$)`)

func fromMakefile(dir string, set func(string, []string, string)) {
	for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		targets := map[string]int{}
		for i, l := range strings.Split(string(b), "\n") {
			if m := makeTarget.FindStringSubmatch(l); m != nil {
				for _, t := range strings.Fields(m[1]) {
					if _, ok := targets[t]; !ok {
						targets[t] = i + 1
					}
				}
			}
		}
		for _, k := range kinds {
			if n, ok := targets[k]; ok {
				set(k, []string{"make", k}, fmt.Sprintf("%s:%d: target %q", name, n, k))
			}
		}
		return // make reads only the first of these it finds
	}
}

var justRecipe = regexp.MustCompile(`^@?([A-Za-z0-9_-]+)(?:[ \t][^:=]*)?:(?:[^=]|$)`)

func fromJustfile(dir string, set func(string, []string, string)) {
	for _, name := range []string{"justfile", "Justfile", ".justfile"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				continue
			}
			m := justRecipe.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			for _, k := range kinds {
				if m[1] == k {
					set(k, []string{"just", k}, fmt.Sprintf("%s:%d: recipe %q", name, i+1, k))
				}
			}
		}
		return
	}
}

var yamlKey = regexp.MustCompile(`^([ \t]*)([A-Za-z0-9_:.-]+|"[^"]+"|'[^']+'):(?:[ \t]|$)`)

// fromTaskfile reads task names from a Taskfile without a YAML parser:
// the keys one level below the top-level "tasks:" key.
func fromTaskfile(dir string, set func(string, []string, string)) {
	for _, name := range []string{"Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml", "Taskfile.dist.yml", "Taskfile.dist.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		inTasks, indent := false, ""
		for i, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			m := yamlKey.FindStringSubmatch(l)
			if m == nil {
				if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
					inTasks = false
				}
				continue
			}
			if m[1] == "" {
				inTasks = m[2] == "tasks"
				indent = ""
				continue
			}
			if !inTasks {
				continue
			}
			if indent == "" {
				indent = m[1]
			}
			if m[1] != indent {
				continue
			}
			key := strings.Trim(m[2], `"'`)
			for _, k := range kinds {
				if key == k {
					set(k, []string{"task", k}, fmt.Sprintf("%s:%d: task %q", name, i+1, k))
				}
			}
		}
		return
	}
}

func fromPackageJSON(dir string, set func(string, []string, string)) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return
	}
	pm, why := "npm", ""
	for _, l := range []struct{ file, pm string }{{"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"}} {
		if _, err := os.Stat(filepath.Join(dir, l.file)); err == nil {
			pm, why = l.pm, " (run with "+l.pm+": "+l.file+")"
			break
		}
	}
	names := make([]string, 0, len(pkg.Scripts))
	for n := range pkg.Scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, k := range kinds {
		script, ok := pkg.Scripts[k]
		if !ok || strings.TrimSpace(script) == "" {
			continue
		}
		if k == KindTest && strings.Contains(script, "no test specified") {
			continue // npm init's placeholder fails by design
		}
		argv := []string{pm, "run", k}
		if k == KindTest {
			argv = []string{pm, "test"}
		}
		set(k, argv, fmt.Sprintf("package.json: script %q%s", k, why))
	}
}

func fromManifests(dir string, set func(string, []string, string)) {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	if exists("go.mod") {
		set(KindTest, []string{"go", "test", "./..."}, "go.mod: the Go standard `go test ./...`")
		set(KindBuild, []string{"go", "build", "./..."}, "go.mod: the Go standard `go build ./...`")
		set(KindLint, []string{"go", "vet", "./..."}, "go.mod: the Go standard `go vet ./...`")
	}
	if exists("Cargo.toml") {
		set(KindTest, []string{"cargo", "test"}, "Cargo.toml: the Rust standard `cargo test`")
		set(KindBuild, []string{"cargo", "build"}, "Cargo.toml: the Rust standard `cargo build`")
	}
	for _, m := range []string{"pyproject.toml", "setup.py"} {
		if exists(m) {
			set(KindTest, []string{"pytest"}, m+": the Python standard `pytest`")
			break
		}
	}
}
