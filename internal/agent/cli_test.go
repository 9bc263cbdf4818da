package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCLIEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "GH_TOKEN=ghp_x", "MODEL_KEY=k", "OTHER_KEY=o"}
	got := CLIEnv(nil, environ, []string{"MODEL_KEY"}, []string{"HOME=/agent", "EXTRA=1", "bad"})
	want := []string{"PATH=/bin", "HOME=/agent", "MODEL_KEY=k", "EXTRA=1"}
	if !slices.Equal(got, want) {
		t.Errorf("CLIEnv = %q, want %q", got, want)
	}
	// A task's environment is the base as it is.
	if got := CLIEnv([]string{"PATH=/task"}, environ, nil, nil); !slices.Equal(got, []string{"PATH=/task"}) {
		t.Errorf("CLIEnv with a task env = %q", got)
	}
}

func TestResolveBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "agentcli")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "CONVERGE_X_BIN" {
				return v
			}
			return ""
		}
	}
	t.Setenv("PATH", dir)
	for _, c := range []struct {
		configured, envVal, want, err string
	}{
		{want: exe},              // PATH
		{envVal: exe, want: exe}, // the variable
		{configured: exe, envVal: "/nope", want: exe}, // configured wins
		{envVal: "/nope/agentcli", err: "CONVERGE_X_BIN"},
		{envVal: plain, err: "not executable"},
		{envVal: dir, err: "is a directory"},
		{configured: "missing", err: `"missing" not found in PATH`},
	} {
		got, err := ResolveBinary(c.configured, "CONVERGE_X_BIN", "agentcli", env(c.envVal))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: err = %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: got %q, %v", c, got, err)
		}
	}
}
