package census

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Plan is how to run a test command so that its ecosystem reports its
// tests: Detect's answer.
type Plan struct {
	// Ecosystem is the runner proven from the command; Unknown when none
	// could be, and then Why says why and Argv is the command unchanged.
	Ecosystem Ecosystem
	Why       string
	// Argv is the command to run: the given one with the flags that make
	// the runner report (go test -json, pytest --junitxml, …).
	Argv []string
	// Env are variables to add to the command's environment; a variable
	// the environment already has gets the value appended after a space
	// (GOFLAGS, PYTEST_ADDOPTS through make).
	Env []string
	// Report is the file the runner writes its report to; "" when the
	// census is read from the output (go test -json, cargo test).
	Report string
	// Dir is the directory the command runs in: Jest's and Vitest's test
	// files are named relative to it.
	Dir string
}

// Detect says how to run argv in dir so that its tests can be counted,
// the report (if any) written under reportDir, outside the worktree.
//
// It recognises, from argv alone and from what it names in dir:
//   - `go test …` (adds -json);
//   - `pytest …`, `py.test …`, `python[3] -m pytest …`, and those under
//     `uv run` or `poetry run` (adds --junitxml=FILE);
//   - `jest …`, `vitest …`, under `npx`, or node_modules/.bin/ (Jest:
//     --json --outputFile=FILE; Vitest: the default and json reporters,
//     --outputFile.json=FILE);
//   - `npm test` / `npm run test` when package.json's test script is one
//     plain jest or vitest command (the flags go after `--`);
//   - `cargo test …` without --quiet (its plain verdict lines);
//   - `make TARGET` when the target has no prerequisites and its recipe is
//     one plain go test, pytest or cargo test line (GOFLAGS=-json,
//     PYTEST_ADDOPTS=--junitxml=FILE in the environment);
//   - any of these as the one plain command of `sh -c '…'`, with VAR=value
//     prefixes.
//
// "Plain" is a command with no shell syntax besides words: no variables,
// quotes, pipes, redirections, lists or globs — what it runs is then what
// its words say. Anything else is Unknown: the command runs unchanged and
// its census is not taken.
func Detect(dir string, argv []string, reportDir string) Plan {
	p := detect(dir, argv, reportDir, 0)
	p.Dir = dir
	if p.Ecosystem == Unknown {
		p.Argv = argv
		p.Env, p.Report = nil, ""
	}
	return p
}

func detect(dir string, argv []string, reportDir string, depth int) Plan {
	no := func(why string) Plan { return Plan{Why: why, Argv: argv} }
	if len(argv) == 0 {
		return no("no test command")
	}
	if depth > 2 {
		return no("the test command wraps too many commands to follow")
	}
	prog := filepath.Base(argv[0])
	switch {
	case isShell(prog) && len(argv) >= 2 && argv[1] == "-c":
		if len(argv) != 3 {
			return no("a shell command with positional arguments")
		}
		words, ok := plainWords(argv[2])
		if !ok {
			return no("the shell command is not one plain command (it has shell syntax: variables, quotes, pipes, lists or redirections)")
		}
		assigns, cmd := splitAssigns(words)
		p := detect(dir, cmd, reportDir, depth+1)
		if p.Ecosystem == Unknown {
			return no(p.Why)
		}
		p.Argv = []string{argv[0], "-c", strings.Join(append(append([]string(nil), assigns...), quoteAll(p.Argv)...), " ")}
		return p
	case prog == "go":
		if len(argv) < 2 || argv[1] != "test" {
			return no("a go command other than go test")
		}
		if has(argv, "-json") || has(argv, "-json=true") {
			return Plan{Ecosystem: Go, Argv: argv}
		}
		out := append([]string{argv[0], "test", "-json"}, argv[2:]...)
		return Plan{Ecosystem: Go, Argv: out}
	case prog == "pytest" || prog == "py.test":
		return pytestPlan(argv, reportDir)
	case pythonExe.MatchString(prog) && len(argv) >= 3 && argv[1] == "-m" && argv[2] == "pytest":
		return pytestPlan(argv, reportDir)
	case (prog == "uv" || prog == "poetry") && len(argv) >= 3 && argv[1] == "run":
		p := detect(dir, argv[2:], reportDir, depth+1)
		if p.Ecosystem != Pytest {
			return no("a " + prog + " run command other than pytest")
		}
		p.Argv = append([]string{argv[0], "run"}, p.Argv...)
		return p
	case prog == "npx" && len(argv) >= 2:
		p := detect(dir, argv[1:], reportDir, depth+1)
		if p.Ecosystem != Jest && p.Ecosystem != Vitest {
			return no("an npx command other than jest or vitest")
		}
		p.Argv = append([]string{argv[0]}, p.Argv...)
		return p
	case prog == "jest":
		report := filepath.Join(reportDir, "jest.json")
		return Plan{Ecosystem: Jest, Argv: append(append([]string(nil), argv...), "--json", "--outputFile="+report), Report: report}
	case prog == "vitest":
		report := filepath.Join(reportDir, "vitest.json")
		return Plan{Ecosystem: Vitest, Argv: append(append([]string(nil), argv...),
			"--reporter=default", "--reporter=json", "--outputFile.json="+report), Report: report}
	case prog == "npm":
		return npmPlan(dir, argv, reportDir, depth)
	case prog == "cargo":
		if len(argv) < 2 || argv[1] != "test" {
			return no("a cargo command other than cargo test")
		}
		for _, a := range argv[2:] {
			if a == "-q" || a == "--quiet" || strings.HasPrefix(a, "--format") || a == "--list" {
				return no("cargo test " + a + " prints no verdict line per test")
			}
		}
		return Plan{Ecosystem: Cargo, Argv: argv}
	case prog == "make":
		return makePlan(dir, argv, reportDir, depth)
	}
	return no("no census for " + prog + ": the census is taken for go test, pytest, jest, vitest, npm test, cargo test and make targets running one of them")
}

var pythonExe = regexp.MustCompile(`^python(3(\.\d+)?)?$`)

func isShell(prog string) bool { return prog == "sh" || prog == "bash" || prog == "dash" }

func pytestPlan(argv []string, reportDir string) Plan {
	report := filepath.Join(reportDir, "pytest.xml")
	return Plan{Ecosystem: Pytest, Argv: append(append([]string(nil), argv...), "--junitxml="+report), Report: report}
}

// npmPlan follows `npm test` to package.json's test script when that is
// one plain jest or vitest command; npm passes what follows `--` to it.
func npmPlan(dir string, argv []string, reportDir string, depth int) Plan {
	no := func(why string) Plan { return Plan{Why: why, Argv: argv} }
	rest := argv[1:]
	switch {
	case len(rest) >= 1 && (rest[0] == "test" || rest[0] == "t" || rest[0] == "tst"):
		rest = rest[1:]
	case len(rest) >= 2 && (rest[0] == "run" || rest[0] == "run-script") && rest[1] == "test":
		rest = rest[2:]
	default:
		return no("an npm command other than npm test")
	}
	if len(rest) > 0 && rest[0] != "--" {
		return no("npm test with npm options")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return no("npm test without a readable package.json")
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(raw, &pkg) != nil {
		return no("package.json does not parse")
	}
	if pkg.Scripts["pretest"] != "" || pkg.Scripts["posttest"] != "" {
		return no("package.json has pretest or posttest scripts")
	}
	words, ok := plainWords(pkg.Scripts["test"])
	if !ok || len(words) == 0 {
		return no("package.json's test script is not one plain command")
	}
	inner := detect(dir, words, reportDir, depth+1)
	if inner.Ecosystem != Jest && inner.Ecosystem != Vitest {
		return no("package.json's test script is not a jest or vitest command")
	}
	added := inner.Argv[len(words):]
	out := append([]string(nil), argv...)
	if len(rest) == 0 {
		out = append(out, "--")
	}
	inner.Argv = append(out, added...)
	return inner
}

// makePlan follows `make TARGET` to its recipe when that is one plain
// go test, pytest or cargo test line, and the target has no prerequisites
// (whose recipes the environment would reach too).
func makePlan(dir string, argv []string, reportDir string, depth int) Plan {
	no := func(why string) Plan { return Plan{Why: why, Argv: argv} }
	target := ""
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") || target != "" {
			return no("make with options, variables or more than one target")
		}
		target = a
	}
	if target == "" {
		return no("make without a target")
	}
	recipe, why := makeRecipe(dir, target)
	if why != "" {
		return no(why)
	}
	words, ok := plainWords(recipe)
	if !ok {
		return no("the recipe of make " + target + " is not one plain command")
	}
	inner := detect(dir, words, reportDir, depth+1)
	p := Plan{Ecosystem: inner.Ecosystem, Argv: argv, Report: inner.Report}
	switch inner.Ecosystem {
	case Go:
		p.Env = []string{"GOFLAGS=-json"}
	case Pytest:
		p.Env = []string{"PYTEST_ADDOPTS=--junitxml=" + inner.Report}
	case Cargo:
	default:
		return no("the recipe of make " + target + " is not go test, pytest or cargo test")
	}
	return p
}

var makeRule = regexp.MustCompile(`^([A-Za-z0-9_.\-/ ]+?)\s*(::?)(.*)$`)

// makeRecipe is the one recipe line of target in dir's makefile.
func makeRecipe(dir, target string) (string, string) {
	var f *os.File
	for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
		var err error
		if f, err = os.Open(filepath.Join(dir, name)); err == nil {
			break
		}
	}
	if f == nil {
		return "", "no makefile"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var (
		in      bool
		found   int
		recipe  []string
		include bool
	)
	for sc.Scan() {
		l := sc.Text()
		if in && strings.HasPrefix(l, "\t") {
			if r := strings.TrimSpace(l); r != "" && !strings.HasPrefix(r, "#") {
				recipe = append(recipe, strings.TrimLeft(r, "@-+ "))
			}
			continue
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		in = false
		if strings.HasPrefix(l, "include ") || strings.HasPrefix(l, "-include ") || strings.HasPrefix(l, "sinclude ") {
			include = true
		}
		m := makeRule.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[3], "=") {
			continue
		}
		for _, t := range strings.Fields(m[1]) {
			if t != target {
				continue
			}
			found++
			in = true
			prereqs, inline, _ := strings.Cut(m[3], ";")
			if strings.TrimSpace(prereqs) != "" || m[2] == "::" {
				return "", "make " + target + " has prerequisites"
			}
			if r := strings.TrimSpace(inline); r != "" {
				recipe = append(recipe, r)
			}
		}
	}
	switch {
	case include:
		return "", "the makefile includes others"
	case found == 0:
		return "", "no rule for make " + target
	case found > 1:
		return "", "more than one rule for make " + target
	case len(recipe) != 1:
		return "", "the recipe of make " + target + " is not one line"
	}
	return recipe[0], ""
}

// plainWords splits s into words when it is one plain command: nothing
// but words, spaces and VAR=value prefixes.
func plainWords(s string) ([]string, bool) {
	if strings.ContainsAny(s, "$`'\"\\;&|<>(){}*?[]!#~\n\r") {
		return nil, false
	}
	return strings.Fields(s), true
}

var assignWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func splitAssigns(words []string) (assigns, cmd []string) {
	i := 0
	for i < len(words) && assignWord.MatchString(words[i]) {
		i++
	}
	return words[:i], words[i:]
}

// quoteAll quotes for sh the words that need it (a report path).
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if _, ok := plainWords(w); ok && w != "" && !strings.ContainsAny(w, " \t") {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return out
}

func has(argv []string, s string) bool {
	for _, a := range argv {
		if a == s {
			return true
		}
	}
	return false
}
