package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_S5_TriageClassifiesTheRound: a review that raises only a wording
// nit makes a minor round (conjunct 1 can hold, the consecutive-structural
// count resets); a security finding keeps it structural whatever its
// phrasing. Minor threads are fixed like the rest by default, and with
// fix_minor off they are deferred to a human with a reply saying why.
func TestPR_S5_TriageClassifiesTheRound(t *testing.T) {
	nit := "nit: typo in the comment above, \"recieve\" should be \"receive\"."
	sec := "nit: this logs the API token in plain text; redact it before logging."
	for _, tc := range []struct {
		name       string
		bodies     []string
		fixMinor   bool
		structural bool
		acts       []string
		verdicts   []Verdict
	}{
		{"a wording nit", []string{nit}, true, false, []string{"fix round-2/fix"}, []Verdict{VerdictMinor}},
		{"a security point phrased as a nit", []string{sec}, true, true, []string{"fix round-2/fix"}, []Verdict{VerdictStructural}},
		{"both", []string{nit, sec}, true, true, []string{"fix round-2/fix"}, []Verdict{VerdictMinor, VerdictStructural}},
		{"a nit with fix_minor off", []string{nit}, false, false,
			[]string{"reply round-2/reply/T1/deferred"}, []Verdict{VerdictMinor}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg()
			c.FixMinor = tc.fixMinor
			s := awaiting("h1", 2)
			s.ConsecutiveStructural = 1
			pr := newPR("h1")
			r := okReview("R2", "h1", at(1))
			var ths []*forge.Thread
			for i, b := range tc.bodies {
				th := copilotThread("T"+string(rune('1'+i)), b)
				ths = append(ths, &th)
			}
			r = rooted(r, ths...)
			r.Body = "## Pull request overview\n\nCopilot reviewed 1 out of 1 changed files in this pull request and generated " + map[int]string{1: "1 comment", 2: "2 comments"}[len(ths)] + "."
			pr.Reviews = []forge.Review{r}
			for _, th := range ths {
				pr.Threads = append(pr.Threads, *th)
			}
			s2, acts, _ := Decide(s, obs(at(2), pr), c)
			var got []string
			for _, a := range acts {
				if a.Kind == ActFix || a.Kind == ActReply {
					got = append(got, strings.Join(sig([]Action{a}), ""))
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.acts, ",") {
				t.Fatalf("acts %v, want %v (all: %v)", got, tc.acts, sig(acts))
			}
			rr := s2.Rounds[len(s2.Rounds)-1]
			if rr.Structural != tc.structural {
				t.Fatalf("round structural %v, want %v: %+v", rr.Structural, tc.structural, rr.Findings)
			}
			if want := map[bool]int{true: 2, false: 0}[tc.structural]; s2.ConsecutiveStructural != want {
				t.Fatalf("consecutive structural %d, want %d", s2.ConsecutiveStructural, want)
			}
			for i, f := range rr.Findings {
				if f.Verdict != tc.verdicts[i] || f.Class == "" {
					t.Fatalf("finding %s: verdict %s (%s), want %s", f.ID, f.Verdict, f.Class, tc.verdicts[i])
				}
			}
		})
	}
}
