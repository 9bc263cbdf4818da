package hygiene

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// maxTracked bounds a tracked file: the largest the project keeps is
// GitHub's GraphQL schema (1.2 MB); a build of converge is 30 MB.
const maxTracked = 2 << 20

// binaryMagic are the first bytes of executables and archives a Go build
// makes: ELF, Mach-O (both byte orders, 32 and 64 bit), a Go archive,
// WebAssembly.
var binaryMagic = [][]byte{
	[]byte("\x7fELF"),
	{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe},
	[]byte("!<arch>\n"),
	[]byte("\x00asm"),
}

// TestUX_NoBuildOutputInGit: no file git tracks is an executable, an
// archive or a test binary, none lies where builds go (bin/), and none is
// larger than the project's largest data file: a build committed by
// mistake fails here, not in review.
func TestUX_NoBuildOutputInGit(t *testing.T) {
	dir := root(t)
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Skip("not a git checkout: nothing is tracked")
	}
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files; the repository has hundreds", len(files))
	}
	for _, f := range files {
		switch {
		case strings.HasPrefix(f, "bin/"), strings.HasSuffix(f, ".test"), strings.HasSuffix(f, ".exe"), strings.HasSuffix(f, ".a"):
			t.Errorf("%s is tracked: build output stays out of git", f)
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		if st.Size() > maxTracked {
			t.Errorf("%s is tracked at %d bytes, above %d: a build, or data that belongs elsewhere", f, st.Size(), maxTracked)
		}
		head, err := readHead(filepath.Join(dir, f), 8)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range binaryMagic {
			if bytes.HasPrefix(head, m) {
				t.Errorf("%s is tracked and is an executable or archive (starts %q): build output stays out of git", f, m)
			}
		}
		if st.Mode()&0o111 != 0 && !bytes.HasPrefix(head, []byte("#!")) {
			t.Errorf("%s is tracked as executable without a #! line: a binary, or a mode set by mistake", f)
		}
	}
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return b[:k], err
}

// goFiles are the module's non-test Go files, relative to dir.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != dir && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importName is the name file uses for the package at path, "" when it
// does not import it.
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			if im.Name != nil {
				return im.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// TestUX_StoreOpenedOnlyThroughTheFactory: store.Open is called in one
// place, the command factory's opener (cmdutil): every command, the server, the
// worker, MCP and bench open their store through it, with the same
// checks (a writable directory, the run's secrets redacted).
func TestUX_StoreOpenedOnlyThroughTheFactory(t *testing.T) {
	dir := root(t)
	const storePkg = "github.com/convergeloop/converge/internal/store"
	allowed := map[string]bool{"internal/cmdutil/factory.go": true}
	found := 0
	fset := token.NewFileSet()
	for _, rel := range goFiles(t, dir) {
		if strings.HasPrefix(rel, "internal/store/") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		name := importName(f, storePkg)
		if name == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Open" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
				found++
				if !allowed[rel] {
					t.Errorf("%s: store.Open outside the factory (internal/cmdutil/factory.go openStoreFile); open it with Factory.OpenStore, OpenExistingStore or OpenStoreFile", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
	if found == 0 {
		t.Fatal("no store.Open found at all: the guard looks in the wrong place")
	}
}

// ioImports are packages a pure file does not import: they read or
// write the world.
var ioImports = map[string]bool{
	"context": true, "os": true, "os/exec": true, "net": true, "net/http": true,
	"io": true, "io/fs": true, "syscall": true, "database/sql": true,
}

// clockCalls read the clock or wait on it; Decide's time is its
// observation's.
var clockCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true,
}

// TestPR_DecideFilesDoNoIO: Decide's purity shows in the layout. In the
// PR loop every file but loop.go and the *_io.go files is pure: it
// imports no package that reads or writes the world, reads no clock and
// declares no method of the Loop (whose methods hold the forge, the
// workspace and the journal). The check and plan loops' decide.go and
// types.go are held to the same rule.
func TestPR_DecideFilesDoNoIO(t *testing.T) {
	dir := root(t)
	var pure []string
	for _, rel := range goFiles(t, dir) {
		d, f := filepath.Split(rel)
		switch d {
		case "internal/prloop/":
			if f != "loop.go" && !strings.HasSuffix(f, "_io.go") {
				pure = append(pure, rel)
			}
		case "internal/checkloop/", "internal/plan/":
			if f == "decide.go" || f == "types.go" {
				pure = append(pure, rel)
			}
		}
	}
	if len(pure) < 20 {
		t.Fatalf("%d pure files found; the PR loop alone has more: the guard looks in the wrong place", len(pure))
	}
	fset := token.NewFileSet()
	for _, rel := range pure {
		f, err := parser.ParseFile(fset, filepath.Join(dir, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); ioImports[p] {
				t.Errorf("%s imports %s: a pure file does no I/O (move what needs it to a *_io.go file)", rel, p)
			}
		}
		timeName := importName(f, "time")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv != nil && len(n.Recv.List) == 1 && recvName(n.Recv.List[0].Type) == "Loop" {
					t.Errorf("%s: method %s of the Loop in a pure file (it belongs in loop.go or a *_io.go file)", rel, n.Name.Name)
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && clockCalls[n.Sel.Name] {
					t.Errorf("%s: time.%s in a pure file: Decide's time is its observation's", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// TestUX_EmulatorsStayOutOfTheLoops: the emulators are test and demo
// infrastructure. Only the CLI (demo, sandbox), bench, the emulators
// themselves and test helpers (…test packages, testutil) import them;
// a loop, the engine, a forge client or the server never does.
func TestUX_EmulatorsStayOutOfTheLoops(t *testing.T) {
	dir := root(t)
	const emu = "github.com/convergeloop/converge/internal/emulator/"
	fset := token.NewFileSet()
	importers := 0
	for _, rel := range goFiles(t, dir) {
		d := filepath.Dir(rel)
		f, err := parser.ParseFile(fset, filepath.Join(dir, rel), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(p, emu) {
				continue
			}
			importers++
			switch {
			case d == "internal/cli", d == "internal/bench",
				strings.HasPrefix(d, "internal/emulator/"), strings.HasPrefix(d, "internal/testutil/"),
				strings.HasSuffix(d, "test"):
			default:
				t.Errorf("%s imports %s: only the CLI, bench and test helpers use the emulators", rel, p)
			}
		}
	}
	if importers == 0 {
		t.Fatal("no file imports an emulator: the guard looks in the wrong place")
	}
}

// TestUX_TheLoopsNameNoForge: the loops and the engine are forge-neutral:
// no file of theirs names a forge (forge.GitHub, forge.GitLab); what
// differs between forges lives in the forge's package (a PR reference's
// commit URL, its client, its review bot).
func TestUX_TheLoopsNameNoForge(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	checked := 0
	for _, rel := range goFiles(t, dir) {
		switch filepath.Dir(rel) {
		case "internal/prloop", "internal/checkloop", "internal/plan", "internal/engine":
		default:
			continue
		}
		checked++
		_, named := forgesNamed(t, fset, filepath.Join(dir, rel))
		for _, sel := range named {
			t.Errorf("%s: the loop names a forge (forge.%s); move what differs into the forge layer", fset.Position(sel.Pos()), sel.Sel.Name)
		}
	}
	if checked < 20 {
		t.Fatalf("%d loop files checked: the guard looks in the wrong place", checked)
	}
}

// forgeRules are the production files outside the forges' own packages
// that may import a forge's package or name a forge, each for a reason
// that is the forge's alone.
var forgeRules = map[string]string{
	"internal/cli/forgesite.go": "the registration: the forges this binary drives",
	"internal/cli/app.go":       "GitHub Apps (SEC-5) are GitHub's own feature, offered where Provider.Apps",
	"internal/cli/demo.go":      "the demo picks its emulator",
	"internal/cli/sandbox.go":   "the sandbox picks its emulator",
	"internal/bench/world.go":   "the scenario bench's world is the GitHub emulator",
	"internal/bench/latency.go": "the latency bench's world is the GitHub emulator",
}

// TestUX_ForgesChosenOnlyThroughTheirProvider: outside a forge's own
// packages (its client, its review bot, its emulator, their test helpers)
// no production code imports a forge's package or names a forge; it asks
// the forge's provider (internal/forge/provider). A new forge is then one
// package and a registration, not a hunt through the commands.
func TestUX_ForgesChosenOnlyThroughTheirProvider(t *testing.T) {
	dir := root(t)
	const mod = "github.com/convergeloop/converge/"
	forgePkgs := []string{mod + "internal/forge/github", mod + "internal/forge/gitlab"}
	owned := []string{"internal/forge/", "internal/emulator/", "internal/review/", "internal/testutil/", "internal/tools/"}
	fset := token.NewFileSet()
	checked := 0
	for _, rel := range goFiles(t, dir) {
		if strings.HasSuffix(rel, "_test.go") || slices.ContainsFunc(owned, func(p string) bool { return strings.HasPrefix(rel, p) }) {
			continue
		}
		if _, ok := forgeRules[rel]; ok {
			continue
		}
		checked++
		f, named := forgesNamed(t, fset, filepath.Join(dir, rel))
		for _, p := range forgePkgs {
			if importName(f, p) != "" {
				t.Errorf("%s imports %s: ask the forge's provider (provider.For) instead", rel, p)
			}
		}
		for _, sel := range named {
			t.Errorf("%s: names a forge (forge.%s); put what differs in the forge's provider", fset.Position(sel.Pos()), sel.Sel.Name)
		}
	}
	if checked < 100 {
		t.Fatalf("%d files checked: the guard looks in the wrong place", checked)
	}
	for rel := range forgeRules {
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			t.Errorf("forgeRules names %s, which is gone: drop its exception", rel)
		}
	}
}

// forgesNamed parses the Go file at path and gives its uses of
// forge.GitHub and forge.GitLab.
func forgesNamed(t *testing.T, fset *token.FileSet, path string) (*ast.File, []*ast.SelectorExpr) {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	name := importName(f, "github.com/convergeloop/converge/internal/forge")
	if name == "" {
		return f, nil
	}
	var out []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && (sel.Sel.Name == "GitHub" || sel.Sel.Name == "GitLab") {
				out = append(out, sel)
			}
		}
		return true
	})
	return f, out
}
