package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestSEC2_ScrubEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp",
		"GOCACHE=/c", "GOPATH=/g", "GOFLAGS=-mod=mod", "GOMODCACHE=/m", "GOPROXY=off",
		"NODE_OPTIONS=--max-old-space-size=4096", "npm_config_cache=/n",
		"GH_TOKEN=ghp_secret", "GITHUB_TOKEN=ghs_secret", "CONVERGE_TOKEN=c",
		"GH_ENTERPRISE_TOKEN=e", "NPM_TOKEN=n", "NODE_AUTH_TOKEN=n2",
		"npm_config__authToken=n3", "npm_config__auth=n4",
		"AWS_SECRET_ACCESS_KEY=a", "MY_SECRET=s", "ANTHROPIC_API_KEY=k", "OPENAI_API_KEY=o",
		"DB_PASSWORD=p", "PGPASSWORD=p2", "SSH_AUTH_SOCK=/s", "RANDOM_VAR=r",
		"malformed", "=novalue",
	}
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp",
		"GOCACHE=/c", "GOPATH=/g", "GOFLAGS=-mod=mod", "GOMODCACHE=/m", "GOPROXY=off",
		"NODE_OPTIONS=--max-old-space-size=4096", "npm_config_cache=/n",
	}
	if got := ScrubEnv(environ); !slices.Equal(got, want) {
		t.Errorf("ScrubEnv =\n%q\nwant\n%q", got, want)
	}

	t.Run("exact names pass secrets through", func(t *testing.T) {
		got := ScrubEnv(environ, "ANTHROPIC_API_KEY", "GH_TOKEN", "RANDOM_VAR")
		for _, kv := range []string{"ANTHROPIC_API_KEY=k", "GH_TOKEN=ghp_secret", "RANDOM_VAR=r"} {
			if !slices.Contains(got, kv) {
				t.Errorf("%s missing from %q", kv, got)
			}
		}
		for _, kv := range []string{"OPENAI_API_KEY=o", "GITHUB_TOKEN=ghs_secret"} {
			if slices.Contains(got, kv) {
				t.Errorf("%s not asked for but passed", kv)
			}
		}
	})
	t.Run("prefix patterns never pass secrets", func(t *testing.T) {
		got := ScrubEnv([]string{"AWS_REGION=eu", "AWS_SECRET_ACCESS_KEY=a", "AWS_SESSION_TOKEN=t"}, "AWS_*")
		if !slices.Equal(got, []string{"AWS_REGION=eu"}) {
			t.Errorf("got %q", got)
		}
	})
	t.Run("empty input gives empty non-nil env", func(t *testing.T) {
		// exec treats a nil Env as "inherit everything".
		if got := ScrubEnv(nil); got == nil {
			t.Error("ScrubEnv(nil) = nil")
		}
	})
}

func TestSEC3_Redact(t *testing.T) {
	tok := "ghp_" + strings.Repeat("A", 36)
	tests := []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"given secret", "token is s3cr3t-value!", []string{"s3cr3t-value"}, "token is [REDACTED]!"},
		{"longest first", "abcdef", []string{"abc", "abcdef"}, "[REDACTED]"},
		{"empty secret ignored", "text", []string{"", " "}, "text"},
		{"github token shape", "auth " + tok + " ok", nil, "auth [REDACTED] ok"},
		{"fine-grained pat", "github_pat_" + strings.Repeat("b", 40), nil, "[REDACTED]"},
		{"url password", "https://x-access-token:abc123@github.com/o/r.git", nil, "https://x-access-token:[REDACTED]@github.com/o/r.git"},
		{"no secret untouched", "plain ghp_short text", nil, "plain ghp_short text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in, tt.secrets...); got != tt.want {
				t.Errorf("Redact = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSEC_3_RedactKnowsModelKeyShapes: a model provider's key a CLI's
// error echoes is removed without being told (SEC-3).
func TestSEC_3_RedactKnowsModelKeyShapes(t *testing.T) {
	for _, key := range []string{
		"sk-ant-api03-" + strings.Repeat("a", 40),
		"sk-proj-" + strings.Repeat("B", 30),
		"AIza" + strings.Repeat("c", 35),
	} {
		got := Redact("invalid x-api-key " + key + " (401)")
		if strings.Contains(got, key) || !strings.Contains(got, RedactedText) {
			t.Errorf("Redact kept %s: %q", key, got)
		}
	}
	if got := Redact("ask-me task-runner sk-short"); got != "ask-me task-runner sk-short" {
		t.Errorf("Redact changed ordinary words: %q", got)
	}
}
