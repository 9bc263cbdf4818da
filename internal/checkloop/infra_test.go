package checkloop

import (
	"reflect"
	"testing"
)

// TestLOOP_6_TestInfrastructureIsProtectedByDefault: with the default
// protection, a change to what the tests and the check read by its name
// (a makefile, runner configuration, test data, a test helper) is
// protected beside the globs, new files too; an explicit --protect is the
// user's whole choice.
func TestLOOP_6_TestInfrastructureIsProtectedByDefault(t *testing.T) {
	changed := []string{"Makefile", "build/new.mk", "calc.go", "conftest.py", "internal/testutil/assert.go", "testdata/golden.txt", "vitest.config.ts", "x_test.go"}
	cfg := Config{Protect: []string{"*_test.go"}, ProtectInfra: true}
	want := []string{"x_test.go", "Makefile", "build/new.mk", "conftest.py", "internal/testutil/assert.go", "testdata/golden.txt", "vitest.config.ts"}
	if got := protectedPaths(changed, cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("protected %q, want %q", got, want)
	}
	cfg.ProtectInfra = false
	if got := protectedPaths(changed, cfg); !reflect.DeepEqual(got, []string{"x_test.go"}) {
		t.Fatalf("explicit --protect: %q", got)
	}
}
