package fakelab

import (
	"slices"
	"testing"
	"time"
)

// With verdicts (GitLab since 2026), Duo requests changes after a review
// that commented, approves after a clean one, and withdraws its approval
// when a new review starts; an error gives no verdict.
func TestDuo_Verdicts(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{"true"}})
	if err := l.SetDuoScript(testProject, iid, DuoScript{Verdicts: true, Rounds: []DuoRound{
		{Findings: []Finding{{Path: "calc.txt", Anchor: "six", Body: "Six is not a number word here."}}},
		{},
		{Error: true},
	}}); err != nil {
		t.Fatal(err)
	}
	events, stop := l.Subscribe()
	defer stop()
	review := func() MRState {
		t.Helper()
		if err := l.AddReviewer(testProject, iid, UserDuo); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, events, 10*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
		st, err := l.MR(testProject, iid)
		if err != nil {
			t.Fatal(err)
		}
		// Re-requesting is removing Duo, then adding it again.
		if err := l.act(testProject, iid, UserAuthor, func(m *mr, u *user) error { return l.setReviewersLocked(m, u, nil) }); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := review()
	if len(st.ApprovedBy) != 0 || st.SystemNotes[len(st.SystemNotes)-1] != "requested changes" {
		t.Fatalf("after comments: approved by %v, system notes %q", st.ApprovedBy, st.SystemNotes)
	}
	st = review()
	if !slices.Equal(st.ApprovedBy, []string{UserDuo}) || st.SystemNotes[len(st.SystemNotes)-1] != "approved this merge request" {
		t.Fatalf("after a clean review: approved by %v, system notes %q", st.ApprovedBy, st.SystemNotes)
	}
	st = review()
	if len(st.ApprovedBy) != 0 || st.SystemNotes[len(st.SystemNotes)-1] != "unapproved this merge request" {
		t.Fatalf("after an error: approved by %v, system notes %q", st.ApprovedBy, st.SystemNotes)
	}
}
