package prloop

import (
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// The proof tells the truth about every thread (issue 36): a trusted
// "Thanks" is not a finding (structural or any: it asks for nothing), and
// a run that replied "Escalated to a human" anywhere never proves with
// "escalated threads none".

// cleanHead is a PR whose head Copilot reviewed clean, CI green.
func cleanHead() *forge.PullRequest {
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30))}
	return pr
}

// thanks are what trusted reviewers say when they ask for nothing.
var thanks = []string{"Thanks!", "LGTM, thanks", "Looks good", "Fixed, thanks!", "Perfect, thanks", "Thanks for fixing the race.", "👍"}

// TestPR_T13_S5_ATrustedThanksOnThePRIsNoFinding: a trusted human's
// top-level "Thanks!" was a structural finding (PR-T13 takes every
// trusted top-level comment since the last loop commit): a fixer ran on
// it and converge escalated it. It asks for nothing; the run that finds
// the PR otherwise two-stable ends two-stable at once.
func TestPR_T13_S5_ATrustedThanksOnThePRIsNoFinding(t *testing.T) {
	for _, body := range thanks {
		t.Run(body, func(t *testing.T) {
			pr := cleanHead()
			pr.IssueComments = []forge.IssueComment{{ID: 11, NodeID: "IC_1", Author: author, Body: body, CreatedAt: at(-10)}}
			_, acts, term := Decide(State{}, obs(at(0), pr), cfg())
			wantTerminal(t, term, ReasonTwoStable)
			wantActs(t, acts, "add-label "+LabelReady, "set-status success h1")
			if len(term.Proof.EscalatedThreads) != 0 {
				t.Fatalf("escalated %v", term.Proof.EscalatedThreads)
			}
		})
	}
	// More than thanks is still a request.
	for _, body := range []string{"Thanks, but please handle the nil case too.", "Thanks. The retry still drops the last message.", "Not great, thanks."} {
		t.Run(body, func(t *testing.T) {
			pr := cleanHead()
			pr.IssueComments = []forge.IssueComment{{ID: 11, NodeID: "IC_1", Author: author, Body: body, CreatedAt: at(-10)}}
			_, acts, term := Decide(State{}, obs(at(0), pr), cfg())
			wantTerminal(t, term, "")
			wantActs(t, acts, "set-status pending h1", "fix round-1/fix")
			if a := acts[1]; len(a.Findings) != 1 || a.Findings[0].Verdict != VerdictStructural {
				t.Fatalf("findings %+v", a.Findings)
			}
		})
	}
}

// TestPR_V6_S5_AThanksAfterConvergesReplyReopensNothing: PR-V6 makes a
// thread actionable again when a trusted comment follows converge's
// reply; a reviewer's "Thanks!" under "Addressed" reopened the thread
// (unresolve, fix: "Fixed, thanks!" read as structural). It asks for
// nothing: the resolved thread stays resolved, and an escalated one stays
// a hand-off for the human instead of going to a fixer.
func TestPR_V6_S5_AThanksAfterConvergesReplyReopensNothing(t *testing.T) {
	for _, body := range thanks {
		t.Run(body, func(t *testing.T) {
			pr := cleanHead()
			th := thread("T1", "bob", "this leaks the file handle")
			th.Comments = append(th.Comments,
				forge.Comment{Author: self, Body: "Addressed in h1.\n\n" + Marker("T1", "h1", DispAddressed), CreatedAt: at(-20)},
				forge.Comment{Author: "bob", Body: body, CreatedAt: at(-10)})
			th.IsResolved = true
			pr.Threads = []forge.Thread{th}
			_, acts, term := Decide(State{}, obs(at(0), pr), cfg())
			wantTerminal(t, term, ReasonTwoStable)
			wantActs(t, acts, "add-label "+LabelReady, "set-status success h1")

			// Escalated and open: still the human's, not a fixer's.
			th.IsResolved = false
			th.Comments[1].Body = "Escalated to a human: needs a design decision.\n\n" + Marker("T1", "h1", DispEscalated)
			pr.Threads = []forge.Thread{th}
			_, acts, term = Decide(State{}, obs(at(0), pr), cfg())
			wantTerminal(t, term, ReasonHandedOff)
			wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status error h1")
		})
	}
	// A reviewer who answers with more than thanks is taken up (PR-V6).
	pr := cleanHead()
	th := thread("T1", "bob", "this leaks the file handle")
	th.Comments = append(th.Comments,
		forge.Comment{Author: self, Body: "Addressed in h1.\n\n" + Marker("T1", "h1", DispAddressed), CreatedAt: at(-20)},
		forge.Comment{Author: "bob", Body: "Thanks, but it still leaks on the error path.", CreatedAt: at(-10)})
	th.IsResolved = true
	pr.Threads = []forge.Thread{th}
	_, acts, term := Decide(State{}, obs(at(0), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "unresolve round-1/unresolve/T1", "fix round-1/fix")
}

// TestPR_S5_T9_AThreadThatOnlyThanksIsNoFinding: a trusted reviewer's
// "Nice!" on a line, never answered, was a finding a fixer ran on. It is
// none; the run ends two-stable and the proof says the thread is open
// and why.
func TestPR_S5_T9_AThreadThatOnlyThanksIsNoFinding(t *testing.T) {
	pr := cleanHead()
	pr.Threads = []forge.Thread{thread("T1", "bob", "Nice!"), thread("T2", "carol", "Good catch, thanks!")}
	_, _, term := Decide(State{}, obs(at(0), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	p := term.Proof
	if p.OpenThreadsAwaitingReply != 0 || !slices.ContainsFunc(p.Notes, func(n string) bool {
		return strings.Contains(n, "only thank or approve") && strings.Contains(n, "T1, T2")
	}) {
		t.Fatalf("proof %+v", p)
	}
	// A second trusted comment that asks for something makes it a finding.
	th := thread("T1", "bob", "Nice!")
	th.Comments = append(th.Comments, forge.Comment{Author: "carol", Body: "Agreed, but rename it to loadAll.", CreatedAt: at(-5)})
	pr.Threads = []forge.Thread{th}
	_, acts, term := Decide(State{}, obs(at(0), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "fix round-1/fix")
}

// TestPR_T9_EscalatedTopLevelCommentIsInTheProof: a trusted human's
// top-level request converge could not fix is answered "Escalated to a
// human" with a top-level comment (PR-T13); it has no thread to stay
// open, so the run still ends two-stable, and its proof printed
// "escalated threads none". Every escalation is in the proof.
func TestPR_T9_EscalatedTopLevelCommentIsInTheProof(t *testing.T) {
	c := cfg()
	pr := cleanHead()
	pr.IssueComments = []forge.IssueComment{{ID: 11, NodeID: "IC_1", Author: "bob", Body: "Please rework the retry loop so it backs off.", CreatedAt: at(-10)}}
	s, acts, term := Decide(State{}, obs(at(0), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "fix round-1/fix")
	pr = forgeApply(pr, acts, at(0))
	o := obs(at(1), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Blocked: []BlockedFinding{{ID: "comment:IC_1", Reason: "it needs a design decision"}}}}
	s, acts, _ = Decide(s, o, c)
	if a := findAct(acts, ActComment, "comment:IC_1"); a == nil || !strings.Contains(a.Body, "Escalated to a human") {
		t.Fatalf("no escalation answer: %v", sig(acts))
	}
	pr = forgeApply(pr, acts, at(1))
	_, _, term = Decide(s, obs(at(2), pr), c)
	wantTerminal(t, term, ReasonTwoStable)
	if got := term.Proof.EscalatedThreads; !slices.Equal(got, []string{"comment:IC_1"}) {
		t.Fatalf("escalated threads %q, want the escalated comment", got)
	}
}

// TestPR_T9_EveryEscalationIsInTheProof: the proof listed a thread as
// escalated only while converge's latest reply in it said so. A thread
// converge escalated and later addressed (its reviewer answered), in
// this run or an earlier one, and an escalation recorded whose reply the
// forge does not show, are escalations all the same.
func TestPR_T9_EveryEscalationIsInTheProof(t *testing.T) {
	escalatedThenAddressed := func() forge.Thread {
		th := thread("T1", "bob", "rethink the retry API")
		th.Comments = append(th.Comments,
			forge.Comment{Author: self, Body: "Escalated to a human: needs a design decision.\n\n" + Marker("T1", "h0", DispEscalated), CreatedAt: at(-20)},
			forge.Comment{Author: "bob", Body: "Use exponential back-off with a cap.", CreatedAt: at(-15)},
			forge.Comment{Author: self, Body: "Addressed in h1.\n\n" + Marker("T1", "h1", DispAddressed), CreatedAt: at(-10)})
		th.IsResolved = true
		return th
	}
	for _, tc := range []struct {
		name  string
		state func(State) State
		pr    func(*forge.PullRequest)
		want  []string
	}{
		{"escalated in round 1, addressed in round 2 (the records and the forge)", func(s State) State {
			s.Threads = []ThreadRecord{{ThreadID: "T1", Round: 1, Disposition: DispEscalated, HeadSHA: "h0", Reason: "needs a design decision"},
				{ThreadID: "T1", Round: 2, Disposition: DispAddressed, HeadSHA: "h1", Resolved: true, ObservedResolved: true}}
			return s
		}, func(pr *forge.PullRequest) { pr.Threads = []forge.Thread{escalatedThenAddressed()} }, []string{"T1"}},
		{"escalated by an earlier run, superseded (the forge alone)", func(s State) State { return s },
			func(pr *forge.PullRequest) { pr.Threads = []forge.Thread{escalatedThenAddressed()} }, []string{"T1"}},
		{"recorded, the reply not shown (the records alone)", func(s State) State {
			s.Threads = []ThreadRecord{{ThreadID: "T7", Round: 1, Disposition: DispEscalated, HeadSHA: "h1", Reason: "needs a human"}}
			return s
		}, func(*forge.PullRequest) {}, []string{"T7"}},
		{"a top-level comment escalated by an earlier run (the forge alone)", func(s State) State { return s }, func(pr *forge.PullRequest) {
			pr.IssueComments = []forge.IssueComment{{ID: 11, NodeID: "IC_1", Author: "bob", Body: "Please rework the retry loop.", CreatedAt: at(-30)},
				{ID: 12, Author: self, Body: "@bob wrote:\n\n> Please rework the retry loop.\n\nEscalated to a human: it needs a design decision.\n\n" +
					Marker("comment:IC_1", "h0", DispEscalated), CreatedAt: at(-25)}}
		}, []string{"comment:IC_1"}},
		{"an open hand-off a human resolved (as before)", func(s State) State { return s }, func(pr *forge.PullRequest) {
			th := thread("T2", "bob", "redesign this")
			th.Comments = append(th.Comments, forge.Comment{Author: self, Body: "Escalated\n" + Marker("T2", "h0", DispEscalated)})
			th.IsResolved = true
			pr.Threads = []forge.Thread{th}
		}, []string{"T2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := cleanHead()
			pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
			tc.pr(pr)
			s := tc.state(verifying("h1", 2))
			_, _, term := Decide(s, obs(at(2), pr), cfg())
			wantTerminal(t, term, ReasonTwoStable)
			if got := term.Proof.EscalatedThreads; !slices.Equal(got, tc.want) {
				t.Fatalf("escalated threads %q, want %q", got, tc.want)
			}
		})
	}
}
