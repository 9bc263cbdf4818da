package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_G5_StopFromThePRCountsOnlyFromATrustedAuthor: the stop label and
// a /converge stop comment posted since the run started stop it when a
// trusted author gave them; an outsider's are ignored, and an older
// comment does not stop a new run.
func TestPR_G5_StopFromThePRCountsOnlyFromATrustedAuthor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(pr *forge.PullRequest, o *Observation)
		stop  bool
	}{
		{"label by a maintainer", func(pr *forge.PullRequest, o *Observation) {
			pr.Labels, o.StopLabelBy = []string{LabelStop}, "bob"
		}, true},
		{"label by an outsider", func(pr *forge.PullRequest, o *Observation) {
			pr.Labels, o.StopLabelBy = []string{LabelStop}, "mallory"
		}, false},
		{"label by someone the forge does not name", func(pr *forge.PullRequest, o *Observation) {
			pr.Labels = []string{LabelStop}
		}, true},
		{"comment by a maintainer", func(pr *forge.PullRequest, o *Observation) {
			pr.IssueComments = []forge.IssueComment{{Author: "bob", Body: "/converge stop\nplease", CreatedAt: at(1)}}
		}, true},
		{"comment by an outsider", func(pr *forge.PullRequest, o *Observation) {
			pr.IssueComments = []forge.IssueComment{{Author: "mallory", Body: "/converge stop", CreatedAt: at(1)}}
		}, false},
		{"comment from before the run", func(pr *forge.PullRequest, o *Observation) {
			pr.IssueComments = []forge.IssueComment{{Author: "bob", Body: "/converge stop", CreatedAt: at(-60)}}
		}, false},
		{"the command quoted in a sentence", func(pr *forge.PullRequest, o *Observation) {
			pr.IssueComments = []forge.IssueComment{{Author: "bob", Body: "Do not /converge stop yet", CreatedAt: at(1)}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPR("h1")
			pr.Threads = []forge.Thread{copilotThread("T1", "bug")}
			o := obs(at(2), pr)
			tc.setup(pr, &o)
			s := started("h1")
			_, _, term := Decide(s, o, cfg())
			if got := term != nil && term.Reason == ReasonStoppedByHuman; got != tc.stop {
				t.Fatalf("stopped %v, want %v (terminal %+v)", got, tc.stop, term)
			}
		})
	}
}
