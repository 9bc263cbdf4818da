package fakehub

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookSink is a webhook receiver that records every request and fails
// the ones fail says to.
type hookSink struct {
	mu   sync.Mutex
	got  []sunk
	fail func(event, guid string, seen int) bool
}

type sunk struct {
	event, guid, sig string
	body             []byte
	status           int
}

func (s *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	event, guid := r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery")
	seen := 0
	for _, g := range s.got {
		if g.guid == guid {
			seen++
		}
	}
	status := http.StatusAccepted
	if s.fail != nil && s.fail(event, guid, seen) {
		status = http.StatusServiceUnavailable
	}
	s.got = append(s.got, sunk{event: event, guid: guid, sig: r.Header.Get("X-Hub-Signature-256"), body: body, status: status})
	w.WriteHeader(status)
}

func (s *hookSink) requests() []sunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sunk(nil), s.got...)
}

// TestSEC_4_EmulatorDeliversSignedWebhooks: every change converge cares
// about reaches the configured URL as a signed delivery with a unique
// X-GitHub-Delivery and the payload fields converge reads; a failed
// answer is retried a bounded number of times with the same id; a
// redelivery repeats id and body.
func TestSEC_4_EmulatorDeliversSignedWebhooks(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	const secret = "hook-secret"
	// The first attempt of the issue comment fails; every status fails.
	sink := &hookSink{fail: func(event, _ string, seen int) bool {
		return (event == "issue_comment" && seen == 0) || event == "status"
	}}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	if err := h.SetWebhook(WebhookConfig{URL: srv.URL, Secret: secret, Attempts: 3, RetryDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	tok := h.Tokens()
	pulls := fmt.Sprintf("%s/repos/acme/widget/pulls/%d", h.APIURL(), n)
	mustDo := func(token, method, url string, in any) []byte {
		t.Helper()
		status, body := do(t, h, token, method, url, in)
		if status/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, url, status, body)
		}
		return body
	}
	// A review with two inline comments, a reply, a top-level comment.
	mustDo(tok.Reviewer, "POST", pulls+"/reviews", map[string]any{"event": "COMMENT", "body": "two things",
		"comments": []map[string]any{{"path": "main.go", "line": 4, "body": "why?"}, {"path": "main.go", "line": 5, "body": "and this?"}}})
	st, err := h.PR("acme", "widget", n)
	if err != nil || len(st.ThreadList) != 2 {
		t.Fatalf("threads: %+v %v", st, err)
	}
	var comments []struct{ ID int64 }
	if err := json.Unmarshal(mustDo(tok.Author, "GET", pulls+"/comments", nil), &comments); err != nil || len(comments) != 2 {
		t.Fatalf("comments: %v %v", comments, err)
	}
	mustDo(tok.Author, "POST", fmt.Sprintf("%s/comments/%d/replies", pulls, comments[0].ID), map[string]any{"body": "fixed"})
	mustDo(tok.Author, "POST", fmt.Sprintf("%s/repos/acme/widget/issues/%d/comments", h.APIURL(), n), map[string]any{"body": "round 1 done"})
	// Resolve a thread over GraphQL.
	r := gql(t, h, tok.Author, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { reviewThreads(first: 10) { nodes { id } } } } }`, nil)
	var threads struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct{ Nodes []struct{ ID string } }
			}
		}
	}
	if err := json.Unmarshal(r.Data, &threads); err != nil || len(threads.Repository.PullRequest.ReviewThreads.Nodes) != 2 {
		t.Fatalf("threads over GraphQL: %s %v", r.Data, err)
	}
	threadID := threads.Repository.PullRequest.ReviewThreads.Nodes[0].ID
	if r := gql(t, h, tok.Author, `mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { isResolved } } }`, map[string]any{"id": threadID}); len(r.Errors) > 0 {
		t.Fatalf("resolve: %v", r.Errors)
	}
	// A push, a status and a check run on the new head.
	head, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"NOTES": "x\n"}, "notes")
	if err != nil {
		t.Fatal(err)
	}
	mustDo(tok.CI, "POST", h.APIURL()+"/repos/acme/widget/statuses/"+head, map[string]any{"state": "success", "context": "lint"})
	var cr struct{ ID int64 }
	if err := json.Unmarshal(mustDo(tok.CI, "POST", h.APIURL()+"/repos/acme/widget/check-runs", map[string]any{"name": "build", "head_sha": head, "status": "in_progress"}), &cr); err != nil {
		t.Fatal(err)
	}
	mustDo(tok.CI, "PATCH", fmt.Sprintf("%s/repos/acme/widget/check-runs/%d", h.APIURL(), cr.ID), map[string]any{"status": "completed", "conclusion": "success"})
	// An edit, a label and the close.
	mustDo(tok.Author, "PATCH", pulls, map[string]any{"title": "Greet politely, v2"})
	mustDo(tok.Author, "POST", fmt.Sprintf("%s/repos/acme/widget/issues/%d/labels", h.APIURL(), n), map[string]any{"labels": []string{"ready"}})
	mustDo(tok.Author, "PATCH", pulls, map[string]any{"state": "closed"})

	if err := h.WaitDeliveries(t.Context()); err != nil {
		t.Fatal(err)
	}
	ds := h.Deliveries()
	type key struct{ event, action string }
	count := map[key]int{}
	guids := map[string]bool{}
	for _, d := range ds {
		count[key{d.Event, d.Action}]++
		if guids[d.GUID] {
			t.Errorf("GUID %s used twice", d.GUID)
		}
		guids[d.GUID] = true
		var p struct {
			Repository struct {
				FullName string `json:"full_name"`
			} `json:"repository"`
			PullRequest *struct{ Number int } `json:"pull_request"`
			Issue       *struct {
				Number      int
				PullRequest *struct{ URL string } `json:"pull_request"`
			} `json:"issue"`
			CheckRun *struct {
				HeadSHA      string                 `json:"head_sha"`
				PullRequests []struct{ Number int } `json:"pull_requests"`
			} `json:"check_run"`
			CheckSuite *struct {
				PullRequests []struct{ Number int } `json:"pull_requests"`
			} `json:"check_suite"`
			SHA      string                  `json:"sha"`
			Branches []struct{ Name string } `json:"branches"`
			Ref      string                  `json:"ref"`
			After    string                  `json:"after"`
		}
		if err := json.Unmarshal(d.Body, &p); err != nil {
			t.Fatalf("%s payload: %v", d.Event, err)
		}
		if p.Repository.FullName != "acme/widget" {
			t.Errorf("%s/%s: repository.full_name %q", d.Event, d.Action, p.Repository.FullName)
		}
		switch d.Event {
		case "pull_request", "pull_request_review", "pull_request_review_comment", "pull_request_review_thread":
			if p.PullRequest == nil || p.PullRequest.Number != n {
				t.Errorf("%s/%s: pull_request %+v", d.Event, d.Action, p.PullRequest)
			}
		case "issue_comment":
			if p.Issue == nil || p.Issue.Number != n || p.Issue.PullRequest == nil {
				t.Errorf("issue_comment: issue %+v", p.Issue)
			}
		case "check_run":
			if p.CheckRun == nil || p.CheckRun.HeadSHA != head || len(p.CheckRun.PullRequests) != 1 || p.CheckRun.PullRequests[0].Number != n {
				t.Errorf("check_run: %+v", p.CheckRun)
			}
		case "check_suite":
			if p.CheckSuite == nil || len(p.CheckSuite.PullRequests) != 1 {
				t.Errorf("check_suite: %+v", p.CheckSuite)
			}
		case "status":
			if p.SHA != head || len(p.Branches) != 1 || p.Branches[0].Name != "feature/greet" {
				t.Errorf("status: sha %s branches %+v", p.SHA, p.Branches)
			}
		case "push":
			if p.Ref != "refs/heads/feature/greet" || p.After != head {
				t.Errorf("push: ref %s after %s", p.Ref, p.After)
			}
		}
	}
	want := map[key]int{
		{"pull_request_review", "submitted"}:       1,
		{"pull_request_review_comment", "created"}: 3, // two with the review, one reply
		{"issue_comment", "created"}:               1,
		{"pull_request_review_thread", "resolved"}: 1,
		{"push", ""}:                    1,
		{"pull_request", "synchronize"}: 1,
		{"status", ""}:                  1,
		{"check_run", "created"}:        1,
		{"check_run", "completed"}:      1,
		{"check_suite", "completed"}:    1,
		{"pull_request", "edited"}:      1,
		{"pull_request", "labeled"}:     1,
		{"pull_request", "closed"}:      1,
	}
	for k, c := range want {
		if count[k] != c {
			t.Errorf("%s/%s deliveries: %d, want %d", k.event, k.action, count[k], c)
		}
	}

	// Every request the sink saw is signed with the secret.
	mac := func(b []byte) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(b)
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	reqs := sink.requests()
	for _, q := range reqs {
		if !hmac.Equal([]byte(q.sig), []byte(mac(q.body))) {
			t.Errorf("%s %s: signature %q does not verify", q.event, q.guid, q.sig)
		}
	}
	// Retries: the issue comment failed once and was tried again with the
	// same id; the status failed every time and stopped at three.
	for _, d := range ds {
		switch d.Event {
		case "issue_comment":
			if d.Attempts != 2 || !d.Delivered {
				t.Errorf("issue_comment: %d attempts, delivered %v; want 2, true", d.Attempts, d.Delivered)
			}
		case "status":
			if d.Attempts != 3 || d.Delivered || !d.Done || d.Status != http.StatusServiceUnavailable {
				t.Errorf("status: %+v; want 3 failed attempts", d)
			}
		default:
			if d.Attempts != 1 || !d.Delivered {
				t.Errorf("%s: %d attempts, delivered %v", d.Event, d.Attempts, d.Delivered)
			}
		}
	}
	if got := len(reqs); got != len(ds)+1+2 {
		t.Errorf("sink saw %d requests for %d deliveries; want one more for the comment's retry and two for the status's", got, len(ds))
	}

	// Redelivery: same id, same body.
	var review Delivery
	for _, d := range ds {
		if d.Event == "pull_request_review" {
			review = d
		}
	}
	if err := h.Redeliver(review.GUID); err != nil {
		t.Fatal(err)
	}
	if err := h.Redeliver("no-such-guid"); err == nil {
		t.Error("Redeliver of an unknown id succeeded")
	}
	if err := h.WaitDeliveries(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs = sink.requests()
	last := reqs[len(reqs)-1]
	if last.guid != review.GUID || string(last.body) != string(review.Body) || last.event != "pull_request_review" {
		t.Errorf("redelivery: %s %s, want the review's id and body", last.event, last.guid)
	}
	ds = h.Deliveries()
	if d := ds[len(ds)-1]; !d.Redelivery || d.GUID != review.GUID || !d.Delivered {
		t.Errorf("redelivery logged as %+v", d)
	}
}

// TestSEC_4_EmulatorWebhookOff: with the webhook removed nothing more is
// delivered, and deliveries it had made end instead of hanging.
func TestSEC_4_EmulatorWebhookOff(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	if err := h.SetWebhook(WebhookConfig{URL: srv.URL, Secret: "s"}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/repos/acme/widget/issues/%d/comments", h.APIURL(), n)
	for range 3 {
		if status, body := do(t, h, h.Tokens().Author, "POST", url, map[string]any{"body": "hi"}); status != 201 {
			t.Fatalf("comment: %d %s", status, body)
		}
	}
	if err := h.SetWebhook(WebhookConfig{}); err != nil {
		t.Fatal(err)
	}
	if status, _ := do(t, h, h.Tokens().Author, "POST", url, map[string]any{"body": "unheard"}); status != 201 {
		t.Fatal("comment")
	}
	if got := len(h.Deliveries()); got != 3 {
		t.Errorf("deliveries after the webhook was removed: %d, want the 3 made before", got)
	}
	close(block) // let the one in flight, if any, answer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := h.WaitDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	// Deliveries go out concurrently (as GitHub's do): those in flight
	// when the webhook went answer, those still queued are dropped; none
	// hangs.
	for _, d := range h.Deliveries() {
		if !d.Done || (!d.Delivered && d.Err != "webhook removed") {
			t.Errorf("delivery %s: done %v, delivered %v, err %q", d.GUID, d.Done, d.Delivered, d.Err)
		}
	}
}

// TestPR_T14_EmulatorDeliversWebhooksConcurrently: as GitHub does, a
// delivery does not wait for the one before it to be answered: a
// receiver that holds the first until the second arrives gets both.
func TestPR_T14_EmulatorDeliversWebhooksConcurrently(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	arrived := make(chan struct{}, 8)
	both := make(chan struct{})
	var once sync.Once
	var count atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count.Add(1) >= 2 {
			once.Do(func() { close(both) })
		}
		arrived <- struct{}{}
		select {
		case <-both:
		case <-time.After(20 * time.Second):
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	if err := h.SetWebhook(WebhookConfig{URL: srv.URL, Secret: "s", Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/repos/acme/widget/issues/%d/comments", h.APIURL(), n)
	for range 2 {
		if status, body := do(t, h, h.Tokens().Author, "POST", url, map[string]any{"body": "hi"}); status != 201 {
			t.Fatalf("comment: %d %s", status, body)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := h.WaitDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range h.Deliveries() {
		if !d.Delivered {
			t.Errorf("delivery %s (%s): status %d: the second waited for the first", d.GUID, d.Event, d.Status)
		}
	}
}
