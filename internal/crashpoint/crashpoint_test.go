package crashpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREL2_HookNumbersBoundariesLogsThemAndKillsAtK: boundaries are
// numbered in the order they pass, each is logged before anything else
// happens, and the kill comes at K, not before or after.
func TestREL2_HookNumbersBoundariesLogsThemAndKillsAtK(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "boundaries")
	m := load("3", logFile)
	if m == nil {
		t.Fatal("the hook is off with both variables set")
	}
	var killedAt []int
	m.kill = func() { killedAt = append(killedAt, m.n) }
	for _, name := range []string{"a: before", "a: after", "b\nwith a newline", "c"} {
		m.hit(name)
	}
	if len(killedAt) != 1 || killedAt[0] != 3 {
		t.Fatalf("killed at %v, want [3]", killedAt)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "1 a: before\n2 a: after\n3 b with a newline\n4 c\n"; got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
}

// TestREL2_HookIsOffUnlessSet: unset, or with a value that names no
// boundary, nothing is armed; CheckEnv refuses the bad value so a crash
// test cannot pass without crashing.
func TestREL2_HookIsOffUnlessSet(t *testing.T) {
	if load("", "") != nil {
		t.Fatal("armed with nothing set")
	}
	if m := load("", "/tmp/x"); m == nil || m.at != 0 {
		t.Fatalf("a log alone must count without killing: %+v", m)
	}
	for _, bad := range []string{"0", "-1", "three", "1.5"} {
		if load(bad, "") != nil {
			t.Errorf("armed by %s=%q", EnvAt, bad)
		}
		err := CheckEnv([]string{"HOME=/x", EnvAt + "=" + bad})
		if err == nil || !strings.Contains(err.Error(), EnvAt) {
			t.Errorf("CheckEnv(%q) = %v, want an error naming %s", bad, err, EnvAt)
		}
	}
	if err := CheckEnv([]string{EnvAt + "=12", EnvLog + "=/tmp/x"}); err != nil {
		t.Errorf("CheckEnv refused a boundary number: %v", err)
	}
}

func BenchmarkHitUnarmed(b *testing.B) {
	if Armed() {
		b.Skip("the hook is armed in this process")
	}
	for b.Loop() {
		Hit("engine act reply: before")
	}
}

func TestREL2_CrashAtNamedBoundary(t *testing.T) {
	if withName(nil, "") != nil {
		t.Fatal("no name armed the hook")
	}
	m := withName(nil, "forge x: after")
	killed := 0
	m.kill = func() { killed++ }
	m.hit("forge x: before")
	if killed != 0 {
		t.Fatal("died at another boundary")
	}
	m.hit("forge x: after")
	if killed != 1 || m.n != 2 {
		t.Fatalf("killed %d times after %d boundaries, want once at the second", killed, m.n)
	}
}
