package exitcode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestIF1_ExitCodes pins the table of SPEC IF-1.
func TestIF1_ExitCodes(t *testing.T) {
	for reason, want := range map[string]Code{
		"two-stable": OK, "complete": OK,
		"errored": Error, "failed": Error, "no-such-reason": Error, "": Error,
		"handed-off": Human, "idle-timeout": Human, "human-push": Human, "all-conflicting": Human,
		"base-moved": Human, "pr-closed": Human, "blocked-no-independent-review": Human,
		"stopped-by-human": Human, "taken-over": Human, "blocked": Human,
		"cap-exhausted": Bound, "limited": Bound,
		"convergence-failure": Convergence, "stalled": Convergence,
	} {
		if got := ForReason(reason); got != want {
			t.Errorf("ForReason(%q) = %d, want %d", reason, got, want)
		}
	}
	for code := Code(OK); code <= Unreachable; code++ {
		if code.Meaning() == "" {
			t.Errorf("code %d has no meaning", code)
		}
	}
	if Meaning(8) != "" || Meaning(-1) != "" {
		t.Error("codes 8 and -1 are not in IF-1")
	}
	// Shared names mean the same everywhere.
	for _, k := range []Kind{Loop, Plan} {
		for name, c := range Table[k] {
			if pc, ok := Of(PR, name); ok && pc != c {
				t.Errorf("%s %q is %v, prloop's is %v", k, name, c, pc)
			}
		}
	}
}

// terminalTypes are the declared terminal types of each loop kind: every
// constant of that type in the package's sources is a terminal.
var terminalTypes = map[Kind]string{PR: "Reason", Loop: "Status", Plan: "Status"}

// TestIF1_ExitCodeIsTheTable reads every loop kind's sources and fails for
// a terminal constant it declares that the table does not map, and for a
// table row no loop declares: adding a terminal without its IF-1 code, or
// leaving a stale row behind, cannot pass.
func TestIF1_ExitCodeIsTheTable(t *testing.T) {
	for kind, typ := range terminalTypes {
		declared := declaredConsts(t, filepath.Join("..", string(kind)), typ)
		if len(declared) == 0 {
			t.Fatalf("%s declares no constant of type %s: the test reads the wrong package", kind, typ)
		}
		for name, value := range declared {
			if _, ok := Of(kind, value); !ok {
				t.Errorf("%s.%s = %q is a terminal without a row in the IF-1 table (exitcode.Table[%s])", kind, name, value, kind)
			}
		}
		values := make([]string, 0, len(declared))
		for _, v := range declared {
			values = append(values, v)
		}
		for terminal := range Table[kind] {
			if !slices.Contains(values, terminal) {
				t.Errorf("the IF-1 table maps %s terminal %q, which %s does not declare", kind, terminal, kind)
			}
		}
	}
}

// declaredConsts are the string constants of type typ declared in the
// non-test Go files of dir, by name.
func declaredConsts(t *testing.T, dir, typ string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || id.Name != typ {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s.%s: a terminal must be a string literal", dir, n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[n.Name] = v
				}
			}
		}
	}
	return out
}
