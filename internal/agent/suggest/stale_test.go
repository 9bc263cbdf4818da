package suggest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// gitRepo makes a repository whose history is the given versions of
// NOTES.md, one commit each, and returns its directory and the commits.
func gitRepo(t *testing.T, versions ...string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	var commits []string
	for _, v := range versions {
		if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "NOTES.md")
		git("commit", "-q", "--allow-empty", "-m", "v")
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	return dir, commits
}

// TestPR_S9_SuggestionOnlyWhereWrittenAgainst is case 8 of issue 6: a
// suggestion replaces only the exact lines the reviewer saw, found
// unchanged at the thread's current position; otherwise it is a hand-off
// and the file is left as it is.
func TestPR_S9_SuggestionOnlyWhereWrittenAgainst(t *testing.T) {
	const reviewed = "# Notes\nalpha\nbeta\ngamma\n"
	const movedDown = "# Notes\nintro\nalpha\nbeta\ngamma\n" // a line was inserted above
	const changed = "# Notes\nalpha\nBETA (edited)\ngamma\n"
	body := "Tighten this.\n```suggestion\nalpha, beta\n```\n"
	tests := []struct {
		name     string
		head     string // NOTES.md on the head the fix runs on
		f        agent.Finding
		badSHA   bool // OriginalCommit names a commit the clone lacks
		noSHA    bool // the forge gave no OriginalCommit
		want     string
		status   agent.Status
		reason   string
		inReason string
	}{
		{name: "exact match applies", head: reviewed,
			f:    agent.Finding{StartLine: 2, EndLine: 3, OrigStart: 2, OrigEnd: 3},
			want: "# Notes\nalpha, beta\ngamma\n", status: agent.StatusComplete},
		{name: "moved lines at their current position apply", head: movedDown,
			f:    agent.Finding{StartLine: 3, EndLine: 4, OrigStart: 2, OrigEnd: 3},
			want: "# Notes\nintro\nalpha, beta\ngamma\n", status: agent.StatusComplete},
		{name: "moved lines at the stale position are not written", head: movedDown,
			f:    agent.Finding{StartLine: 2, EndLine: 3, OrigStart: 2, OrigEnd: 3, Outdated: true},
			want: movedDown, status: agent.StatusBlocked, reason: ReasonStale, inReason: "lines 2-3 of NOTES.md are not the lines 2-3"},
		{name: "changed lines are not written", head: changed,
			f:    agent.Finding{StartLine: 2, EndLine: 3, OrigStart: 2, OrigEnd: 3, Outdated: true},
			want: changed, status: agent.StatusBlocked, reason: ReasonStale},
		{name: "no current position", head: changed,
			f:    agent.Finding{OrigStart: 2, OrigEnd: 3, Outdated: true},
			want: changed, status: agent.StatusBlocked, reason: ReasonStale, inReason: "no current position"},
		{name: "reviewed commit unavailable", head: reviewed, badSHA: true,
			f:    agent.Finding{StartLine: 2, EndLine: 3, OrigStart: 2, OrigEnd: 3},
			want: reviewed, status: agent.StatusBlocked, reason: ReasonStale, inReason: "not available"},
		{name: "outdated without a reviewed commit", head: reviewed, noSHA: true,
			f:    agent.Finding{StartLine: 2, EndLine: 3, Outdated: true},
			want: reviewed, status: agent.StatusBlocked, reason: ReasonStale},
		{name: "replacement equal to the current lines", head: reviewed,
			f:    agent.Finding{StartLine: 2, EndLine: 2, OrigStart: 2, OrigEnd: 2, Body: "```suggestion\nalpha\n```"},
			want: reviewed, status: agent.StatusBlocked, reason: ReasonNoChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, commits := gitRepo(t, reviewed, tt.head)
			f := tt.f
			f.ID, f.Path, f.OriginalCommit = "T1", "NOTES.md", commits[0]
			switch {
			case tt.badSHA:
				f.OriginalCommit = strings.Repeat("ab", 20)
			case tt.noSHA:
				f.OriginalCommit = ""
			}
			if f.Body == "" {
				f.Body = body
			}
			res, err := New().Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Findings: []agent.Finding{f}})
			if err != nil {
				t.Fatal(err)
			}
			if got := read(t, dir, "NOTES.md"); got != tt.want {
				t.Errorf("NOTES.md = %q, want %q", got, tt.want)
			}
			o := res.Outcomes[0]
			if o.Status != tt.status || !strings.HasPrefix(o.Reason, tt.reason) || !strings.Contains(o.Reason, tt.inReason) {
				t.Errorf("outcome = %+v, want %s %q…%q", o, tt.status, tt.reason, tt.inReason)
			}
			if res.Record.Status != tt.status {
				t.Errorf("record = %+v", res.Record)
			}
		})
	}
}
