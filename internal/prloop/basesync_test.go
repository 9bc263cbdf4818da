package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

func syncCfg() Config {
	c := cfg()
	c.SyncBase = true
	return c
}

// behind is a PR on head whose base moved on without conflicts.
func behind(head string) *forge.PullRequest {
	pr := newPR(head)
	pr.MergeState, pr.BaseSHA = forge.MergeBehind, "base2"
	return pr
}

func TestPR_S14_BehindIsMergedAsTheRoundsCommitThenReviewedAgain(t *testing.T) {
	c := syncCfg()
	s := verifying("h1", 2)
	pr := behind("h1")
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}

	// Everything else of two-stable holds: the round's commit is the merge.
	s, acts, term := Decide(s, obs(at(2), pr), c)
	wantTerminal(t, term, "")
	wantActs(t, acts, "sync-base round-2/sync-base")
	if s.Phase != PhaseFix {
		t.Fatalf("phase %s, want fix", s.Phase)
	}

	// The merge commit is pushed: it is the loop's, it costs the loop no
	// lines, and the merged head needs a review of its own.
	merged := newPR("h2")
	merged.BaseSHA = "base2"
	merged.Commits = append(merged.Commits, forge.Commit{SHA: "h2", Parents: []string{"h1", "base2"},
		Message: "converge: merge main into feature (base sync)\n\n" + CommitTrailer + ": 2\n"})
	merged.Reviews = pr.Reviews
	o := obs(at(3), merged)
	o.Result = &ActResult{Fix: &FixResult{Round: 2, Sync: true, CommitSHA: "h2", TestsPassed: true}}
	s, acts, term = Decide(s, o, c)
	wantTerminal(t, term, "")
	if s.LastLoopSHA != "h2" || s.LoopDiffLines != 0 {
		t.Fatalf("last loop sha %s, loop lines %d; want h2, 0", s.LastLoopSHA, s.LoopDiffLines)
	}
	if rr := s.Rounds[1]; rr.N != 2 || rr.CommitSHA != "h2" || !strings.Contains(strings.Join(rr.Notes, ";"), "base sync: merged main") {
		t.Fatalf("round record %+v", rr)
	}
	wantActs(t, acts, "set-status pending h2", "request-review round-3/request-review")

	// The merged head reviewed clean and no longer BEHIND: two-stable.
	s.Phase = PhaseVerify
	s.Request.Head = "h2"
	merged.Reviews = []forge.Review{okReview("R3", "h2", at(4))}
	_, _, term = Decide(s, obs(at(5), merged), c)
	wantTerminal(t, term, ReasonTwoStable)
}

func TestPR_S14_SyncThatMakesNoCommitIsNotTriedAgain(t *testing.T) {
	c := syncCfg()
	s := verifying("h1", 2)
	pr := behind("h1")
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	s, _, _ = Decide(s, obs(at(2), pr), c)
	o := obs(at(3), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 2, Sync: true, SyncWhy: "the tests fail after merging main: --- FAIL: TestX"}}
	s, _, term := Decide(s, o, c)
	wantTerminal(t, term, ReasonTwoStable)
	notes := strings.Join(term.Proof.Notes, "\n")
	if !strings.Contains(notes, "BEHIND") || !strings.Contains(notes, "TestX") || s.LastLoopSHA != "h1" {
		t.Fatalf("proof notes %q, last loop sha %s", notes, s.LastLoopSHA)
	}

	// The base moving again is a new pair: tried again.
	s2 := verifying("h1", 2)
	s2.BaseSyncSkip, s2.BaseSyncWhy = syncKey("h1", "base1"), "conflict"
	_, acts, _ := Decide(s2, obs(at(2), pr), c)
	wantActs(t, acts, "sync-base round-2/sync-base")
}

func TestPR_S14_SyncIsOptInAndDirtyAlwaysEndsBaseMoved(t *testing.T) {
	tests := []struct {
		name     string
		sync     bool
		merge    forge.MergeState
		terminal Reason
		acts     []string
	}{
		{"BEHIND, sync_base off: two-stable, BEHIND noted", false, forge.MergeBehind, ReasonTwoStable,
			[]string{"add-label " + LabelReady, "set-status success h1"}},
		{"BEHIND, sync_base on: merged first", true, forge.MergeBehind, "", []string{"sync-base round-2/sync-base"}},
		{"DIRTY, sync_base off: base-moved", false, forge.MergeDirty, ReasonBaseMoved,
			[]string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"DIRTY, sync_base on: base-moved, never hand-resolved", true, forge.MergeDirty, ReasonBaseMoved,
			[]string{"add-label " + LabelNeedsAttention, "set-status error h1"}},
		{"CLEAN, sync_base on: nothing to sync", true, forge.MergeClean, ReasonTwoStable,
			[]string{"add-label " + LabelReady, "set-status success h1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			c.SyncBase = tt.sync
			pr := behind("h1")
			pr.MergeState = tt.merge
			pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
			_, acts, term := Decide(verifying("h1", 2), obs(at(2), pr), c)
			wantTerminal(t, term, tt.terminal)
			wantActs(t, acts, tt.acts...)
		})
	}
}

// A PR already two-stable but BEHIND is not ended at once when sync_base
// is on: a round brings it up to date (PR-S1's shortcut yields to
// PR-S14).
func TestPR_S14_AlreadyTwoStableButBehindStartsARound(t *testing.T) {
	pr := behind("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30))}
	_, acts, term := Decide(State{}, obs(at(0), pr), syncCfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "set-status pending h1", "sync-base round-1/sync-base")
	_, _, term = Decide(State{}, obs(at(0), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
}

// Without a protection rule requiring branches to be up to date GitHub
// shows a branch that lacks base commits as CLEAN: the forge's compare
// count is what makes the sync due, and what the proof notes.
func TestPR_S14_BehindByTheCompareCountWithoutBEHIND(t *testing.T) {
	pr := behind("h1")
	pr.MergeState = forge.MergeClean
	pr.Reviews = []forge.Review{okReview("R2", "h1", at(1))}
	o := obs(at(2), pr)
	o.BaseBehind = 2

	_, acts, term := Decide(verifying("h1", 2), o, syncCfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "sync-base round-2/sync-base")
	if want := "is 2 commit(s) behind main"; !strings.Contains(acts[0].Reason, want) {
		t.Errorf("sync reason %q, want it to say %q", acts[0].Reason, want)
	}

	s := verifying("h1", 2)
	s.BaseSyncSkip, s.BaseSyncWhy = syncKey("h1", pr.BaseSHA), "the merge conflicts"
	_, _, term = Decide(s, o, syncCfg())
	wantTerminal(t, term, ReasonTwoStable)
	if notes := strings.Join(term.Proof.Notes, "\n"); !strings.Contains(notes, "2 commit(s) behind its base") || !strings.Contains(notes, "the merge conflicts") {
		t.Errorf("proof notes %q: want the count and why the sync made no commit", notes)
	}

	o.BaseBehind = 0
	_, _, term = Decide(verifying("h1", 2), o, syncCfg())
	wantTerminal(t, term, ReasonTwoStable)
}
