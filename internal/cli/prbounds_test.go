package cli

import (
	"testing"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/verify"
)

// TestPR_V3_BoundsSettingsReachTheWorkspace: max_push_bytes,
// max_file_bytes and max_push_files, from a flag or the environment, are
// the PR run's bounds; 0 is no bound; unset, the defaults.
func TestPR_V3_BoundsSettingsReachTheWorkspace(t *testing.T) {
	env := map[string]string{"CONVERGE_MAX_PUSH_FILES": "7"}
	ios := &cmdutil.IOStreams{Getenv: func(k string) string { return env[k] }}
	opts := &prOptions{Set: map[string]string{"max_push_bytes": "0", "max_file_bytes": "2048"}}
	s, err := prSettings(opts, ios, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var p loopParams
	s.apply(&p)
	if want := (verify.Bounds{PushBytes: -1, FileBytes: 2048, PushFiles: 7}); p.Bounds != want {
		t.Errorf("bounds %+v, want %+v", p.Bounds, want)
	}
	if _, ws := newPRLoop(p, t.TempDir(), "r", nil, nil); ws.Bounds != p.Bounds {
		t.Errorf("the workspace's bounds %+v, want %+v", ws.Bounds, p.Bounds)
	}

	s, err = prSettings(&prOptions{}, &cmdutil.IOStreams{Getenv: func(string) string { return "" }}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.apply(&p)
	if p.Bounds != verify.DefaultBounds() {
		t.Errorf("bounds %+v, want the defaults %+v", p.Bounds, verify.DefaultBounds())
	}
}
