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

// TestSEC2_ForgeTokenValueNeverPassesUnderAnotherName: a variable whose
// value is a forge token's never reaches an agent, whatever its name and
// whoever names it (a backend's PassEnv, the user's agent_env): not
// passed, and not kept from the task's base either.
func TestSEC2_ForgeTokenValueNeverPassesUnderAnotherName(t *testing.T) {
	const tok = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
	environ := []string{"PATH=/bin", "GH_TOKEN=" + tok, "MY_COPY=" + tok, "LC_COPY=" + tok, "MODEL_KEY=k", "AWS_PROFILE=dev"}
	got := CLIEnv(nil, environ, []string{"MY_COPY", "MODEL_KEY", "AWS_PROFILE", "GH_TOKEN"}, nil)
	for _, kv := range got {
		if strings.Contains(kv, tok) {
			t.Errorf("CLIEnv passed the forge token's value: %q (all: %q)", kv, got)
		}
	}
	for _, want := range []string{"MODEL_KEY=k", "AWS_PROFILE=dev", "PATH=/bin"} {
		if !slices.Contains(got, want) {
			t.Errorf("CLIEnv = %q, lacks %s", got, want)
		}
	}
	// A task's own base is held to the same rule.
	if got := CLIEnv([]string{"PATH=/task", "LC_COPY=" + tok}, environ, nil, nil); !slices.Equal(got, []string{"PATH=/task"}) {
		t.Errorf("CLIEnv with a task env holding the token = %q", got)
	}
	// The token converge resolved (a --token, gh's) is dropped by value
	// where it is not in the environment under its own name.
	if got := WithoutValues([]string{"A=1", "B=" + tok, "C="}, []string{tok, " "}); !slices.Equal(got, []string{"A=1", "C="}) {
		t.Errorf("WithoutValues = %q", got)
	}
}
