package config_test

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/config"
)

// TestIF1_UnknownConvergeEnvIsRefused: a CONVERGE_* variable that names
// nothing converge reads is an error naming it and the setting it
// resembles; the ones converge reads, and empty ones, pass.
func TestIF1_UnknownConvergeEnvIsRefused(t *testing.T) {
	fs := config.PRFields()
	for _, env := range [][]string{
		{"CONVERGE_MAX_ITERATIONS=3", "CONVERGE_TOKEN=x", "CONVERGE_OWNER=1:2", "CONVERGE_CLAUDE_BIN=/bin/true", "CONVERGE_CODEX_MODEL=m", "CONVERGE_AGENT_MODEL=m"},
		{"CONVERGE_MAX_ITERATION=", "HOME=/root", "XCONVERGE_FOO=1"},
	} {
		if err := config.CheckEnv(fs, env); err != nil {
			t.Errorf("CheckEnv(%v) = %v, want nil", env, err)
		}
	}
	err := config.CheckEnv(fs, []string{"PATH=/bin", "CONVERGE_MAX_ITERATION=3"})
	if err == nil || !strings.Contains(err.Error(), "CONVERGE_MAX_ITERATION:") || !strings.Contains(err.Error(), "did you mean CONVERGE_MAX_ITERATIONS?") {
		t.Fatalf("CheckEnv of a misspelt setting = %v", err)
	}
	if err := config.CheckEnv(fs, []string{"CONVERGE_WHATEVER=1"}); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("CheckEnv of an unrelated name = %v, want an error without a guess", err)
	}
}
