package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/exitcode"
)

// TestSEC_5_AppIDRefusedOnAForgeWithoutApps: a GitHub App is GitHub's
// (SEC-5); on a forge whose provider has no Apps, --app-id is bad input
// (exit 2), refused before any request and before anything is recorded,
// rather than dropped while the run acts with a token the user did not
// choose.
func TestSEC_5_AppIDRefusedOnAForgeWithoutApps(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	ios, out, errOut := testIO(map[string]string{"GITLAB_TOKEN": "glpat-" + strings.Repeat("x", 20)})
	code := Run(context.Background(), []string{"pr", "https://gitlab.example/group/project/-/merge_requests/1",
		"--app-id", "1", "--agent", "suggest", "--no-agent-check", "--state", state}, ios)
	if code != exitcode.Usage || !strings.Contains(errOut.String(), "--app-id is for GitHub Apps") {
		t.Fatalf("want exit 2 refusing --app-id, got %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(state, "converge.db")); err == nil {
		t.Error("a run was recorded before --app-id was refused")
	}
}
