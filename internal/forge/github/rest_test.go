package github

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

const eventsPath = "/api/v3/repos/octo/hello/issues/7/events"

func event(id int64, typ, actor string) map[string]any {
	return map[string]any{"id": id, "node_id": "E", "event": typ, "actor": map[string]any{"login": actor, "type": "Bot"},
		"created_at": "2026-03-01T10:00:00Z", "commit_id": nil}
}

func TestPR_O1_IssueEventsAreConditional(t *testing.T) {
	reg := httpmock.New(t)
	next := `<https://ghe.example.com/api/v3/repositories/1/issues/7/events?per_page=100&page=2>; rel="next", <https://ghe.example.com/api/v3/repositories/1/issues/7/events?per_page=100&page=2>; rel="last"`
	reg.REST("GET", eventsPath, httpmock.JSON(200, []any{event(1, "labeled", "alice"), event(2, "review_requested", "alice")},
		"ETag", `W/"p1"`, "Link", next))
	reg.REST("GET", eventsPath, httpmock.JSON(200, []any{event(3, "copilot_work_started", "Copilot")}, "ETag", `W/"p2"`))
	// Second call: both pages unchanged, answered 304 with no body.
	reg.REST("GET", eventsPath, httpmock.StringResponse(304, "", "ETag", `W/"p1"`))
	reg.REST("GET", eventsPath, httpmock.StringResponse(304, "", "ETag", `W/"p2"`))
	// Third call: page 2 grew.
	reg.REST("GET", eventsPath, httpmock.StringResponse(304, "", "ETag", `W/"p1"`))
	reg.REST("GET", eventsPath, httpmock.JSON(200, []any{event(3, "copilot_work_started", "Copilot"), event(4, "copilot_work_finished", "Copilot")}, "ETag", `W/"p2b"`))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()

	first, err := c.IssueEvents(ctx, testRef)
	if err != nil {
		t.Fatalf("IssueEvents: %v", err)
	}
	want := []forge.Event{
		{ID: 1, Event: "labeled", Actor: "alice", CreatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{ID: 2, Event: "review_requested", Actor: "alice", CreatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{ID: 3, Event: "copilot_work_started", Actor: "Copilot", CreatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
	}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("events = %+v", first)
	}
	second, err := c.IssueEvents(ctx, testRef)
	if err != nil {
		t.Fatalf("IssueEvents (304): %v", err)
	}
	if !reflect.DeepEqual(second, want) {
		t.Errorf("a 304 must give the cached list, got %+v", second)
	}
	third, err := c.IssueEvents(ctx, testRef)
	if err != nil || len(third) != 4 || third[3].Event != "copilot_work_finished" {
		t.Errorf("after change: %+v, %v", third, err)
	}

	reqs := reg.Requests()
	wantINM := []string{"", "", `W/"p1"`, `W/"p2"`, `W/"p1"`, `W/"p2"`}
	for i, r := range reqs {
		if got := r.Header.Get("If-None-Match"); got != wantINM[i] {
			t.Errorf("request %d If-None-Match = %q, want %q", i, got, wantINM[i])
		}
		if !strings.Contains(r.Query, "per_page=100") {
			t.Errorf("request %d query %q lacks per_page=100", i, r.Query)
		}
	}
	if !strings.Contains(reqs[1].Query, "page=2") {
		t.Errorf("second page query = %q", reqs[1].Query)
	}
}

func TestLabelsCommentsStatusCheckRun(t *testing.T) {
	reg := httpmock.New(t)
	ctx := context.Background()
	reg.REST("POST", "/api/v3/repos/octo/hello/issues/7/labels", func(req *http.Request) (*http.Response, error) {
		var got []string
		json.NewDecoder(req.Body).Decode(&got)
		if !reflect.DeepEqual(got, []string{"converge: running"}) {
			t.Errorf("labels body = %v", got)
		}
		return httpmock.JSON(200, []any{map[string]any{"name": "converge: running"}})(req)
	})
	reg.Register("DELETE label escaped", func(req *http.Request, _ []byte) bool {
		return req.Method == "DELETE" && req.URL.EscapedPath() == "/api/v3/repos/octo/hello/issues/7/labels/converge:%20a%2Fb"
	}, httpmock.JSON(200, []any{}))
	reg.REST("DELETE", "/api/v3/repos/octo/hello/issues/7/labels/gone", httpmock.JSON(404, map[string]any{"message": "Label does not exist"}))
	reg.REST("POST", "/api/v3/repos/octo/hello/issues/7/comments", func(req *http.Request) (*http.Response, error) {
		var b map[string]string
		json.NewDecoder(req.Body).Decode(&b)
		return httpmock.JSON(201, map[string]any{"id": 55, "body": b["body"], "user": map[string]any{"login": "me"}, "created_at": "2026-03-01T10:00:00Z"})(req)
	})
	reg.REST("GET", "/api/v3/repos/octo/hello/issues/7/comments", httpmock.JSON(200,
		[]any{map[string]any{"id": 1, "body": "a", "user": map[string]any{"login": "x"}, "created_at": "2026-03-01T10:00:00Z"}},
		"Link", `<https://ghe.example.com/api/v3/repos/octo/hello/issues/7/comments?per_page=100&page=2>; rel="next"`))
	reg.REST("GET", "/api/v3/repos/octo/hello/issues/7/comments", httpmock.JSON(200,
		[]any{map[string]any{"id": 2, "body": "b", "user": map[string]any{"login": "y"}, "created_at": "2026-03-01T11:00:00Z"}}))
	reg.REST("POST", "/api/v3/repos/octo/hello/statuses/bbbb", func(req *http.Request) (*http.Response, error) {
		var b map[string]any
		json.NewDecoder(req.Body).Decode(&b)
		if b["state"] != "success" || b["context"] != "converge" || len([]rune(b["description"].(string))) > 140 {
			t.Errorf("status body = %v", b)
		}
		return httpmock.JSON(201, map[string]any{"id": 9})(req)
	})
	reg.REST("POST", "/api/v3/repos/octo/hello/check-runs", func(req *http.Request) (*http.Response, error) {
		var b map[string]any
		json.NewDecoder(req.Body).Decode(&b)
		if b["name"] != "converge" || b["head_sha"] != "bbbb" || b["conclusion"] != "success" {
			t.Errorf("check run body = %v", b)
		}
		return httpmock.JSON(201, map[string]any{"id": 4242})(req)
	})
	c, _ := newTestClient(t, reg)

	if err := c.AddLabels(ctx, testRef, "converge: running"); err != nil {
		t.Errorf("AddLabels: %v", err)
	}
	if err := c.RemoveLabel(ctx, testRef, "converge: a/b"); err != nil {
		t.Errorf("RemoveLabel: %v", err)
	}
	if err := c.RemoveLabel(ctx, testRef, "gone"); err != nil {
		t.Errorf("RemoveLabel of a missing label: %v, want nil", err)
	}
	ic, err := c.CreateIssueComment(ctx, testRef, "summary")
	if err != nil || ic.ID != 55 || ic.Body != "summary" || ic.Author != "me" {
		t.Errorf("CreateIssueComment = %+v, %v", ic, err)
	}
	ics, err := c.ListIssueComments(ctx, testRef)
	if err != nil || len(ics) != 2 || ics[0].ID != 1 || ics[1].Author != "y" {
		t.Errorf("ListIssueComments = %+v, %v", ics, err)
	}
	if err := c.SetCommitStatus(ctx, testRef, "bbbb", forge.CommitStatus{State: forge.StatusSuccess, Context: "converge",
		Description: strings.Repeat("two-stable ", 30)}); err != nil {
		t.Errorf("SetCommitStatus: %v", err)
	}
	id, err := c.CreateCheckRun(ctx, testRef, forge.CheckRun{Name: "converge", HeadSHA: "bbbb", Status: "completed",
		Conclusion: "success", Title: "two-stable", Summary: "ok"})
	if err != nil || id != 4242 {
		t.Errorf("CreateCheckRun = %d, %v", id, err)
	}
}

func TestSEC1_Permission(t *testing.T) {
	reg := httpmock.New(t)
	base := "/api/v3/repos/octo/hello/collaborators/"
	reg.REST("GET", base+"maint/permission", httpmock.JSON(200, map[string]any{"permission": "write", "role_name": "maintain"}))
	reg.REST("GET", base+"custom/permission", httpmock.JSON(200, map[string]any{"permission": "read", "role_name": "auditor"}))
	reg.REST("GET", base+"stranger/permission", httpmock.JSON(404, map[string]any{"message": "Not Found"}))
	c, _ := newTestClient(t, reg)
	for login, want := range map[string]forge.Permission{"maint": "maintain", "custom": "read", "stranger": "none"} {
		got, err := c.Permission(context.Background(), testRef, login)
		if err != nil || got != want {
			t.Errorf("Permission(%s) = %q, %v; want %q", login, got, err, want)
		}
	}
}

// TestPR_S12_ViewerIsConvergesIdentity: the token's login is read once per
// client (replies are believed only from converge's own identity).
func TestPR_S12_ViewerIsConvergesIdentity(t *testing.T) {
	reg := httpmock.New(t)
	reg.REST("GET", "/api/v3/user", httpmock.JSON(200, map[string]any{"login": "octo-author", "id": 7}))
	c, _ := newTestClient(t, reg)
	for i := 0; i < 2; i++ {
		got, err := c.Viewer(context.Background())
		if err != nil || got != "octo-author" {
			t.Fatalf("Viewer = %q, %v; want octo-author", got, err)
		}
	}
}
