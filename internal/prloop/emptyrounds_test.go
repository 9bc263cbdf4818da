package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// Rounds that do nothing end early and say why (issue 36): a round that
// pushes nothing and replies to nothing while it waits on a fact the forge
// never shows (a review's comments, CI on the head) starts another round
// on the same picture of the world. Three such rounds in a row on the
// same missing fact end the run convergence-failure (a stalled loop,
// exit 5) with a terminal naming that fact, instead of empty rounds to
// the cap ending "cap-exhausted" and naming nothing.

// driveRounds plays the engine and the forge for Decide: one observation
// every step minutes from the minute from, each action applied to the PR
// as the forge would (forgeApply); hook may answer what only the engine
// can (a fix) and change the PR before the next observation. It stops at
// a terminal or after n observations.
func driveRounds(t *testing.T, s State, pr *forge.PullRequest, c Config, from, step float64, n int,
	hook func(now float64, pr *forge.PullRequest, acts []Action) (*forge.PullRequest, *ActResult)) (State, *Terminal) {
	t.Helper()
	now := from
	var res *ActResult
	for range n {
		o := obs(at(now), pr)
		o.Result = res
		var acts []Action
		var term *Terminal
		s, acts, term = Decide(s, o, c)
		if term != nil {
			return s, term
		}
		pr = forgeApply(pr, acts, at(now))
		res = nil
		if hook != nil {
			pr, res = hook(now, pr, acts)
		}
		now += step
	}
	return s, nil
}

// unseenReviewPR is a PR whose head Copilot reviewed clean and on which a
// trusted human's review counts a comment that never becomes visible
// (PR-O2).
func unseenReviewPR() *forge.PullRequest {
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(-1)),
		{ID: "RH", Author: "bob", State: forge.ReviewCommented, CommitSHA: "h1", SubmittedAt: at(-1), CommentCount: 1}}
	return pr
}

func wantEmptyRoundsEnd(t *testing.T, s State, term *Terminal, round int, names ...string) {
	t.Helper()
	if term == nil {
		t.Fatalf("no terminal after %d round(s): the empty rounds ran on", s.Round)
	}
	wantTerminal(t, term, ReasonConvergenceFailure)
	if term.Note != NoteEmptyRounds || s.Round != round {
		t.Fatalf("terminal in round %d (want %d), note %q: %s", s.Round, round, term.Note, term.Message)
	}
	for _, n := range names {
		if !strings.Contains(term.Message, n) {
			t.Fatalf("the terminal does not name %q: %s", n, term.Message)
		}
	}
}

// TestPR_T6_O2_EmptyRoundsOnUnseenCommentsEndNamingTheReview: a review
// whose comments never become visible keeps conjunct 3 unproven (PR-O2);
// after the bounded reads each round reads again, changes nothing, and
// the third such round ends the run naming the review.
func TestPR_T6_O2_EmptyRoundsOnUnseenCommentsEndNamingTheReview(t *testing.T) {
	c := cfg()
	s, term := driveRounds(t, State{}, unseenReviewPR(), c, 0, 0.2, 60, nil)
	wantEmptyRoundsEnd(t, s, term, 3, "review RH's comments never became visible", "3 rounds in a row changed nothing")
	if s.EmptyKey != "unseen/RH" || s.EmptyRounds != 3 {
		t.Fatalf("state records %q ×%d", s.EmptyKey, s.EmptyRounds)
	}
}

// TestPR_T6_T1_EmptyRoundsWithoutCIEndNamingCI: checks are expected
// (PR-T1(2)) and no CI ever reports on the head. Past the bounded CI wait
// every round has nothing to do but wait for it; the third ends the run
// naming CI on the head, before the idle timeout or the cap.
func TestPR_T6_T1_EmptyRoundsWithoutCIEndNamingCI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks forge.CheckRollup
		names  []string
	}{
		{"no check ever reports", forge.CheckRollup{}, []string{"no CI reported on h1 while checks are expected"}},
		{"a check never leaves the queue", ciWith("QUEUED", ""), []string{"CI on h1 never settled", "test still pending"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg()
			pr := newPR("h1")
			pr.Checks = tc.checks
			// The run requests Copilot's review of the head, which lands
			// four minutes later; then only CI is missing.
			hook := func(now float64, pr *forge.PullRequest, _ []Action) (*forge.PullRequest, *ActResult) {
				if now >= 3 && len(pr.Reviews) == 0 {
					pr.Reviews = []forge.Review{okReview("R1", "h1", at(4))}
					pr.RequestedReviewers = nil
				}
				return pr, nil
			}
			s, term := driveRounds(t, State{}, pr, c, 0, 1, 60, hook)
			wantEmptyRoundsEnd(t, s, term, 3, tc.names...)
			if s.EmptyRounds != 3 || !strings.HasPrefix(s.EmptyKey, "ci-") {
				t.Fatalf("state records %q ×%d", s.EmptyKey, s.EmptyRounds)
			}
		})
	}
}

// TestPR_T6_O2_ARoundThatChangesSomethingResetsTheCount: the count is of
// rounds in a row that change nothing. A round that fixes a trusted
// reviewer's nit and pushes, while the review's comments are still not
// visible, changed something: the three empty rounds are counted again
// from the next round on.
func TestPR_T6_O2_ARoundThatChangesSomethingResetsTheCount(t *testing.T) {
	c := cfg()
	pr := unseenReviewPR()
	nitAdded, pushed := false, false
	hook := func(now float64, pr *forge.PullRequest, acts []Action) (*forge.PullRequest, *ActResult) {
		for _, a := range acts {
			if a.Kind == ActWait && strings.Contains(a.Reason, "not proven, trying another round") && !nitAdded {
				// Round 1 was empty; a nit arrives for round 2.
				nitAdded = true
				pr.Threads = append(pr.Threads, thread("T1", "bob", "nit: typo, s/recieve/receive/"))
			}
			if a.Kind == ActFix && !pushed {
				pushed = true
				pr.HeadSHA = "h2"
				pr.Commits = append(pr.Commits, loopCommit("h2", "h1", a.Round))
				pr.Reviews = append(pr.Reviews, okReview("R2", "h2", at(now+0.2)))
				return pr, &ActResult{Fix: &FixResult{Round: a.Round, Addressed: []string{"T1"}, CommitSHA: "h2", LinesChanged: 1, TestsPassed: true}}
			}
		}
		return pr, nil
	}
	s, term := driveRounds(t, State{}, pr, c, 0, 0.2, 80, hook)
	if !pushed {
		t.Fatal("the nit was never fixed")
	}
	// Round 1 empty, round 2 pushed the fix (the count starts again),
	// rounds 3, 4 and 5 empty on the same fact.
	wantEmptyRoundsEnd(t, s, term, 5, "review RH's comments never became visible")
	if s.Rounds[1].CommitSHA != "h2" {
		t.Fatalf("round 2 did not push: %+v", s.Rounds[1])
	}
}

// TestPR_T6_EmptyRoundsOnDifferentFactsAreNotOneStreak: rounds that wait
// on different missing facts are not three in a row on the same one.
func TestPR_T6_EmptyRoundsOnDifferentFactsAreNotOneStreak(t *testing.T) {
	s := verifying("h1", 3)
	s.EmptyKey, s.EmptyWhy, s.EmptyRounds, s.EmptyRound = "ci-none/h1", "no CI", 2, 2
	pr := unseenReviewPR()
	s.UnsettledReview, s.UnsettledCount = "RH", cfg().UnsettledReads
	s2, _, term := Decide(s, obs(at(1), pr), cfg())
	wantTerminal(t, term, "")
	if s2.EmptyKey != "unseen/RH" || s2.EmptyRounds != 1 {
		t.Fatalf("state records %q ×%d, want unseen/RH ×1", s2.EmptyKey, s2.EmptyRounds)
	}
	// The same fact two rounds in a row before this one: this one ends it.
	s.EmptyKey = "unseen/RH"
	_, _, term = Decide(s, obs(at(1), pr), cfg())
	wantTerminal(t, term, ReasonConvergenceFailure)
}
