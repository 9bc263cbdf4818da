package repo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Bounds of TestInfra's reading: a hostile repository cannot make it
// read without end.
const (
	maxInfraFiles  = 200
	maxScriptBytes = 256 << 10
	maxGoFiles     = 5000
)

// TestInfra are the files of the repository at dir that the test command
// test and the tests read but the code under test does not, beyond what
// their names say (PR-V4's test infrastructure; verify.IsTestInfraName
// knows the names): the scripts the command, the makefiles' and
// justfile's recipes, package.json's test scripts and those scripts run
// or source, the makefiles they include, and the Go packages that only
// tests import and that have no tests of their own (an assertion helper).
// Paths are relative to dir, with '/' separators, sorted.
func TestInfra(dir string, test []string) []string {
	found := map[string]bool{}
	var queue []string // files to read for more
	addFile := func(rel string) {
		if len(found) >= maxInfraFiles || found[rel] {
			return
		}
		found[rel] = true
		queue = append(queue, rel)
	}
	var texts []string
	if len(test) > 0 {
		texts = append(texts, strings.Join(test, " "))
	}
	for _, name := range []string{"Makefile", "makefile", "GNUmakefile", "justfile", "Justfile", ".justfile"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
			addFile(name)
		}
	}
	texts = append(texts, packageTestScripts(dir)...)
	for _, t := range texts {
		for _, rel := range scriptWords(dir, t, false) {
			addFile(rel)
		}
	}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		b, err := readBounded(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		mk := isMakefile(rel)
		for _, w := range scriptWords(dir, string(b), mk) {
			addFile(w)
		}
	}
	for _, rel := range goTestOnlyPackages(dir) {
		found[rel] = true
	}
	out := make([]string, 0, len(found))
	for rel := range found {
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

func isMakefile(rel string) bool {
	b := strings.ToLower(path.Base(rel))
	return b == "makefile" || b == "gnumakefile" || strings.HasSuffix(b, ".mk")
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxScriptBytes))
}

// runners run or source the file named by their next word.
var runners = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "source": true, ".": true,
	"python": true, "python3": true, "node": true, "ruby": true, "perl": true,
}

// scriptWords are the files inside dir that text runs, sources or (a
// makefile) includes: a word after a shell or an interpreter, a word that
// is a path to an executable or a shell script ("./scripts/test",
// "ci/run.sh"), an include directive's words, make's -f file.
func scriptWords(dir, text string, makefile bool) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.FieldsFunc(line, func(r rune) bool {
			return r == ' ' || r == '\t' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')' || r == '"' || r == '\'' || r == '`' || r == '@'
		})
		include := makefile && len(words) > 0 && (words[0] == "include" || words[0] == "-include" || words[0] == "sinclude")
		for i, w := range words {
			after := i > 0 && (runners[words[i-1]] || words[i-1] == "-f" && i > 1 && path.Base(words[i-2]) == "make")
			if strings.ContainsAny(w, "$*?[]{}<>=") || strings.HasPrefix(w, "-") {
				continue
			}
			rel, ok := insideDir(dir, w)
			if !ok {
				continue
			}
			st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			switch {
			case include && i > 0, after:
				out = append(out, rel)
			case strings.Contains(w, "/") && (st.Mode()&0o111 != 0 || isShellScript(rel)):
				out = append(out, rel)
			}
		}
	}
	return out
}

func isShellScript(rel string) bool {
	switch path.Ext(rel) {
	case ".sh", ".bash", ".zsh", ".ksh", ".mk", ".make":
		return true
	}
	return false
}

// insideDir is w as a clean path relative to dir, when it names a place
// inside it.
func insideDir(dir, w string) (string, bool) {
	if w == "" {
		return "", false
	}
	p := w
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// packageTestScripts are package.json's scripts that tests run by: test,
// pretest, posttest, test:*.
func packageTestScripts(dir string) []string {
	b, err := readBounded(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range pkg.Scripts {
			if !yield(k) {
				return
			}
		}
	}) {
		if name == "test" || name == "pretest" || name == "posttest" || strings.HasPrefix(name, "test:") {
			out = append(out, pkg.Scripts[name])
		}
	}
	return out
}

// goTestOnlyPackages are the .go files of the packages of the module at
// dir that tests import and no code does, and that have no tests of their
// own: test helpers, which decide what a test asserts.
func goTestOnlyPackages(dir string) []string {
	mod, err := readBounded(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil
	}
	module := ""
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
			module, _ = strconv.Unquote(f[1])
			if module == "" {
				module = f[1]
			}
		}
	}
	if module == "" {
		return nil
	}
	type pkg struct {
		files    []string // non-test .go files
		hasTests bool
	}
	pkgs := map[string]*pkg{}
	byTest, byCode := map[string]bool{}, map[string]bool{}
	n := 0
	fset := token.NewFileSet()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "vendor" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if p != dir {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || !d.Type().IsRegular() {
			return nil
		}
		if n++; n > maxGoFiles {
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		pd := path.Dir(rel)
		if pkgs[pd] == nil {
			pkgs[pd] = &pkg{}
		}
		test := strings.HasSuffix(name, "_test.go")
		if test {
			pkgs[pd].hasTests = true
		} else {
			pkgs[pd].files = append(pkgs[pd].files, rel)
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return nil
		}
		for _, im := range f.Imports {
			ip, err := strconv.Unquote(im.Path.Value)
			if err != nil || (ip != module && !strings.HasPrefix(ip, module+"/")) {
				continue
			}
			target := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
			if target == "" {
				target = "."
			}
			if target == pd {
				continue
			}
			if test {
				byTest[target] = true
			} else {
				byCode[target] = true
			}
		}
		return nil
	})
	var out []string
	for pd, p := range pkgs {
		if byTest[pd] && !byCode[pd] && !p.hasTests {
			out = append(out, p.files...)
		}
	}
	return out
}
