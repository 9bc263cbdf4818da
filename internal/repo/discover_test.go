package repo_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

func TestREPO_C1_Discover(t *testing.T) {
	cases := []struct {
		name              string
		files             map[string]string
		test, build, lint []string
		whyTest           string // substring of Why["test"]
	}{
		{
			name:    "go manifest only",
			files:   map[string]string{"go.mod": "module x\n"},
			test:    []string{"go", "test", "./..."},
			build:   []string{"go", "build", "./..."},
			lint:    []string{"go", "vet", "./..."},
			whyTest: "go.mod",
		},
		{
			name:    "cargo manifest",
			files:   map[string]string{"Cargo.toml": "[package]\n"},
			test:    []string{"cargo", "test"},
			build:   []string{"cargo", "build"},
			whyTest: "Cargo.toml",
		},
		{
			name:    "pyproject",
			files:   map[string]string{"pyproject.toml": "[project]\n"},
			test:    []string{"pytest"},
			whyTest: "pyproject.toml",
		},
		{
			name:    "setup.py",
			files:   map[string]string{"setup.py": "from setuptools import setup\n"},
			test:    []string{"pytest"},
			whyTest: "setup.py",
		},
		{
			name:  "package.json scripts",
			files: map[string]string{"package.json": `{"scripts":{"test":"vitest run","build":"tsc","lint":"eslint ."}}`},
			test:  []string{"npm", "test"}, build: []string{"npm", "run", "build"}, lint: []string{"npm", "run", "lint"},
			whyTest: `package.json: script "test"`,
		},
		{
			name:    "package.json with pnpm lockfile",
			files:   map[string]string{"package.json": `{"scripts":{"test":"jest"}}`, "pnpm-lock.yaml": ""},
			test:    []string{"pnpm", "test"},
			whyTest: "pnpm-lock.yaml",
		},
		{
			name:  "npm placeholder test script is not a test",
			files: map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`},
		},
		{
			name: "Makefile beats manifest",
			files: map[string]string{
				"go.mod":   "module x\n",
				"Makefile": "VAR := 1\n.PHONY: test build\n\nall: build\nbuild:\n\tgo build ./cmd/x\ntest: build\n\tgo test -race ./...\n",
			},
			test: []string{"make", "test"}, build: []string{"make", "build"}, lint: []string{"go", "vet", "./..."},
			whyTest: `Makefile:7: target "test"`,
		},
		{
			name:    "justfile",
			files:   map[string]string{"justfile": "set shell := [\"bash\", \"-c\"]\n\n# run the tests\ntest *args:\n    cargo test {{args}}\n\nlint:\n    cargo clippy\n"},
			test:    []string{"just", "test"},
			lint:    []string{"just", "lint"},
			whyTest: "justfile:4",
		},
		{
			name:    "Taskfile",
			files:   map[string]string{"Taskfile.yml": "version: '3'\n\nvars:\n  test: x\n\ntasks:\n  build:\n    cmds:\n      - go build ./...\n  test:\n    deps: [build]\n    cmds:\n      - go test ./...\n"},
			test:    []string{"task", "test"},
			build:   []string{"task", "build"},
			whyTest: "Taskfile.yml:10",
		},
		{
			name: "AGENTS.md beats everything",
			files: map[string]string{
				"Makefile": "test:\n\tgo test ./...\n",
				"go.mod":   "module x\n",
				"AGENTS.md": "# Agents\n\nSome text mentioning `go test` inline.\n\n## Testing\n\n```sh\n" +
					"$ go test -race -count=1 ./...\n```\n\n```go\ngo build ./...\n```\n",
			},
			test: []string{"go", "test", "-race", "-count=1", "./..."}, build: []string{"go", "build", "./..."}, lint: []string{"go", "vet", "./..."},
			whyTest: `AGENTS.md:8: a code block under "Testing"`,
		},
		{
			name: "CONTRIBUTING.md with shell syntax",
			files: map[string]string{
				"CONTRIBUTING.md": "## Running tests\n\n```bash\ncd src && pytest -q\nPYTHONPATH=. pytest -q   # the real one\n```\n",
				"setup.py":        "",
			},
			test:    []string{"sh", "-c", "PYTHONPATH=. pytest -q"},
			whyTest: "CONTRIBUTING.md:5",
		},
		{
			name: "README needs a heading naming the kind",
			files: map[string]string{
				"README.md": "# Tool\n\n## Install\n\n```sh\nmake build\n```\n\n## Tests\n\n```\nmake test\n```\n",
			},
			test:    []string{"make", "test"},
			whyTest: `README.md:12: a code block under "Tests"`,
		},
		{
			name:  "nothing recognisable",
			files: map[string]string{"README.md": "# Hello\n\n```sh\n./configure\n```\n", "main.c": "int main(){}\n"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := repo.Discover(dir)
			if !reflect.DeepEqual(got.Test, c.test) || !reflect.DeepEqual(got.Build, c.build) || !reflect.DeepEqual(got.Lint, c.lint) {
				t.Errorf("Discover = test %q build %q lint %q; want %q %q %q\nwhy: %v", got.Test, got.Build, got.Lint, c.test, c.build, c.lint, got.Why)
			}
			for _, k := range []string{repo.KindTest, repo.KindBuild, repo.KindLint} {
				if got.Why[k] == "" {
					t.Errorf("Why[%s] empty", k)
				}
			}
			if c.test == nil && !strings.HasPrefix(got.Why[repo.KindTest], "none found") {
				t.Errorf("Why[test] = %q, want a 'none found' reason", got.Why[repo.KindTest])
			}
			if c.whyTest != "" && !strings.Contains(got.Why[repo.KindTest], c.whyTest) {
				t.Errorf("Why[test] = %q, want it to mention %q", got.Why[repo.KindTest], c.whyTest)
			}
		})
	}
}
