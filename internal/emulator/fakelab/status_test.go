package fakelab

import (
	"context"
	"testing"
	"time"
)

// detailed_merge_status follows the project's merge checks: a running
// pipeline, a failed one, unresolved threads, missing approvals, a draft
// and a head behind its fast-forward-only target.
func TestMR_DetailedMergeStatus(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{PipelineMustSucceed: true, ThreadsMustResolve: true, ApprovalsRequired: 1, FastForwardOnly: true,
		TestCommand: []string{"sh", "test.sh"}})
	status := func() string {
		t.Helper()
		st, err := l.MR(testProject, iid)
		if err != nil {
			t.Fatal(err)
		}
		return st.DetailedStatus
	}
	st, _ := l.MR(testProject, iid)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.WaitPipeline(ctx, testProject, st.HeadSHA); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "not_approved" {
		t.Fatalf("unapproved: %s", got)
	}
	if err := l.Approve(testProject, iid, UserReviewer); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "mergeable" {
		t.Fatalf("approved: %s", got)
	}
	did, _, err := l.OpenDiscussion(testProject, iid, UserReviewer, NewDiscussion{Body: "hmm"})
	if err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "discussions_not_resolved" {
		t.Fatalf("open thread: %s", got)
	}
	if err := l.Resolve(testProject, iid, UserAuthor, did, true); err != nil {
		t.Fatal(err)
	}
	if err := l.SetDraft(testProject, iid, UserAuthor, true); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "draft_status" {
		t.Fatalf("draft: %s", got)
	}
	if err := l.SetDraft(testProject, iid, UserAuthor, false); err != nil {
		t.Fatal(err)
	}
	// A failing head: the pipeline must pass.
	sha, err := l.PushFiles(testProject, "feature", UserAuthor, map[string]string{"calc.txt": "FAIL\n"}, "Break it")
	if err != nil {
		t.Fatal(err)
	}
	// One snapshot holds both, so this does not race the pipeline.
	if st, _ := l.MR(testProject, iid); st.HeadPipeline == "running" && st.DetailedStatus != "ci_still_running" {
		t.Fatalf("running: %s", st.DetailedStatus)
	}
	if c, _ := l.WaitPipeline(ctx, testProject, sha); c != "failed" {
		t.Fatalf("pipeline %s", c)
	}
	if got := status(); got != "ci_must_pass" {
		t.Fatalf("failed pipeline: %s", got)
	}
	// A non-conflicting change on main: behind, so need_rebase.
	if _, err := l.PushFiles(testProject, "main", UserOwner, map[string]string{"other.txt": "x\n"}, "Other"); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "need_rebase" {
		t.Fatalf("behind: %s", got)
	}
	st, _ = l.MR(testProject, iid)
	want := []string{"approved this merge request", "resolved all threads", "marked this merge request as **draft**", "marked this merge request as **ready**"}
	for i, w := range want {
		if st.SystemNotes[i] != w {
			t.Fatalf("system notes %q", st.SystemNotes)
		}
	}
}

// Requesting changes: the summary note, the system note, the reviewer's
// state, and a withdrawn approval; an outsider may not.
func TestMR_RequestChanges(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{"true"}})
	if err := l.AddReviewer(testProject, iid, UserReviewer); err != nil {
		t.Fatal(err)
	}
	if err := l.Approve(testProject, iid, UserReviewer); err != nil {
		t.Fatal(err)
	}
	if err := l.RequestChanges(testProject, iid, UserReviewer, "Please add tests."); err != nil {
		t.Fatal(err)
	}
	st, _ := l.MR(testProject, iid)
	if st.Reviewers[UserReviewer] != "requested_changes" || len(st.ApprovedBy) != 0 ||
		st.SystemNotes[len(st.SystemNotes)-1] != "requested changes" || st.Discussions[0].Notes[0] != "Please add tests." {
		t.Fatalf("after request changes %+v", st)
	}
	if err := l.RequestChanges(testProject, iid, UserOutsider, ""); err == nil {
		t.Fatal("outsider requested changes")
	}
}
