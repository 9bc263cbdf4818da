package fakelab

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// The official client reads every REST endpoint converge uses, in
// GitLab's shapes, against a seeded merge request.
func TestREST_OfficialClient(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{})
	tok := l.Tokens()
	author, reviewer := client(t, l, tok.Author), client(t, l, tok.Reviewer)

	me, _, err := author.Users.CurrentUser()
	if err != nil || me.Username != UserAuthor || me.Bot {
		t.Fatalf("current user %+v %v", me, err)
	}
	duos, _, err := author.Users.ListUsers(&gitlab.ListUsersOptions{Username: ptr(UserDuo)})
	if err != nil || len(duos) != 1 || !duos[0].Bot {
		t.Fatalf("duo user %+v %v", duos, err)
	}
	proj, _, err := author.Projects.GetProject(testProject, nil)
	if err != nil || proj.PathWithNamespace != testProject || proj.DefaultBranch != "main" || proj.HTTPURLToRepo != l.GitURL(testProject) {
		t.Fatalf("project %+v %v", proj, err)
	}
	if p2, _, err := author.Projects.GetProject(int(proj.ID), nil); err != nil || p2.ID != proj.ID {
		t.Fatalf("project by id: %v", err)
	}

	m, _, err := author.MergeRequests.GetMergeRequest(testProject, int64(iid), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != "opened" || m.SourceBranch != "feature" || m.TargetBranch != "main" || m.DiffRefs.HeadSha != m.SHA ||
		m.DetailedMergeStatus != "mergeable" || m.HasConflicts || m.WebURL != l.MRURL(testProject, iid) || m.Author.Username != UserAuthor {
		t.Fatalf("mr %+v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err := l.WaitPipeline(ctx, testProject, m.SHA); err != nil || st != "success" {
		t.Fatalf("pipeline %q %v", st, err)
	}
	m, _, _ = author.MergeRequests.GetMergeRequest(testProject, int64(iid), nil)
	if m.HeadPipeline == nil || m.HeadPipeline.Status != "success" || m.HeadPipeline.SHA != m.SHA {
		t.Fatalf("head pipeline %+v", m.HeadPipeline)
	}
	pls, _, err := author.Pipelines.ListProjectPipelines(testProject, &gitlab.ListProjectPipelinesOptions{SHA: ptr(m.SHA)})
	if err != nil || len(pls) != 1 {
		t.Fatalf("pipelines %v %v", pls, err)
	}
	jobs, _, err := author.Jobs.ListPipelineJobs(testProject, pls[0].ID, nil)
	if err != nil || len(jobs) != 1 || jobs[0].Name != CIJobName || jobs[0].Status != "success" || jobs[0].Stage != "test" {
		t.Fatalf("jobs %+v %v", jobs, err)
	}
	if _, _, err := author.Commits.SetCommitStatus(testProject, m.SHA, &gitlab.SetCommitStatusOptions{State: gitlab.Success, Name: ptr("converge"), Description: ptr("two-stable")}); err != nil {
		t.Fatal(err)
	}
	sts, _, err := author.Commits.GetCommitStatuses(testProject, m.SHA, nil)
	if err != nil || len(sts) != 2 || sts[0].Name != "converge" || sts[0].Status != "success" || sts[1].Name != CIJobName {
		t.Fatalf("statuses %+v %v", sts, err)
	}
	if _, _, err := client(t, l, tok.Reporter).Commits.SetCommitStatus(testProject, m.SHA, &gitlab.SetCommitStatusOptions{State: gitlab.Failed, Name: ptr("converge")}); !isStatus(err, 403) {
		t.Fatalf("reporter status: %v", err)
	}

	// A reviewer's diff discussion at a line, with the current diff_refs.
	d, _, err := reviewer.Discussions.CreateMergeRequestDiscussion(testProject, int64(iid), &gitlab.CreateMergeRequestDiscussionOptions{
		Body: ptr("six? really?"),
		Position: &gitlab.PositionOptions{BaseSHA: ptr(m.DiffRefs.BaseSha), StartSHA: ptr(m.DiffRefs.StartSha), HeadSHA: ptr(m.DiffRefs.HeadSha),
			PositionType: ptr("text"), NewPath: ptr("calc.txt"), OldPath: ptr("calc.txt"), NewLine: ptr(int64(6))},
	})
	if err != nil || len(d.ID) != 40 || d.IndividualNote || d.Notes[0].Type != "DiffNote" || d.Notes[0].Position == nil ||
		d.Notes[0].Position.HeadSHA != m.SHA || d.Notes[0].Position.NewLine != 6 || !d.Notes[0].Resolvable {
		t.Fatalf("discussion %+v %v", d, err)
	}
	if _, _, err := reviewer.Discussions.CreateMergeRequestDiscussion(testProject, int64(iid), &gitlab.CreateMergeRequestDiscussionOptions{Body: ptr("general point")}); err != nil {
		t.Fatal(err)
	}
	n, _, err := author.Discussions.AddMergeRequestDiscussionNote(testProject, int64(iid), d.ID, &gitlab.AddMergeRequestDiscussionNoteOptions{Body: ptr("yes")})
	if err != nil || n.Body != "yes" || n.Author.Username != UserAuthor {
		t.Fatalf("reply %+v %v", n, err)
	}
	rd, _, err := author.Discussions.ResolveMergeRequestDiscussion(testProject, int64(iid), d.ID, &gitlab.ResolveMergeRequestDiscussionOptions{Resolved: ptr(true)})
	if err != nil || !rd.Notes[0].Resolved || rd.Notes[0].ResolvedBy.Username != UserAuthor {
		t.Fatalf("resolve %+v %v", rd, err)
	}
	// Pagination: one discussion a page.
	ds, resp, err := author.Discussions.ListMergeRequestDiscussions(testProject, int64(iid), &gitlab.ListMergeRequestDiscussionsOptions{ListOptions: gitlab.ListOptions{PerPage: 1}})
	if err != nil || len(ds) != 1 || resp.NextPage != 2 || resp.TotalItems != 2 {
		t.Fatalf("discussions page 1: %d next %d total %d %v", len(ds), resp.NextPage, resp.TotalItems, err)
	}
	if resp.Header.Get("RateLimit-Limit") == "" || resp.Header.Get("RateLimit-Remaining") == "" || resp.Header.Get("RateLimit-Reset") == "" {
		t.Fatalf("rate headers %v", resp.Header)
	}

	// Approvals, reviewers, labels, members.
	if _, _, err := author.MergeRequests.UpdateMergeRequest(testProject, int64(iid), &gitlab.UpdateMergeRequestOptions{
		ReviewerIDs: &[]int64{userID(t, l, UserReviewer)}, AddLabels: &gitlab.LabelOptions{"converge:running", "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reviewer.MergeRequestApprovals.ApproveMergeRequest(testProject, int64(iid), nil); err != nil {
		t.Fatal(err)
	}
	ap, _, err := author.MergeRequestApprovals.GetConfiguration(testProject, int64(iid))
	if err != nil || !ap.Approved || len(ap.ApprovedBy) != 1 || ap.ApprovedBy[0].User.Username != UserReviewer {
		t.Fatalf("approvals %+v %v", ap, err)
	}
	rvs, _, err := author.MergeRequests.GetMergeRequestReviewers(testProject, int64(iid))
	if err != nil || len(rvs) != 1 || rvs[0].User.Username != UserReviewer || rvs[0].State != "approved" {
		t.Fatalf("reviewers %+v %v", rvs, err)
	}
	if _, err := reviewer.MergeRequestApprovals.UnapproveMergeRequest(testProject, int64(iid)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := author.MergeRequests.UpdateMergeRequest(testProject, int64(iid), &gitlab.UpdateMergeRequestOptions{RemoveLabels: &gitlab.LabelOptions{"x"}}); err != nil {
		t.Fatal(err)
	}
	evs, _, err := author.ResourceLabelEvents.ListMergeRequestsLabelEvents(testProject, int64(iid), nil)
	if err != nil || len(evs) != 3 || evs[2].Action != "remove" || evs[2].Label.Name != "x" || evs[0].User.Username != UserAuthor {
		t.Fatalf("label events %+v %v", evs, err)
	}
	mem, _, err := author.ProjectMembers.GetInheritedProjectMember(testProject, userID(t, l, UserReviewer))
	if err != nil || mem.AccessLevel != gitlab.MaintainerPermissions {
		t.Fatalf("member %+v %v", mem, err)
	}
	if _, _, err := author.ProjectMembers.GetInheritedProjectMember(testProject, userID(t, l, UserOutsider)); !isStatus(err, 404) {
		t.Fatalf("outsider member: %v", err)
	}

	// Notes, oldest first, include the system notes with GitLab's texts.
	if _, _, err := author.Notes.CreateMergeRequestNote(testProject, int64(iid), &gitlab.CreateMergeRequestNoteOptions{Body: ptr("top-level")}); err != nil {
		t.Fatal(err)
	}
	notes, _, err := author.Notes.ListMergeRequestNotes(testProject, int64(iid), &gitlab.ListMergeRequestNotesOptions{
		Sort: ptr("asc"), OrderBy: ptr("created_at"), ListOptions: gitlab.ListOptions{PerPage: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var system []string
	for _, n := range notes {
		if n.System {
			system = append(system, n.Body)
		}
	}
	want := []string{"requested review from @lab-reviewer", "approved this merge request", "unapproved this merge request"}
	if strings.Join(system, "|") != strings.Join(want, "|") || notes[len(notes)-1].Body != "top-level" {
		t.Fatalf("system notes %q", system)
	}

	// Close and reopen.
	if _, _, err := author.MergeRequests.UpdateMergeRequest(testProject, int64(iid), &gitlab.UpdateMergeRequestOptions{StateEvent: ptr("close")}); err != nil {
		t.Fatal(err)
	}
	mrs, _, err := author.MergeRequests.ListProjectMergeRequests(testProject, &gitlab.ListProjectMergeRequestsOptions{State: ptr("opened")})
	if err != nil || len(mrs) != 0 {
		t.Fatalf("opened mrs %d %v", len(mrs), err)
	}
	if err := l.ReopenMR(testProject, iid, UserAuthor); err != nil {
		t.Fatal(err)
	}
	mrs, _, _ = author.MergeRequests.ListProjectMergeRequests(testProject, &gitlab.ListProjectMergeRequestsOptions{State: ptr("opened"),
		Labels: &gitlab.LabelOptions{"converge:running"}, AuthorUsername: ptr(UserAuthor)})
	if len(mrs) != 1 {
		t.Fatalf("filtered mrs %d", len(mrs))
	}
}

func userID(t *testing.T, l *Lab, name string) int64 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.userLocked(name).id)
}

func isStatus(err error, code int) bool {
	var er *gitlab.ErrorResponse
	if code == 404 && errors.Is(err, gitlab.ErrNotFound) {
		return true
	}
	return errors.As(err, &er) && er.Response.StatusCode == code
}

// Errors have GitLab's bodies; a private project is 404 to non-members.
func TestREST_Errors(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{Private: true})
	for _, tc := range []struct {
		token, path string
		code        int
		body        string
	}{
		{"", "/api/v4/user", 401, `{"message":"401 Unauthorized"}`},
		{"bogus", "/api/v4/user", 401, `{"message":"401 Unauthorized"}`},
		{l.Tokens().Outsider, "/api/v4/projects/grp%2Fsub%2Fproj", 404, `{"message":"404 Project Not Found"}`},
		{l.Tokens().Author, "/api/v4/projects/grp%2Fsub%2Fproj/merge_requests/99", 404, `{"message":"404 Not found"}`},
	} {
		req, _ := http.NewRequest("GET", l.URL()+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("PRIVATE-TOKEN", tc.token)
		}
		resp, err := l.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = io_Copy(&b, resp)
		if resp.StatusCode != tc.code || strings.TrimSpace(b.String()) != tc.body {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, b.String())
		}
	}
	// Bearer works like PRIVATE-TOKEN.
	req, _ := http.NewRequest("GET", l.APIURL()+"/projects/grp%2Fsub%2Fproj/merge_requests/"+itoa(iid), nil)
	req.Header.Set("Authorization", "Bearer "+l.Tokens().Author)
	if resp, err := l.HTTPClient().Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("bearer: %v", err)
	}
}

// TestSEC_6_RateLimit: a spent limit answers 429 with Retry-After and
// GitLab's RateLimit headers.
func TestREST_RateLimit(t *testing.T) {
	l, _ := seeded(t, Options{RateLimit: 2}, ProjectOptions{TestCommand: []string{"true"}})
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", l.APIURL()+"/user", nil)
		req.Header.Set("PRIVATE-TOKEN", l.Tokens().Author)
		resp, err := l.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := 0; i < 2; i++ {
		if resp := get(); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp := get()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("RateLimit-Remaining") != "0" || resp.Header.Get("RateLimit-Reset") == "" {
		t.Fatalf("429: %d %v", resp.StatusCode, resp.Header)
	}
}

// Real git over https: clone with the token as password, push a commit:
// the MR gets a version and an "added 1 commit" system note; a target
// change that conflicts makes detailed_merge_status conflict.
func TestGit_PushAddsVersion(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{})
	dir := filepath.Join(t.TempDir(), "clone")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), l.GitEnv(l.Tokens().Author)...)
		if len(args) > 0 && args[0] != "clone" {
			cmd.Dir = dir
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("clone", "--branch", "feature", l.GitURL(testProject), dir)
	if err := os.WriteFile(filepath.Join(dir, "calc.txt"), []byte("one\ntwo\nthree\nfour\nfive\nsix\nseven\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-qam", "Add seven")
	git("push", "-q", "origin", "feature")
	head := git("rev-parse", "HEAD")

	c := client(t, l, l.Tokens().Author)
	vs, _, err := c.MergeRequests.GetMergeRequestDiffVersions(testProject, int64(iid), nil)
	if err != nil || len(vs) != 2 || vs[0].HeadCommitSHA != head {
		t.Fatalf("versions %+v %v", vs, err)
	}
	cs, _, err := c.MergeRequests.GetMergeRequestCommits(testProject, int64(iid), nil)
	if err != nil || len(cs) != 2 || cs[0].ID != head || cs[0].Title != "Add seven" || len(cs[0].ParentIDs) != 1 {
		t.Fatalf("commits %+v %v", cs, err)
	}
	cmp, _, err := c.Repositories.Compare(testProject, &gitlab.CompareOptions{From: ptr(vs[1].HeadCommitSHA), To: ptr(head)})
	if err != nil || len(cmp.Commits) != 1 || cmp.Commits[0].ID != head {
		t.Fatalf("compare %+v %v", cmp, err)
	}
	st, _ := l.MR(testProject, iid)
	if len(st.SystemNotes) != 1 || !strings.HasPrefix(st.SystemNotes[0], "added 1 commit\n") {
		t.Fatalf("system notes %q", st.SystemNotes)
	}
	// An outsider cannot push; a reporter neither.
	if _, err := l.PushFiles(testProject, "main", UserOwner, map[string]string{"calc.txt": "uno\n"}, "Rewrite"); err != nil {
		t.Fatal(err)
	}
	m, _, _ := c.MergeRequests.GetMergeRequest(testProject, int64(iid), nil)
	if m.DetailedMergeStatus != "conflict" || !m.HasConflicts {
		t.Fatalf("after conflicting target: %s %v", m.DetailedMergeStatus, m.HasConflicts)
	}
	// A force push onto the new main resolves it and adds a version.
	if _, err := l.ForcePush(testProject, "feature", "main", UserAuthor, map[string]string{"calc.txt": "uno\nsix\n"}, "Rebased"); err != nil {
		t.Fatal(err)
	}
	m, _, _ = c.MergeRequests.GetMergeRequest(testProject, int64(iid), nil)
	if m.DetailedMergeStatus != "mergeable" {
		t.Fatalf("after force push: %s", m.DetailedMergeStatus)
	}
	st, _ = l.MR(testProject, iid)
	if st.Versions != 3 || st.StartSHA == vs[0].StartCommitSHA {
		t.Fatalf("versions %d start %s", st.Versions, st.StartSHA)
	}
}
