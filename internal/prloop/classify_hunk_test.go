package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// A Copilot comment fixing a typo in a code comment, with its exact
// replacement; on TypoHunk the suggestion differs from the hunk's last
// line only inside the comment.
const (
	typoBody = "Typo in the comment: \"Obsevre\" should be \"Observe\".\n\n```suggestion\n\t\t// Observe the world; Decide is pure.\n```"
	// Two lines of code, the thread on both, outdated since: only the
	// comment on the first changes.
	rangeBody = "Typo.\n\n```suggestion\n\tx := 1 // Observe\n\ty := 2\n```"
	rangeHunk = "@@ -1,2 +1,4 @@\n package engine\n \n+\tx := 1 // Obsevre\n+\ty := 2"
)

// TestPR_S5_ForgeThreadHunkReachesTheHeuristic: the heuristic gets a forge
// thread's diff hunk (PR-O1) as in the benchmark, so a ```suggestion that
// only fixes a comment is minor (suggestion-layout); without the hunk the
// same comment cannot be compared and stays borderline, so structural. An
// outdated thread's suggestion is compared with the lines of its original
// range, where its hunk ends.
func TestPR_S5_ForgeThreadHunkReachesTheHeuristic(t *testing.T) {
	for _, tc := range []struct {
		name, body, hunk string
		outdated         bool
		verdict          Verdict
		rule             string
	}{
		{"with its hunk", typoBody, TypoHunk, false, VerdictMinor, "suggestion-layout"},
		{"without a hunk", typoBody, "", false, VerdictStructural, "suggestion-unknown-lines"},
		{"outdated, a two-line range", rangeBody, rangeHunk, true, VerdictMinor, "suggestion-layout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := awaiting("h1", 2)
			pr := newPR("h1")
			th := copilotThread("T1", tc.body)
			th.Path = "internal/engine/engine.go"
			th.Comments[0].DiffHunk = tc.hunk
			if tc.outdated {
				th.IsOutdated, th.Line, th.StartLine, th.OrigStart, th.OrigLine = true, 0, 0, 3, 4
			}
			r := rooted(okReview("R2", "h1", at(1)), &th)
			r.Body = "## Pull request overview\n\nCopilot reviewed 1 out of 1 changed files in this pull request and generated 1 comment."
			pr.Reviews, pr.Threads = []forge.Review{r}, []forge.Thread{th}
			s2, _, _ := Decide(s, obs(at(2), pr), cfg())
			fs := s2.Rounds[len(s2.Rounds)-1].Findings
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			if f := fs[0]; f.Verdict != tc.verdict || !strings.Contains(f.Class, tc.rule) {
				t.Fatalf("verdict %s (%s), want %s by %s", f.Verdict, f.Class, tc.verdict, tc.rule)
			}
		})
	}
}
