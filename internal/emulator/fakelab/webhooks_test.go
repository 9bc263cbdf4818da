package fakelab

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server that records every request and answers
// with status(n) for the n-th (from 1), 200 by default.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status func(n int) int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), b})
		n := len(rc.got)
		st := rc.status
		rc.mu.Unlock()
		code := http.StatusOK
		if st != nil {
			code = st(n)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

func settle(t *testing.T, l *Lab) []HookDelivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.WaitHookDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	return l.HookDeliveries()
}

// TestPR_S2_LabWebhooksAsGitLabSendsThem: a hook registered through the
// project hooks API (by the official client) receives, with GitLab's
// headers and its token, the merge request, note, pipeline and push
// events of a merge request's life, each payload one the official
// client's webhook parser reads as its event type.
func TestPR_S2_LabWebhooksAsGitLabSendsThem(t *testing.T) {
	l := newLab(t, Options{})
	if _, err := l.CreateProject(testProject, baseFiles(), ProjectOptions{TestCommand: []string{"sh", "test.sh"}}); err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t)
	// A developer may not add hooks; a maintainer may.
	opt := &gitlab.AddProjectHookOptions{URL: ptr(rc.URL + "/hook"), Token: ptr("s3cret"), MergeRequestsEvents: ptr(true),
		NoteEvents: ptr(true), PipelineEvents: ptr(true)}
	if _, resp, err := client(t, l, l.Tokens().Author).Projects.AddProjectHook(testProject, opt); err == nil || resp.StatusCode != 403 {
		t.Fatalf("a developer added a hook: %v", err)
	}
	hook, _, err := client(t, l, l.Tokens().Reviewer).Projects.AddProjectHook(testProject, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !hook.PushEvents || !hook.MergeRequestsEvents || !hook.NoteEvents || !hook.PipelineEvents || hook.URL != rc.URL+"/hook" {
		t.Fatalf("hook = %+v (push_events defaults to true)", hook)
	}

	iid, err := l.CreateMR(testProject, NewMR{Source: "feature", Title: "Add six", Files: map[string]string{"calc.txt": "one\ntwo\nthree\nfour\nfive\nsix\n"}, Message: "Add six"})
	if err != nil {
		t.Fatal(err)
	}
	mr0, _ := l.MR(testProject, iid)
	if _, err := l.WaitPipeline(context.Background(), testProject, mr0.HeadSHA); err != nil {
		t.Fatal(err)
	}
	did, _, err := l.OpenDiscussion(testProject, iid, UserReviewer, NewDiscussion{Body: "six?", Path: "calc.txt", NewLine: 6})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reply(testProject, iid, UserAuthor, did, "yes, six"); err != nil {
		t.Fatal(err)
	}
	if err := l.Resolve(testProject, iid, UserAuthor, did, true); err != nil {
		t.Fatal(err)
	}
	head, err := l.PushFiles(testProject, "feature", UserAuthor, map[string]string{"calc.txt": "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"}, "Add seven")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.WaitPipeline(context.Background(), testProject, head); err != nil {
		t.Fatal(err)
	}
	if err := l.Approve(testProject, iid, UserReviewer); err != nil {
		t.Fatal(err)
	}
	if _, _, err := client(t, l, l.Tokens().Author).MergeRequests.UpdateMergeRequest(testProject, int64(iid),
		&gitlab.UpdateMergeRequestOptions{AddLabels: &gitlab.LabelOptions{"ready"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.CloseMR(testProject, iid, UserAuthor); err != nil {
		t.Fatal(err)
	}
	if err := l.ReopenMR(testProject, iid, UserAuthor); err != nil {
		t.Fatal(err)
	}
	ds := settle(t, l)

	var seen []string
	for _, d := range ds {
		if !d.Delivered || d.Attempts != 1 {
			t.Errorf("%s %s: delivered %v after %d attempts", d.Event, d.Action, d.Delivered, d.Attempts)
		}
		seen = append(seen, d.Event+"/"+d.Action)
	}
	for _, want := range []string{
		"Push Hook/", "Merge Request Hook/open", "Pipeline Hook/running", "Pipeline Hook/success",
		"Note Hook/create", "Merge Request Hook/update", "Merge Request Hook/approved",
		"Merge Request Hook/close", "Merge Request Hook/reopen",
	} {
		if !slices.Contains(seen, want) {
			t.Errorf("no %s delivery among %v", want, seen)
		}
	}
	reqs := rc.requests()
	if len(reqs) != len(ds) {
		t.Fatalf("%d requests for %d deliveries", len(reqs), len(ds))
	}
	var sawOldrev, sawDiffNote, sawLabels, sawPipelineMR, sawPushCommit bool
	// Deliveries go out concurrently, as GitLab's do: each request is
	// matched to its delivery by its idempotency key, not by order.
	byID := map[string]HookDelivery{}
	for _, d := range ds {
		byID[d.ID] = d
	}
	for i, r := range reqs {
		h := r.header
		d, ok := byID[h.Get("Idempotency-Key")]
		if !ok {
			t.Fatalf("request %d: idempotency key %q names no delivery", i, h.Get("Idempotency-Key"))
		}
		if h.Get("X-Gitlab-Token") != "s3cret" || h.Get("X-Gitlab-Event") != d.Event || h.Get("Idempotency-Key") != d.ID ||
			h.Get("X-Gitlab-Event-UUID") == "" || h.Get("X-Gitlab-Webhook-UUID") == "" || h.Get("X-Gitlab-Instance") != l.URL() ||
			!strings.HasPrefix(h.Get("User-Agent"), "GitLab/") {
			t.Errorf("delivery %d (%s): headers %v", i, d.Event, h)
		}
		ev, err := gitlab.ParseWebhook(gitlab.EventType(d.Event), r.body)
		if err != nil {
			t.Fatalf("%s: the official client cannot read it: %v\n%s", d.Event, err, r.body)
		}
		switch e := ev.(type) {
		case *gitlab.MergeEvent:
			if e.Project.PathWithNamespace != testProject || e.ObjectAttributes.IID != int64(iid) || e.ObjectAttributes.Action != d.Action {
				t.Errorf("merge event: %+v", e.ObjectAttributes)
			}
			if e.ObjectAttributes.OldRev == mr0.HeadSHA {
				sawOldrev = true
			}
			if len(e.Changes.Labels.Current) == 1 && e.Changes.Labels.Current[0].Title == "ready" {
				sawLabels = true
			}
		case *gitlab.MergeCommentEvent:
			if e.MergeRequest.IID != int64(iid) || e.ObjectAttributes.NoteableType != "MergeRequest" {
				t.Errorf("note event: %+v", e.ObjectAttributes)
			}
			if e.ObjectAttributes.Type == "DiffNote" && e.ObjectAttributes.Position != nil && e.ObjectAttributes.Position.NewLine == 6 &&
				e.ObjectAttributes.LineCode != "" && e.ObjectAttributes.DiscussionID == did {
				sawDiffNote = true
			}
		case *gitlab.PipelineEvent:
			if e.MergeRequest.IID == int64(iid) {
				sawPipelineMR = true
			}
		case *gitlab.PushEvent:
			if e.Ref == "refs/heads/feature" && e.After == head && e.TotalCommitsCount == 1 && len(e.Commits) == 1 && e.Commits[0].Title == "Add seven" {
				sawPushCommit = true
			}
		default:
			t.Errorf("%s parsed as %T", d.Event, ev)
		}
	}
	if !sawOldrev || !sawDiffNote || !sawLabels || !sawPipelineMR || !sawPushCommit {
		t.Errorf("oldrev %v, diff note %v, labels %v, pipeline with merge_request %v, push with its commit %v",
			sawOldrev, sawDiffNote, sawLabels, sawPipelineMR, sawPushCommit)
	}

	// The hooks API lists it without its token, and deletes it.
	hooks, _, err := client(t, l, l.Tokens().Owner).Projects.ListProjectHooks(testProject, nil)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("hooks = %v, %v", hooks, err)
	}
	if _, err := client(t, l, l.Tokens().Owner).Projects.DeleteProjectHook(testProject, hooks[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Comment(testProject, iid, UserReviewer, "after the hook is gone"); err != nil {
		t.Fatal(err)
	}
	if n := len(settle(t, l)); n != len(ds) {
		t.Errorf("%d deliveries after the hook was deleted, want %d", n, len(ds))
	}
}

// TestPR_S2_LabWebhooksRetryWithOneIdempotencyKey: a delivery answered
// 5xx is tried again with the same Idempotency-Key and event UUID; a
// resend keeps the key and gets a new event UUID; a hook only gets the
// events it takes.
func TestPR_S2_LabWebhooksRetryWithOneIdempotencyKey(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{}})
	rc := newReceiver(t)
	rc.status = func(n int) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	}
	if _, err := l.AddHook(testProject, Hook{URL: rc.URL, Token: "tok", NoteEvents: true, RetryDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := l.Approve(testProject, iid, UserReviewer); err != nil { // a merge request event: not taken
		t.Fatal(err)
	}
	if _, err := l.Comment(testProject, iid, UserReviewer, "hello"); err != nil {
		t.Fatal(err)
	}
	ds := settle(t, l)
	if len(ds) != 1 || ds[0].Event != EventNote || !ds[0].Delivered || ds[0].Attempts != 2 {
		t.Fatalf("deliveries = %+v", ds)
	}
	if err := l.ResendHookDelivery(ds[0].ID); err != nil {
		t.Fatal(err)
	}
	ds = settle(t, l)
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	k := reqs[0].header.Get("Idempotency-Key")
	for _, r := range reqs {
		if r.header.Get("Idempotency-Key") != k || r.header.Get("X-Gitlab-Token") != "tok" {
			t.Errorf("headers %v", r.header)
		}
	}
	if reqs[0].header.Get("X-Gitlab-Event-UUID") != reqs[1].header.Get("X-Gitlab-Event-UUID") ||
		reqs[1].header.Get("X-Gitlab-Event-UUID") == reqs[2].header.Get("X-Gitlab-Event-UUID") {
		t.Errorf("event UUIDs: a retry keeps it, a resend does not")
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[2].body, &body); err != nil || body["object_kind"] != "note" {
		t.Errorf("resent body: %s", reqs[2].body)
	}
	if !ds[1].Resend {
		t.Errorf("the resend is not marked: %+v", ds[1])
	}
}
