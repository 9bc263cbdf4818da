package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// addressingCommit is a loop commit whose trailers name the threads it
// addressed, as prwork.GitWorkspace writes it.
func addressingCommit(sha, parent string, round int, threads ...string) forge.Commit {
	c := loopCommit(sha, parent, round)
	for _, id := range threads {
		c.Message += AddressedTrailer + ": " + id + "\n"
	}
	return c
}

// TestREL2_FixPushedButNotReportedRepliesFromTrailer: the engine died after
// pushing h2 and before reporting; the commit's Converge-Addressed trailer
// says T1 was addressed, so T1 is replied to and resolved, not fixed again.
func TestREL2_FixPushedButNotReportedRepliesFromTrailer(t *testing.T) {
	s := verifying("h1", 1)
	s.Phase = PhaseFix
	s.Kept = []Finding{{ID: "T1", ThreadID: "T1", Verdict: "structural"}, {ID: "T2", ThreadID: "T2", Verdict: "structural"}}
	pr := newPR("h2")
	pr.Commits = append(pr.Commits, addressingCommit("h2", "h1", 1, "T1"))
	pr.Threads = []forge.Thread{copilotThread("T1", "bug"), copilotThread("T2", "other bug")}
	_, acts, term := Decide(s, obs(at(5), pr), cfg())
	wantTerminal(t, term, "")
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
	if a := findAct(acts, ActReply, "T1"); a == nil || a.SHA != "h2" {
		t.Fatalf("the reply must cite the pushed commit h2: %+v", a)
	}
}

// TestREL2_NewRunRepliesAddressedFromTrailer: a new run (fresh state) finds
// an open thread that a loop commit on the branch says it addressed, with
// no reply yet: it replies "addressed" citing that commit and resolves,
// and does not ask a fixer to fix it again. A thread converge already
// answered and a human reopened is a finding again (PR-S12).
func TestREL2_NewRunRepliesAddressedFromTrailer(t *testing.T) {
	s := awaiting("h2", 1)
	pr := newPR("h2")
	pr.Commits = append(pr.Commits, addressingCommit("h2", "h1", 1, "T1", "T2"))
	reopened := copilotThread("T2", "other bug")
	reopened.Comments = append(reopened.Comments, forge.Comment{ID: "c-self", Author: self,
		Body: "Addressed.\n" + Marker("T2", "h2", DispAddressed), CreatedAt: at(-1)})
	reopened.Comments = append(reopened.Comments, forge.Comment{ID: "c-human", Author: "bob", Body: "Not fixed, reopening.", CreatedAt: at(-0.5)})
	pr.Threads = []forge.Thread{copilotThread("T1", "bug"), reopened}
	pr.Reviews = []forge.Review{okReview("R1", "h2", at(1))}
	o := obs(at(2), pr)
	o.BotStartedMax = 101
	s2, acts, term := Decide(s, o, cfg())
	wantTerminal(t, term, "")
	fix := findAct(acts, ActFix, "")
	if fix == nil || len(fix.Findings) != 1 || fix.Findings[0].ID != "T2" {
		t.Fatalf("want a fix of the reopened T2 only, got %v", sig(acts))
	}
	var rec *ThreadRecord
	for i := range s2.Threads {
		if s2.Threads[i].ThreadID == "T1" {
			rec = &s2.Threads[i]
		}
	}
	if rec == nil || rec.Disposition != DispAddressed || rec.HeadSHA != "h2" {
		t.Fatalf("T1 must be recorded addressed by h2, got %+v", s2.Threads)
	}
}
