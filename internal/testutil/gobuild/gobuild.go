// Package gobuild lets the go commands a test starts share the build
// cache.
//
// The end-to-end tests run `go test ./...` of a seeded repository many
// times (without its vet pass: see ShareCache): converge runs the repository's tests in each fresh worktree, and
// the emulator's CI runs them in a fresh checkout of every pushed head.
// Without -trimpath the compiler records each directory's absolute path,
// so the same sources in another temporary directory are compiled, vetted
// and linked again every time, and their results are never reused. With
// -trimpath identical sources share the cache across directories. The
// tests are still run: a failing result is never cached, and a passing
// one is reused only for the very same test binary and inputs, as on a
// developer's machine with a warm cache.
package gobuild

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
)

// ShareCache adds -trimpath to GOFLAGS in this process's environment, so
// every go command started from it (directly or through converge and the
// emulator's CI, which pass GOFLAGS on) shares the build cache.
//
// It adds -vet=off too (go test's flag; GOFLAGS applies a flag only to
// the commands that know it). go test runs a vet pass over every package
// whose sources changed, and every head a scenario pushes changes them:
// about a third of each run's CPU on a 2-vCPU machine. No scenario is
// about vet; the seeded repositories' tests are what their runs check.
func ShareCache() {
	flags := strings.Fields(os.Getenv("GOFLAGS"))
	has := func(name string) bool {
		return slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, name) })
	}
	if !has("-trimpath") {
		flags = append(flags, "-trimpath")
	}
	if !has("-vet") {
		flags = append(flags, "-vet=off")
	}
	os.Setenv("GOFLAGS", strings.Join(flags, " "))
}

var goCache = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if cache := strings.TrimSpace(string(out)); err == nil && cache != "off" {
		return cache
	}
	return ""
})

// Env is the GOFLAGS and GOCACHE a go command started in an environment
// of its own (a testscript's, whose HOME is /no-home) needs to share this
// process's build cache; without GOCACHE when there is none.
func Env() []string {
	env := []string{"GOFLAGS=" + os.Getenv("GOFLAGS")}
	if cache := goCache(); cache != "" {
		env = append(env, "GOCACHE="+cache)
	}
	return env
}
