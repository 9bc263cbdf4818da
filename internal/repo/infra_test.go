package repo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestPR_V4_TestInfraIsWhatTheTestsReadButTheCodeDoesNot: the closure of
// the test command — the Makefile, the makefile it includes, the script a
// recipe sources and the one that script runs, package.json's test script's
// runner, the Go package only tests import — and nothing the code under
// test reads (a package code imports, a package with tests of its own, a
// file outside the repository).
func TestPR_V4_TestInfraIsWhatTheTestsReadButTheCodeDoesNot(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                   "module example.com/calc\n\ngo 1.21\n",
		"Makefile":                 "include build/vars.mk\n\ntest:\n\t. ./scripts/env.sh && go test ./...\n\nbuild:\n\tgo build -o bin/calc ./cmd/calc\n",
		"build/vars.mk":            "GOFLAGS := -count=1\n",
		"scripts/env.sh":           "export X=1\nsh scripts/check-more.sh\n",
		"scripts/check-more.sh":    "true\n",
		"scripts/release.sh":       "echo not a test script\n",
		"package.json":             `{"scripts": {"test": "node tools/run-tests.js", "build": "node tools/build.js"}}`,
		"tools/run-tests.js":       "",
		"tools/build.js":           "",
		"calc.go":                  "package calc\n\nimport \"example.com/calc/internal/mathx\"\n\nfunc Add(a, b int) int { return mathx.Sum(a, b) }\n",
		"calc_test.go":             "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc/internal/check\"\n\t\"example.com/calc/internal/mathx\"\n)\n\nfunc TestAdd(t *testing.T) { check.Equal(t, Add(1, 2), mathx.Sum(1, 2)) }\n",
		"internal/check/check.go":  "package check\n\nimport \"testing\"\n\nfunc Equal(t *testing.T, a, b int) {}\n",
		"internal/mathx/mathx.go":  "package mathx\n\nfunc Sum(a, b int) int { return a + b }\n",
		"internal/lib/lib.go":      "package lib\n\nfunc F() {}\n",
		"internal/lib/lib_test.go": "package lib\n",
		"integration/all_test.go":  "package integration\n\nimport _ \"example.com/calc/internal/lib\"\n",
		"cmd/calc/main.go":         "package main\n\nfunc main() {}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := TestInfra(dir, []string{"make", "test"})
	want := []string{"Makefile", "build/vars.mk", "internal/check/check.go", "scripts/check-more.sh", "scripts/env.sh", "tools/run-tests.js"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TestInfra = %q\nwant         %q", got, want)
	}
	// A command that names a script outside the repository names nothing.
	if got := TestInfra(t.TempDir(), []string{"sh", "-c", "sh /etc/profile && sh ../x.sh"}); len(got) != 0 {
		t.Fatalf("outside: %q", got)
	}
}
