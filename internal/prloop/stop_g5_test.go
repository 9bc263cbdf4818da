package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_G5_StopNeverSplitsAPushFromItsReplies: a stop asked while the
// fixer ran (`converge stop`, a signal, the label) is honoured only once
// the commit it pushed has its replies and resolves; a stop with no fix
// in flight, or with a fix that pushed nothing, ends the run at once.
func TestPR_G5_StopNeverSplitsAPushFromItsReplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(pr *forge.PullRequest, o *Observation)
	}{
		{"converge stop", func(_ *forge.PullRequest, o *Observation) { o.StopRequested = true }},
		{"the stop label", func(pr *forge.PullRequest, o *Observation) {
			pr.Labels, o.StopLabelBy = append(pr.Labels, LabelStop), "bob"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg()
			pr := newPR("h0")
			t1, t2 := copilotThread("T1", "nil deref"), copilotThread("T2", "off by one")
			pr.Reviews = []forge.Review{rooted(botReview("R1", "h0", at(4), "Copilot reviewed 2 files and generated 2 comments."), &t1, &t2)}
			pr.Threads = []forge.Thread{t1, t2}
			s := awaiting("h0", 1)
			o := obs(at(4), pr)
			o.BotStartedMax = 101
			s, acts, term := Decide(s, o, c)
			wantTerminal(t, term, "")
			wantActs(t, acts, "fix round-1/fix")

			// The fixer pushed h1; the stop was asked while it ran.
			pr.HeadSHA = "h1"
			pr.Commits = append(pr.Commits, loopCommit("h1", "h0", 1))
			o = obs(at(8), pr)
			tc.stop(pr, &o)
			o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1", "T2"}, CommitSHA: "h1", LinesChanged: 12, TestsPassed: true}}
			s, acts, term = Decide(s, o, c)
			wantTerminal(t, term, "")
			wantActs(t, acts,
				"reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1",
				"reply round-1/reply/T2/addressed", "resolve round-1/resolve/T2")
			pr = forgeApply(pr, acts, at(8))

			// The replies are visible: now the stop ends the run, before
			// any new round is requested.
			o = obs(at(9), pr)
			tc.stop(pr, &o)
			_, acts, term = Decide(s, o, c)
			wantTerminal(t, term, ReasonStoppedByHuman)
			for _, a := range acts {
				if a.Kind == ActRequestReview || a.Kind == ActFix {
					t.Fatalf("a stopped run still acts: %q", sig(acts))
				}
			}
		})
	}
	t.Run("a fix that pushed nothing", func(t *testing.T) {
		c := cfg()
		pr := newPR("h0")
		t1 := copilotThread("T1", "nil deref")
		pr.Reviews = []forge.Review{rooted(botReview("R1", "h0", at(4), "Copilot reviewed 1 file and generated 1 comment."), &t1)}
		pr.Threads = []forge.Thread{t1}
		s := awaiting("h0", 1)
		o := obs(at(4), pr)
		o.BotStartedMax = 101
		s, _, _ = Decide(s, o, c)
		if s.Phase != PhaseFix {
			t.Fatalf("phase %s, want fix", s.Phase)
		}
		// A restart lost the fix's report and nothing was pushed: the
		// stop does not run the fixer again.
		o = obs(at(8), pr)
		o.StopRequested = true
		_, acts, term := Decide(s, o, c)
		wantTerminal(t, term, ReasonStoppedByHuman)
		if findAct(acts, ActFix, "") != nil {
			t.Fatalf("the fixer runs again after a stop: %q", sig(acts))
		}
	})
}
