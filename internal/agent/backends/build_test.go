package backends

import (
	"errors"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/agent/suggest"
)

// TestAG_B1_BuildBuildsEveryKind: one builder for the six agents, each
// named for the role it plays; the command agent's program is checked
// before anything runs (AG-T4).
func TestAG_B1_BuildBuildsEveryKind(t *testing.T) {
	bins := map[string]string{}
	for _, n := range Names() {
		bins["CONVERGE_"+strings.ToUpper(n)+"_BIN"] = "/bin/sh"
	}
	c := Config{Getenv: env(bins)}
	for _, tc := range []struct{ name, cmd, role, want string }{
		{"claude", "", RoleFix, "claude"},
		{"codex", "", RoleReview, "review-codex"},
		{"gemini", "", RoleJudge, "judge-gemini"},
		{"opencode", "", "", "opencode"},
		{"command", "true", RoleFix, "command"},
		{"command", "true", RoleReview, "review-command"},
		{"command", "true", RoleJudge, "judge-command"},
		{"suggest", "", RoleFix, "suggest"},
	} {
		a, err := c.Build(tc.name, tc.cmd, tc.role)
		if err != nil {
			t.Errorf("Build(%s, %q, %s): %v", tc.name, tc.cmd, tc.role, err)
			continue
		}
		if a.Name() != tc.want {
			t.Errorf("Build(%s, %q, %s) is named %q, want %q", tc.name, tc.cmd, tc.role, a.Name(), tc.want)
		}
		switch tc.name {
		case "command":
			if _, ok := a.(*command.Agent); !ok {
				t.Errorf("Build(command) = %T", a)
			}
		case "suggest":
			if _, ok := a.(*suggest.Agent); !ok {
				t.Errorf("Build(suggest) = %T", a)
			}
		}
	}
	if got := Kinds(); strings.Join(got, ",") != "claude,codex,gemini,opencode,command,suggest" {
		t.Errorf("Kinds() = %v", got)
	}
}

// TestAG_T4_BuildRefusesBeforeRunning: what cannot run is refused by
// Build, in words the caller prefixes with its flag.
func TestAG_T4_BuildRefusesBeforeRunning(t *testing.T) {
	if _, err := Build("command", "  ", RoleFix); !errors.Is(err, ErrNoCommand) {
		t.Errorf("an empty command line: %v, want ErrNoCommand", err)
	}
	if _, err := Build("command", "./no-such-program --x", RoleFix); err == nil || !strings.Contains(err.Error(), `agent program "./no-such-program" not found`) {
		t.Errorf("a missing program: %v", err)
	}
	if _, err := Build("suggest", "", RoleReview); err == nil {
		t.Error("suggest built as a reviewer")
	}
	if _, err := Build("cursor", "", RoleFix); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "command, suggest") {
		t.Errorf("an unknown agent: %v", err)
	}
}

// TestBuildNewCommand: the loop's command agent speaks its own protocol;
// Build hands it the name and the argv it would run.
func TestBuildNewCommand(t *testing.T) {
	var gotName string
	var gotArgv []string
	c := Config{NewCommand: func(name string, argv []string) (agent.Agent, error) {
		gotName, gotArgv = name, argv
		return suggest.New(), nil
	}}
	if _, err := c.Build("command", "true", RoleJudge); err != nil {
		t.Fatal(err)
	}
	if gotName != "judge-command" || strings.Join(gotArgv, " ") != "sh -c true" {
		t.Errorf("NewCommand got %q %q", gotName, gotArgv)
	}
}
