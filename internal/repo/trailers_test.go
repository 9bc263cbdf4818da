package repo_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

func TestPR_T4_TrailerMustBeRealTrailer(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		want bool
	}{
		{"trailer block", "fix: x\n\nbody\n\nConverge-Round: 2\n", true},
		{"key case-insensitive", "fix: x\n\nconverge-round: 2\n", true},
		{"with other trailers", "fix: x\n\nbody\n\nSigned-off-by: A <a@b>\nConverge-Round: 2\nCo-authored-by: B <b@c>\n", true},
		{"space before colon", "fix: x\n\nConverge-Round : 2\n", true},
		{"continuation line", "fix: x\n\nConverge-Round: 2\n  folded\nX-Other: y\n", true},
		{"trailing comments and blanks", "fix: x\n\nConverge-Round: 2\n\n# comment\n\n", true},
		{"before a patch divider", "fix: x\n\nConverge-Round: 2\n---\n a.go | 2 +-\n", true},
		{"mentioned in body", "fix: x\n\nThis undoes the change from Converge-Round: 2 because\nit broke the build.\n", false},
		{"body line that looks like one", "fix: x\n\nConverge-Round: 2\nthen more prose here\n", false},
		{"not the last paragraph", "fix: x\n\nConverge-Round: 2\n\nA closing paragraph of prose.\n", false},
		{"title only", "Converge-Round: 2\n", false},
		{"title paragraph", "Converge-Round: 2\nsecond title line\n", false},
		{"quoted in body", "fix: x\n\n> Converge-Round: 2\n", false},
		{"other key", "fix: x\n\nConverge-Run: r-1\n", false},
		{"prefix key", "fix: x\n\nConverge-Rounds: 2\n", false},
		{"indented", "fix: x\n\n    Converge-Round: 2\n", false},
		{"after the divider", "fix: x\n\nbody\n---\nConverge-Round: 2\n", false},
		{"25% with sign-off", "fix: x\n\nsome prose line\nConverge-Round: 2\nSigned-off-by: A <a@b>\nmore prose\n", true},
		{"under 25% with sign-off", "fix: x\n\np1\np2\np3\np4\np5\np6\np7\nConverge-Round: 2\nSigned-off-by: A <a@b>\n", false},
		{"CRLF", "fix: x\r\n\r\nConverge-Round: 2\r\n", true},
		{"empty", "", false},
	}
	gitOK := exec.Command("git", "version").Run() == nil
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := repo.HasTrailer(c.msg, "Converge-Round"); got != c.want {
				t.Errorf("HasTrailer = %v, want %v for:\n%s", got, c.want, c.msg)
			}
			// git itself must agree: the loop reads commits through git.
			if !gitOK || strings.Contains(c.msg, "\r") {
				return
			}
			cmd := exec.CommandContext(context.Background(), "git", "interpret-trailers", "--parse")
			cmd.Stdin = strings.NewReader(c.msg)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("git interpret-trailers: %v", err)
			}
			gitSays := false
			for _, l := range strings.Split(string(out), "\n") {
				k, _, _ := strings.Cut(l, ":")
				if strings.EqualFold(strings.TrimSpace(k), "Converge-Round") {
					gitSays = true
				}
			}
			if gitSays != c.want {
				t.Errorf("git interpret-trailers says %v, the test table %v:\n%s", gitSays, c.want, out)
			}
		})
	}
}

func TestParseTrailers(t *testing.T) {
	got := repo.ParseTrailers("t\n\nbody\n\nA: 1\nB-C:2\n  more\n(cherry picked from commit abc)\n")
	want := []repo.Trailer{{Key: "A", Value: "1"}, {Key: "B-C", Value: "2 more"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("trailer %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
