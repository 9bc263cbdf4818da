package fakelab

import (
	"strings"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Requesting GitLabDuo as a reviewer: its state goes review_started, it
// posts its start note, then diff discussions on the current diff_refs,
// edits the start note into a summary and, as GitLab's Duo does since
// gitlab-org/gitlab!254981, requests changes; a clean review approves,
// and the next review first withdraws that approval.
func TestDuo_ReviewsWhenRequested(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{"true"}})
	if err := l.SetDuoScript(testProject, iid, DuoScript{Rounds: []DuoRound{
		{Findings: []Finding{{Path: "calc.txt", Anchor: "six", Body: "Six is not a number word here.", Suggestion: "6"}, {Path: "calc.txt", Anchor: "gone", Body: "skipped"}}},
		{},
	}}); err != nil {
		t.Fatal(err)
	}
	events, stop := l.Subscribe()
	defer stop()
	c := client(t, l, l.Tokens().Author)
	duoID := userID(t, l, UserDuo)
	if _, _, err := c.MergeRequests.UpdateMergeRequest(testProject, int64(iid), &gitlab.UpdateMergeRequestOptions{ReviewerIDs: &[]int64{duoID}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, 10*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
	st, _ := l.MR(testProject, iid)
	if st.Reviewers[UserDuo] != "requested_changes" || len(st.ApprovedBy) != 0 {
		t.Fatalf("duo state %v approved %v", st.Reviewers, st.ApprovedBy)
	}
	if last := st.SystemNotes[len(st.SystemNotes)-1]; last != "requested changes" {
		t.Fatalf("system notes %q: want Duo's change request last", st.SystemNotes)
	}
	if len(st.Discussions) != 2 {
		t.Fatalf("discussions %+v", st.Discussions)
	}
	summary, diff := st.Discussions[0], st.Discussions[1]
	if summary.Author != UserDuo || summary.Position != nil || !strings.Contains(summary.Notes[0], "left 1 comment") {
		t.Fatalf("summary %+v", summary)
	}
	if diff.Author != UserDuo || diff.Position == nil || diff.Position.NewLine != 6 || diff.Position.HeadSHA != st.HeadSHA ||
		!strings.Contains(diff.Notes[0], "```suggestion:-0+0\n6\n```") {
		t.Fatalf("diff note %+v", diff)
	}
	if st.SystemNotes[0] != "requested review from @GitLabDuo" {
		t.Fatalf("system notes %q", st.SystemNotes)
	}
	// Second round: a clean review edits its start note into the clean text.
	if _, _, err := c.MergeRequests.UpdateMergeRequest(testProject, int64(iid), &gitlab.UpdateMergeRequestOptions{ReviewerIDs: &[]int64{}}); err != nil {
		t.Fatal(err)
	}
	if err := l.AddReviewer(testProject, iid, UserDuo); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, 10*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
	st, _ = l.MR(testProject, iid)
	last := st.Discussions[len(st.Discussions)-1]
	if last.Notes[0] != DuoCleanNote || len(st.Discussions) != 3 {
		t.Fatalf("clean review %+v", st.Discussions)
	}
	if st.Reviewers[UserDuo] != "approved" || len(st.ApprovedBy) != 1 || st.ApprovedBy[0] != UserDuo {
		t.Fatalf("after a clean review: duo state %v approved by %v", st.Reviewers, st.ApprovedBy)
	}
	// Third round: a new review withdraws the approval before it starts.
	if _, _, err := c.MergeRequests.UpdateMergeRequest(testProject, int64(iid), &gitlab.UpdateMergeRequestOptions{ReviewerIDs: &[]int64{}}); err != nil {
		t.Fatal(err)
	}
	if err := l.AddReviewer(testProject, iid, UserDuo); err != nil {
		t.Fatal(err)
	}
	st, _ = l.MR(testProject, iid)
	n := len(st.SystemNotes)
	if st.Reviewers[UserDuo] != "review_started" || len(st.ApprovedBy) != 0 || st.SystemNotes[n-1] != "unapproved this merge request" {
		t.Fatalf("a new review: duo state %v approved by %v, system notes %q", st.Reviewers, st.ApprovedBy, st.SystemNotes)
	}
	waitEvent(t, events, 10*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
	if st, _ = l.MR(testProject, iid); len(st.ApprovedBy) != 1 {
		t.Fatalf("third clean review: approved by %v", st.ApprovedBy)
	}
}

// With DuoNeverApproves Duo behaves as before gitlab-org/gitlab!254981:
// findings or none, it ends reviewed and neither approves nor requests
// changes.
func TestDuo_NeverApprovesOption(t *testing.T) {
	l, iid := seeded(t, Options{DuoNeverApproves: true}, ProjectOptions{TestCommand: []string{"true"}})
	if err := l.SetDuoScript(testProject, iid, DuoScript{Rounds: []DuoRound{
		{Findings: []Finding{{Path: "calc.txt", Anchor: "six", Body: "Six?"}}},
		{},
	}}); err != nil {
		t.Fatal(err)
	}
	events, stop := l.Subscribe()
	defer stop()
	for round := range 2 {
		if err := l.act(testProject, iid, UserAuthor, func(m *mr, u *user) error { return l.setReviewersLocked(m, u, nil) }); err != nil {
			t.Fatal(err)
		}
		if err := l.AddReviewer(testProject, iid, UserDuo); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, events, 10*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
		st, _ := l.MR(testProject, iid)
		if st.Reviewers[UserDuo] != "reviewed" || len(st.ApprovedBy) != 0 {
			t.Fatalf("round %d: duo state %v approved by %v", round, st.Reviewers, st.ApprovedBy)
		}
		for _, sn := range st.SystemNotes {
			if sn == "requested changes" || sn == "approved this merge request" {
				t.Fatalf("round %d: system note %q from a Duo that never approves", round, sn)
			}
		}
	}
}

// A silent round starts and never finishes; a NoStart round shows
// nothing at all; an error round ends with GitLab's error text.
func TestDuo_OddRounds(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{"true"}})
	if err := l.SetDuoScript(testProject, 0, DuoScript{Rounds: []DuoRound{{NoStart: true}, {Error: true}, {Silent: true}}}); err != nil {
		t.Fatal(err)
	}
	events, stop := l.Subscribe()
	defer stop()
	request := func() {
		t.Helper()
		if err := l.act(testProject, iid, UserAuthor, func(m *mr, u *user) error { return l.setReviewersLocked(m, u, nil) }); err != nil {
			t.Fatal(err)
		}
		if err := l.AddReviewer(testProject, iid, UserDuo); err != nil {
			t.Fatal(err)
		}
	}
	request()
	st, _ := l.MR(testProject, iid)
	if st.Reviewers[UserDuo] != "unreviewed" || len(st.Discussions) != 0 {
		t.Fatalf("no-start %+v", st)
	}
	request()
	waitEvent(t, events, 10*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
	st, _ = l.MR(testProject, iid)
	if st.Discussions[0].Notes[0] != DuoErrorNote || st.Reviewers[UserDuo] != "reviewed" {
		t.Fatalf("error round %+v", st)
	}
	request()
	st, _ = l.MR(testProject, iid)
	if st.Reviewers[UserDuo] != "review_started" || st.Discussions[1].Notes[0] != DuoStartNote {
		t.Fatalf("silent round %+v", st)
	}
}
