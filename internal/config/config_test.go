package config_test

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/config"
)

func parse(t *testing.T, yaml string) (*config.File, error) {
	t.Helper()
	return config.ParseFile(config.PRFields(), "repo/.converge.yaml", []byte(yaml))
}

// TestPR_M4_FileIsStrict: an unknown key or a bad value is an error that
// names the file and the line, and says what is wrong.
func TestPR_M4_FileIsStrict(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "max_iterations: 3\nmax_rounds: 9\n", `repo/.converge.yaml:2: unknown key "max_rounds"`},
		{"bad duration", "review_wait: 20\n", `repo/.converge.yaml:1: review_wait: "20" is not a duration`},
		{"below minimum", "\n\nmax_iterations: 0\n", `repo/.converge.yaml:3: max_iterations: 0 is below the minimum 1`},
		{"not an integer", "max_iterations: many\n", `:1: max_iterations: "many" is not an integer`},
		{"bad bool", "expects_copilot: sometimes\n", `:1: expects_copilot: "sometimes" is not true or false`},
		{"list where a value is needed", "max_wall_clock: [1h]\n", `:1: max_wall_clock: a duration is needed, not a list`},
		{"mapping value", "trusted_bots: {a: b}\n", `:1: trusted_bots: a list is needed, not a mapping`},
		{"empty value", "ci_wait:\n", `:1: ci_wait: a duration is needed, the value is empty`},
		{"twice", "ci_wait: 1m\nci_wait: 2m\n", `:2: ci_wait is set twice`},
		{"not a mapping", "- a\n- b\n", `:1: the file must be a mapping`},
		{"bad angle", "review_angles: [correctness-leak, \"no spaces please\"]\n", `:1: review_angles: review angle "no spaces please"`},
		{"path outside", "review_instructions: ../../etc/passwd\n", `must be a path inside the repository`},
		{"not a boolean", "sync_base: sometimes\n", `:1: sync_base`},
		{"syntax", "max_iterations: [\n", `repo/.converge.yaml: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestPR_M4_FlagBeatsEnvBeatsFileBeatsDefault: each value comes from the
// strongest layer that sets it, and says where it came from.
func TestPR_M4_FlagBeatsEnvBeatsFileBeatsDefault(t *testing.T) {
	f, err := parse(t, "max_iterations: 5\nci_wait: 45m\npoll_min: 2s\ntrusted_bots:\n  - copilot\n  - \"renovate[bot]\"\n")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CONVERGE_CI_WAIT": "50m", "CONVERGE_POLL_MIN": "3s"}
	ss, err := config.Resolve(config.PRFields(), config.Inputs{
		File: f, Getenv: func(k string) string { return env[k] }, Flags: map[string]string{"poll_min": "4s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]config.Setting{}
	for _, s := range ss {
		got[s.Key] = s
	}
	for key, want := range map[string]config.Setting{
		"max_iterations": {Value: "5", Source: config.FromFile, Where: "repo/.converge.yaml:1"},
		"ci_wait":        {Value: "50m0s", Source: config.FromEnv, Where: "CONVERGE_CI_WAIT"},
		"poll_min":       {Value: "4s", Source: config.FromFlag, Where: "--poll-min"},
		"review_wait":    {Value: "20m0s", Source: config.FromDefault},
		"trusted_bots":   {Value: "copilot,renovate[bot]", Source: config.FromFile, Where: "repo/.converge.yaml:4"},
	} {
		g := got[key]
		if g.Value != want.Value || g.Source != want.Source || g.Where != want.Where {
			t.Errorf("%s = %+v, want %+v", key, g, want)
		}
	}
	v := config.ValuesOf(ss)
	if v.Int("max_iterations") != 5 || v.Duration("poll_min").String() != "4s" || len(v.List("trusted_bots")) != 2 {
		t.Fatalf("typed values wrong: %v", v)
	}
}

// TestPR_M4_BadEnvOrFlagNamesItself: a bad value in the environment or a
// flag is refused naming the variable or the flag.
func TestPR_M4_BadEnvOrFlagNamesItself(t *testing.T) {
	_, err := config.Resolve(config.PRFields(), config.Inputs{Getenv: func(k string) string {
		if k == "CONVERGE_MAX_WALL_CLOCK" {
			return "forever"
		}
		return ""
	}})
	if err == nil || !strings.Contains(err.Error(), "CONVERGE_MAX_WALL_CLOCK: \"forever\" is not a duration") {
		t.Fatalf("got %v", err)
	}
	_, err = config.Resolve(config.PRFields(), config.Inputs{Flags: map[string]string{"diff_multiplier": "0.5"}})
	if err == nil || !strings.Contains(err.Error(), "--diff-multiplier: 0.5 is below the minimum 1") {
		t.Fatalf("got %v", err)
	}
}

// TestPR_M4_EveryDefaultIsValid: the table's own defaults pass its
// checks, and every key is unique: one place, consistent.
func TestPR_M4_EveryDefaultIsValid(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range config.PRFields() {
		if seen[f.Key] {
			t.Errorf("%s listed twice", f.Key)
		}
		seen[f.Key] = true
		if f.Kind == config.String && f.Default == "" {
			continue
		}
		if v, err := f.Parse(f.Default); err != nil || v != f.Default {
			t.Errorf("%s: default %q parses to %q, %v", f.Key, f.Default, v, err)
		}
	}
	// An empty file is no settings, not an error.
	if f, err := parse(t, "# nothing yet\n"); err != nil || len(f.Values) != 0 {
		t.Fatalf("empty file: %+v, %v", f, err)
	}
}

// TestAG_B1_AgentEnvIsNamesOnly: agent_env is a list of variable names,
// from the file, the environment or a flag; a name holding '=' or an
// empty one is refused with a line that says why. agent_retry_bound is a
// duration of at least a second, 30 s by default.
func TestAG_B1_AgentEnvIsNamesOnly(t *testing.T) {
	f, err := parse(t, "agent_env:\n  - AWS_PROFILE\n  - CLOUD_ML_REGION\nagent_retry_bound: 45s\n")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := config.Resolve(config.PRFields(), config.Inputs{File: f})
	if err != nil {
		t.Fatal(err)
	}
	v := config.ValuesOf(ss)
	if got := v.List("agent_env"); strings.Join(got, " ") != "AWS_PROFILE CLOUD_ML_REGION" {
		t.Errorf("agent_env = %q", got)
	}
	if v.Duration("agent_retry_bound").String() != "45s" {
		t.Errorf("agent_retry_bound = %s", v.Duration("agent_retry_bound"))
	}
	ss, _ = config.Resolve(config.PRFields(), config.Inputs{})
	if d := config.ValuesOf(ss).Duration("agent_retry_bound"); d.String() != "30s" {
		t.Errorf("default agent_retry_bound = %s", d)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agent_env: [AWS_PROFILE=dev]\n", `:1: agent_env: "AWS_PROFILE=dev" is not a variable name`},
		{"agent_env: [\"A B\"]\n", `"A B" is not a variable name`},
		{"agent_env: [\"AWS_*\"]\n", `"AWS_*" is a pattern: agent_env names variables one by one`},
		{"agent_retry_bound: 0s\n", `agent_retry_bound: 0s is below the minimum 1s`},
	} {
		if _, err := parse(t, tc.yaml); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want an error containing %q, got %v", tc.yaml, tc.want, err)
		}
	}
	if _, err := config.Resolve(config.PRFields(), config.Inputs{Flags: map[string]string{"agent_env": "X=1"}}); err == nil || !strings.Contains(err.Error(), "--agent-env") {
		t.Errorf("a flag with a value: %v", err)
	}
	if err := config.EnvName(""); err == nil || !strings.Contains(err.Error(), "empty variable name") {
		t.Errorf("EnvName(\"\") = %v", err)
	}
}
