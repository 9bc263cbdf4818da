package census

import (
	"reflect"
	"testing"
)

func TestPR_V4_Detect(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"package.json": `{"scripts":{"test":"jest --ci"}}`,
		"Makefile":     "test:\n\t@go test -race ./...\nlint:\n\tgolangci-lint run\nall: test\n\tgo build ./...\n",
	})
	r := "/r"
	for _, tc := range []struct {
		argv []string
		eco  Ecosystem
		run  []string
		env  []string
	}{
		{[]string{"go", "test", "./..."}, Go, []string{"go", "test", "-json", "./..."}, nil},
		{[]string{"sh", "-c", "CGO_ENABLED=0 go test -count=1 ./..."}, Go, []string{"sh", "-c", "CGO_ENABLED=0 go test -json -count=1 ./..."}, nil},
		{[]string{"python3", "-m", "pytest", "-q"}, Pytest, []string{"python3", "-m", "pytest", "-q", "--junitxml=/r/pytest.xml"}, nil},
		{[]string{"uv", "run", "pytest"}, Pytest, []string{"uv", "run", "pytest", "--junitxml=/r/pytest.xml"}, nil},
		{[]string{"npx", "vitest", "run"}, Vitest, []string{"npx", "vitest", "run", "--reporter=default", "--reporter=json", "--outputFile.json=/r/vitest.json"}, nil},
		{[]string{"npm", "test"}, Jest, []string{"npm", "test", "--", "--json", "--outputFile=/r/jest.json"}, nil},
		{[]string{"cargo", "test", "--workspace"}, Cargo, []string{"cargo", "test", "--workspace"}, nil},
		{[]string{"make", "test"}, Go, []string{"make", "test"}, []string{"GOFLAGS=-json"}},
		// Not provable: unknown, run unchanged.
		{[]string{"sh", "-c", "go test ./... | tee log"}, Unknown, nil, nil},
		{[]string{"sh", "-c", "go test $PKGS"}, Unknown, nil, nil},
		{[]string{"go", "vet", "./..."}, Unknown, nil, nil},
		{[]string{"cargo", "test", "-q"}, Unknown, nil, nil},
		{[]string{"make", "lint"}, Unknown, nil, nil},
		{[]string{"make", "all"}, Unknown, nil, nil},
		{[]string{"make", "-C", "x", "test"}, Unknown, nil, nil},
		{[]string{"bun", "test"}, Unknown, nil, nil},
		{[]string{"npm", "run", "lint"}, Unknown, nil, nil},
		{nil, Unknown, nil, nil},
	} {
		p := Detect(dir, tc.argv, r)
		want := tc.run
		if tc.eco == Unknown {
			want = tc.argv
		}
		if p.Ecosystem != tc.eco || !reflect.DeepEqual(p.Argv, want) || !reflect.DeepEqual(p.Env, tc.env) || (tc.eco == Unknown) != (p.Why != "") {
			t.Errorf("Detect(%q) = %+v, want %s %q %q", tc.argv, p, tc.eco, want, tc.env)
		}
	}
}
