package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_HappyPathThreeRounds drives Decide the way the demo runs: round 1
// Copilot finds two things, the fix is pushed, replied to and resolved;
// round 2 finds one more; round 3 "generated no new comments" on the pushed
// head with CI green, and the run ends two-stable. The engine side (act,
// forge) is played by forgeApply.
func TestPR_HappyPathThreeRounds(t *testing.T) {
	c := cfg()
	pr := newPR("h0")
	pr.Checks = ciWith("IN_PROGRESS", "")

	// 1: start. Not two-stable (no review): round 1 is requested at once.
	s, acts, term := Decide(State{}, obs(at(0), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h0", "request-review round-1/request-review")
	if s.Phase != PhaseAwaitReview || s.Round != 1 || s.LastLoopSHA != "h0" || !s.WantsEvents() {
		t.Fatalf("after start: phase %s round %d last %s wants-events %v", s.Phase, s.Round, s.LastLoopSHA, s.WantsEvents())
	}
	pr = forgeApply(pr, acts, at(0))

	// 2: requested, not started: wait.
	s, acts, _ = Decide(s, obs(at(1), pr), c)
	wantActs(t, acts, "wait")

	// 3: Copilot's review lands on h0 with two threads.
	t1, t2 := copilotThread("T1", "nil deref"), copilotThread("T2", "off by one")
	pr.Reviews = []forge.Review{rooted(botReview("R1", "h0", at(4), "Copilot reviewed 2 files and generated 2 comments."), &t1, &t2)}
	pr.Threads = []forge.Thread{t1, t2}
	o := obs(at(4), pr)
	o.BotStartedMax = 101
	s, acts, _ = Decide(s, o, c)
	wantActs(t, acts, "fix round-1/fix")
	if len(acts[0].Findings) != 2 || acts[0].Findings[0].ID != "T1" || acts[0].Findings[1].ID != "T2" || acts[0].Findings[0].Verdict != "structural" {
		t.Fatalf("fix findings: %+v", acts[0].Findings)
	}
	if s.Phase != PhaseFix || s.Request.Accepted != "R1" || s.Rounds[0].ReviewID != "R1" || s.ConsecutiveStructural != 1 {
		t.Fatalf("after triage: %+v", s)
	}

	// 4: the fix pushed h1.
	pr.HeadSHA, pr.Checks = "h1", ciWith("IN_PROGRESS", "")
	pr.Commits = append(pr.Commits, loopCommit("h1", "h0", 1))
	o = obs(at(8), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1", "T2"}, CommitSHA: "h1", LinesChanged: 12, TestsPassed: true,
		Notes: []string{"fixer of file main.go: DONE_WITH_CONCERNS with concerns: the helper is untested"}}}
	s, acts, _ = Decide(s, o, c)
	wantActs(t, acts,
		"reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1",
		"reply round-1/reply/T2/addressed", "resolve round-1/resolve/T2")
	if s.LastLoopSHA != "h1" || s.LoopDiffLines != 12 || s.Phase != PhaseReply {
		t.Fatalf("after fix: last %s lines %d phase %s", s.LastLoopSHA, s.LoopDiffLines, s.Phase)
	}
	// AG-T2: the fixers' concerns are the round's record.
	if got := s.Rounds[0].Notes; len(got) != 1 || !strings.Contains(got[0], "the helper is untested") {
		t.Fatalf("round notes %q", got)
	}
	pr = forgeApply(pr, acts, at(8))

	// 5: replies visible: verify (structural round) → round 2 requested.
	s, acts, term = Decide(s, obs(at(9), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "request-review round-2/request-review")
	if s.Round != 2 || s.Request.Head != "h1" || len(s.Request.SeenReviews) != 1 {
		t.Fatalf("round 2: %+v", s)
	}
	pr = forgeApply(pr, acts, at(9))

	// 6: round 2's review on h1 with one new thread.
	t3 := copilotThread("T3", "missing test")
	pr.Reviews = append(pr.Reviews, rooted(botReview("R2", "h1", at(13), "generated 1 comment"), &t3))
	pr.Threads = append(pr.Threads, t3)
	s, acts, _ = Decide(s, obs(at(13), pr), c)
	wantActs(t, acts, "fix round-2/fix")
	if len(acts[0].Findings) != 1 || acts[0].Findings[0].ID != "T3" {
		t.Fatalf("round 2 findings: %+v", acts[0].Findings)
	}

	// 7: pushed h2; reply and resolve T3.
	pr.HeadSHA = "h2"
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 2))
	pr.Checks = ciWith("IN_PROGRESS", "")
	o = obs(at(16), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 2, Addressed: []string{"T3"}, CommitSHA: "h2", LinesChanged: 5}}
	s, acts, _ = Decide(s, o, c)
	wantActs(t, acts, "reply round-2/reply/T3/addressed", "resolve round-2/resolve/T3")
	pr = forgeApply(pr, acts, at(16))

	// 8: → round 3.
	s, acts, _ = Decide(s, obs(at(17), pr), c)
	wantActs(t, acts, "set-status pending h2", "request-review round-3/request-review")
	pr = forgeApply(pr, acts, at(17))

	// 9: "generated no new comments" on h2, CI still running: wait for CI.
	pr.Reviews = append(pr.Reviews, okReview("R3", "h2", at(21)))
	s, acts, term = Decide(s, obs(at(21), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "wait")
	if s.Phase != PhaseVerify || s.ConsecutiveStructural != 0 || !strings.Contains(acts[0].Reason, "CI") {
		t.Fatalf("awaiting CI: phase %s reason %q", s.Phase, acts[0].Reason)
	}

	// 10: CI green → two-stable.
	pr.Checks = withConvergeStatus(green(), "pending")
	s, acts, term = Decide(s, obs(at(25), pr), c)
	wantTerminal(t, term, ReasonTwoStable)
	wantActs(t, acts, "add-label "+LabelReady, "set-status success h2")
	p := term.Proof
	if p.HeadSHA != "h2" || p.ReviewedCommit != "h2" || p.ReviewID != "R3" || p.RoundsRun != 3 || p.OpenThreadsAwaitingReply != 0 || p.CIState != "success" {
		t.Fatalf("proof: %+v", p)
	}
	if s.Phase != PhaseDone || s.Terminal != term {
		t.Fatalf("state not done: %s", s.Phase)
	}

	// Done is sticky: the terminal again. Its writes are asked for again
	// only while the forge does not show them (a fault interrupted them).
	_, again1, _ := Decide(s, obs(at(26), pr), c)
	wantActs(t, again1, "add-label "+LabelReady, "set-status success h2")
	pr = forgeApply(pr, acts, at(26))
	_, acts, again := Decide(s, obs(at(26), pr), c)
	wantActs(t, acts)
	if again == nil || again.Reason != ReasonTwoStable {
		t.Fatalf("done state did not return its terminal: %+v", again)
	}
}
