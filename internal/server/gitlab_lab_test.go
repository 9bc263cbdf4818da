package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestSEC_4_GitLabEmulatorDeliveriesVerifyEndToEnd: the GitLab
// emulator's deliveries, over real HTTP, carry the token the server
// checks and payloads its parser reads (none malformed, none ignored),
// and wake the merge request they concern; a redelivery wakes nothing
// more, and a hook with another token is refused.
func TestSEC_4_GitLabEmulatorDeliveriesVerifyEndToEnd(t *testing.T) {
	lab := labtest.Start(t, time.Millisecond)
	const path = "acme/tools/widget"
	files := map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"}
	if _, err := lab.CreateProject(path, files, fakelab.ProjectOptions{}); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil)
	ts := httptest.NewServer(r.srv)
	defer ts.Close()
	hook, err := lab.AddHook(path, fakelab.Hook{URL: ts.URL + "/webhook", Token: testSecret, Attempts: 1,
		PushEvents: true, MergeRequestsEvents: true, NoteEvents: true, PipelineEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, b := range []string{"one", "two"} {
		iid, err := lab.CreateMR(path, fakelab.NewMR{Source: b, Title: b,
			Files: map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"" + b + "\")\n}\n"}})
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, lab.MRURL(path, iid))
	}
	mr1, mr2 := urls[0], urls[1]
	two, err := lab.MR(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	settled := func() []fakelab.HookDelivery {
		t.Helper()
		if err := lab.WaitHookDeliveries(t.Context()); err != nil {
			t.Fatal(err)
		}
		r.settle()
		return lab.HookDeliveries()
	}
	// The opens and pushes before any loop runs.
	for _, d := range settled() {
		if d.Status != http.StatusAccepted {
			t.Errorf("%s %s: status %d", d.Event, d.Action, d.Status)
		}
	}
	r.loops.mu.Lock()
	r.loops.runs = []RunInfo{{Target: mr1, Phase: "waiting"}, {Target: mr2, Phase: "waiting", Head: two.HeadSHA, Branch: "two", Base: "main"}}
	r.loops.wakes = nil
	r.loops.mu.Unlock()
	n0 := len(lab.HookDeliveries())

	// A line comment and a reply in its thread: two deliveries, one wake.
	did, _, err := lab.OpenDiscussion(path, 1, fakelab.UserReviewer, fakelab.NewDiscussion{Body: "why?", Path: "main.go", NewLine: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Reply(path, 1, fakelab.UserAuthor, did, "because"); err != nil {
		t.Fatal(err)
	}
	ds := settled()[n0:]
	if len(ds) != 2 {
		t.Fatalf("deliveries: %+v", ds)
	}
	for _, d := range ds {
		if !d.Delivered || d.Status != http.StatusAccepted {
			t.Errorf("%s %s: status %d: the server refused the emulator's delivery", d.Event, d.Action, d.Status)
		}
	}
	if w := r.loops.Wakes(); !slices.Equal(w, []string{mr1}) {
		t.Fatalf("wakes = %v, want one of %s", w, mr1)
	}

	// A resend: a duplicate, no second wake.
	if err := lab.ResendHookDelivery(ds[0].ID); err != nil {
		t.Fatal(err)
	}
	all := settled()
	if d := all[len(all)-1]; d.Status != http.StatusOK {
		t.Errorf("resend answered %d, want 200 (duplicate)", d.Status)
	}
	if w := r.loops.Wakes(); len(w) != 1 {
		t.Fatalf("wakes after a resend = %v", w)
	}

	// A push to MR 2's branch: a Push Hook (by branch) and a Merge
	// Request Hook update (by iid) wake MR 2 and, its head unknown, MR 1
	// (the push names only a branch), each once.
	n0 = len(all)
	if _, err := lab.PushFiles(path, "two", fakelab.UserAuthor, map[string]string{"NOTES": "n\n"}, "notes"); err != nil {
		t.Fatal(err)
	}
	ds = settled()[n0:]
	var kinds []string
	for _, d := range ds {
		kinds = append(kinds, d.Event+"/"+d.Action)
		if d.Status != http.StatusAccepted {
			t.Errorf("%s %s: status %d", d.Event, d.Action, d.Status)
		}
	}
	if !slices.Equal(kinds, []string{"Push Hook/", "Merge Request Hook/update"}) {
		t.Errorf("a push delivered %v", kinds)
	}
	w := r.loops.Wakes()[1:]
	slices.Sort(w)
	if !slices.Equal(w, []string{mr1, mr2}) {
		t.Errorf("wakes after a push to two = %v, want %s and %s once each", w, mr1, mr2)
	}

	// Another token: 401, no wake.
	if err := lab.RemoveHook(hook); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.AddHook(path, fakelab.Hook{URL: ts.URL + "/webhook", Token: "not the secret", Attempts: 1, NoteEvents: true}); err != nil {
		t.Fatal(err)
	}
	before := len(r.loops.Wakes())
	if _, err := lab.Comment(path, 1, fakelab.UserReviewer, "hello"); err != nil {
		t.Fatal(err)
	}
	all = settled()
	if d := all[len(all)-1]; d.Event != fakelab.EventNote || d.Status != http.StatusUnauthorized || d.Delivered {
		t.Errorf("a delivery with another token: %s answered %d", d.Event, d.Status)
	}
	if len(r.loops.Wakes()) != before {
		t.Errorf("a wrong token woke a loop")
	}
}

// TestPR_S2_WatchGitLabProjects: POST /api/repos on a GitLab server takes
// a project's full path, in subgroups too, and refuses another forge's
// repository; a GitHub server still wants owner/name.
func TestPR_S2_WatchGitLabProjects(t *testing.T) {
	discover := func(o *Options) {
		o.Discover = func(context.Context, store.RepoWatch) ([]string, error) { return nil, nil }
	}
	lab := newRig(t, func(o *Options) { discover(o); o.Forge = forge.GitLab })
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"repo":"group/sub/project","forge":"gitlab","label":"converge"}`, http.StatusCreated},
		{`{"repo":"group/project"}`, http.StatusCreated},
		{`{"repo":"acme/widget","forge":"github"}`, http.StatusUnprocessableEntity},
		{`{"repo":"group","forge":"gitlab"}`, http.StatusBadRequest},
		{`{"repo":"group//project"}`, http.StatusBadRequest},
		{`{"repo":"a/b","forge":"gitea"}`, http.StatusBadRequest},
	} {
		if rec := lab.do(t, "POST", "/api/repos", "", c.body); rec.Code != c.want {
			t.Errorf("POST /api/repos %s: %d %s, want %d", c.body, rec.Code, rec.Body, c.want)
		}
	}
	ws, err := lab.st.RepoWatches(context.Background())
	if err != nil || len(ws) != 2 || ws[1].Repo != "group/sub/project" || ws[1].Label != "converge" {
		t.Errorf("watches = %+v, %v", ws, err)
	}
	hub := newRig(t, discover)
	if rec := hub.do(t, "POST", "/api/repos", "", `{"repo":"group/sub/project"}`); rec.Code != http.StatusBadRequest {
		t.Errorf("a GitHub server took a three-part repo: %d", rec.Code)
	}
	if rec := hub.do(t, "POST", "/api/repos", "", `{"repo":"group/project","forge":"gitlab"}`); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("a GitHub server took a GitLab project: %d", rec.Code)
	}
}
