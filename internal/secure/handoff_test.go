package secure

import (
	"slices"
	"testing"
)

func TestSEC2_SplitTakesTokensOutAndRestorePutsThemBack(t *testing.T) {
	tests := []struct {
		name      string
		environ   []string
		args      []string
		wantEnv   []string
		wantArgv  []string
		handedEnv map[string]string
	}{
		{
			name:     "nothing to hide",
			environ:  []string{"PATH=/bin", "HOME=/h"},
			args:     []string{"converge", "pr", "https://h/o/r/pull/1"},
			wantEnv:  []string{"PATH=/bin", "HOME=/h"},
			wantArgv: []string{"converge", "pr", "https://h/o/r/pull/1"},
		},
		{
			name: "every token variable",
			environ: []string{"PATH=/bin", "CONVERGE_TOKEN=c", "GH_TOKEN=g", "GITHUB_TOKEN=t",
				"GH_ENTERPRISE_TOKEN=e", "GITHUB_ENTERPRISE_TOKEN=e2", "NPM_TOKEN=kept", "GH_TOKEN_X=kept", "GITHUB_TOKEN="},
			args:     []string{"converge", "pr", "u"},
			wantEnv:  []string{"PATH=/bin", "NPM_TOKEN=kept", "GH_TOKEN_X=kept", "GITHUB_TOKEN="},
			wantArgv: []string{"converge", "pr", "u"},
			handedEnv: map[string]string{"CONVERGE_TOKEN": "c", "GH_TOKEN": "g", "GITHUB_TOKEN": "t",
				"GH_ENTERPRISE_TOKEN": "e", "GITHUB_ENTERPRISE_TOKEN": "e2"},
		},
		{
			name:     "flag in both spellings, not after --",
			args:     []string{"converge", "pr", "--token", "A", "u", "--token=B", "--json", "--", "--token", "C"},
			wantArgv: []string{"converge", "pr", "u", "--json", "--", "--token", "C"},
		},
		{
			name:     "flag without value is left for cobra to refuse",
			args:     []string{"converge", "pr", "u", "--token"},
			wantArgv: []string{"converge", "pr", "u", "--token"},
		},
		{
			name:     "argv[0] is never a flag",
			args:     []string{"--token=x", "pr"},
			wantArgv: []string{"--token=x", "pr"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, argv, p := split(tt.environ, tt.args)
			if !slices.Equal(env, tt.wantEnv) {
				t.Errorf("env = %q, want %q", env, tt.wantEnv)
			}
			if !slices.Equal(argv, tt.wantArgv) {
				t.Errorf("argv = %q, want %q", argv, tt.wantArgv)
			}
			if len(p.Env) != len(tt.handedEnv) {
				t.Errorf("handed env = %v, want %v", p.Env, tt.handedEnv)
			}
			for k, v := range tt.handedEnv {
				if p.Env[k] != v {
					t.Errorf("handed %s = %q, want %q", k, p.Env[k], v)
				}
			}
			if got := p.restore(argv); !slices.Equal(got, tt.args) {
				t.Errorf("restore = %q, want the original %q", got, tt.args)
			}
			s := &Start{env: p.Env}
			get := s.Getenv(func(k string) string { return "next:" + k })
			for k, v := range tt.handedEnv {
				if get(k) != v {
					t.Errorf("Getenv(%s) = %q, want %q", k, get(k), v)
				}
			}
			if get("PATH") != "next:PATH" {
				t.Errorf("Getenv does not fall through: %q", get("PATH"))
			}
		})
	}
}
