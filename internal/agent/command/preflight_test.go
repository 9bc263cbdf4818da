//go:build unix

package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAG_T4_PreflightFindsMissingProgram: the first program of the command
// line is checked before the run (exit 2 in the CLI), through env
// assignments and quotes; what only the shell can resolve passes.
func TestAG_T4_PreflightFindsMissingProgram(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "fix agent.sh")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		cmdline, want string // want "" means it passes
	}{
		{"sh -c 'echo hi'", ""},
		{"FOO=1 BAR=x sh ./x", ""},
		{"'" + exe + "' --flag", ""},
		{"./fix\\ agent.sh", ""},
		{"cd sub && ./fix.sh", ""},
		{"$AGENT run", ""},
		{"no-such-agent-xyz --fix", `agent program "no-such-agent-xyz" not found in PATH; install it`},
		{"FOO=1 no-such-agent-xyz", `"no-such-agent-xyz" not found in PATH`},
		{filepath.Join(dir, "missing.sh") + " arg", `not found (a relative path is taken from the current directory); check the path`},
		{"./missing.sh", `agent program "./missing.sh" not found`},
		{"./plain.sh", `is not executable; run chmod +x ./plain.sh`},
		{dir, "is a directory"},
	} {
		err := Preflight(tc.cmdline)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Preflight(%q) = %v, want ok", tc.cmdline, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Preflight(%q) = %v, want one line with %q", tc.cmdline, err, tc.want)
		}
	}
}

// TestAG_T4_RelativeProgramRunsFromWhereItWasChecked: the agent runs in
// the PR's worktree, so a relative program is made absolute from the
// directory Preflight checked it in.
func TestAG_T4_RelativeProgramRunsFromWhereItWasChecked(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for in, want := range map[string]string{
		"./fix.sh --x":             "'" + filepath.Join(dir, "fix.sh") + "' --x",
		"FOO=1  bin/fix.sh":        "FOO=1  '" + filepath.Join(dir, "bin/fix.sh") + "'",
		"fix --x":                  "fix --x",
		"/abs/fix.sh":              "/abs/fix.sh",
		"cd x && ./fix.sh":         "cd x && ./fix.sh",
		"'./my fix.sh' a; echo ok": "'" + filepath.Join(dir, "my fix.sh") + "' a; echo ok",
	} {
		if got := AbsProgram(in); got != want {
			t.Errorf("AbsProgram(%q) = %q, want %q", in, got, want)
		}
	}
}
