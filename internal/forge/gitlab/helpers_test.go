package gitlab

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

const testToken = "glpat-s3cretT0kenValue1234567890"

// testRef is group/sub/proj!7 on gitlab.example.com.
var testRef = forge.PRRef{Host: "gitlab.example.com", Scheme: "https", Owner: "group/sub", Repo: "proj", Number: 7, Forge: forge.GitLab}

// Escaped REST paths of testRef.
const (
	pProject = "/api/v4/projects/group%2Fsub%2Fproj"
	pMR      = pProject + "/merge_requests/7"
)

type sleeps struct {
	mu  sync.Mutex
	d   []time.Duration
	now time.Time
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.now = s.now.Add(d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func newTestClient(t *testing.T, reg *httpmock.Registry, mutate ...func(*Options)) (*Client, *sleeps) {
	t.Helper()
	sl := &sleeps{now: httpmock.Date}
	opts := Options{
		APIURL:     "https://gitlab.example.com/api/v4",
		Token:      testToken,
		HTTPClient: &http.Client{Transport: reg},
		Retry:      RetryPolicy{Sleep: sl.sleep, Now: sl.clock},
	}
	for _, m := range mutate {
		m(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, sl
}

// stub registers an answer for method and escaped path; query, when not
// "", must be a substring of the raw query.
func stub(reg *httpmock.Registry, method, path, query string, r httpmock.Responder) {
	reg.Register(method+" "+path+"?"+query, func(req *http.Request, _ []byte) bool {
		return req.Method == method && req.URL.EscapedPath() == path && strings.Contains(req.URL.RawQuery, query)
	}, r)
}

func ok(v any, hdr ...string) httpmock.Responder { return httpmock.JSON(http.StatusOK, v, hdr...) }

func msg(status int, m string, hdr ...string) httpmock.Responder {
	return httpmock.JSON(status, map[string]string{"message": m}, hdr...)
}

// sentJSON decodes a recorded request's JSON body.
func sentJSON(t *testing.T, r httpmock.Recorded) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s %s: body %q is not JSON: %v", r.Method, r.Path, r.Body, err)
	}
	return m
}

func wantKind(t *testing.T, what string, err error, kind forge.ErrorKind) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", what, kind)
		return
	}
	if got := forge.KindOf(err); got != kind {
		t.Errorf("%s: %v (kind %s), want %s", what, err, got, kind)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("%s: error says the token: %v", what, err)
	}
}

var (
	t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	// SHAs of the fixture: base, the first head, the head now.
	shaBase = strings.Repeat("b", 40)
	shaOld  = strings.Repeat("1", 40)
	shaHead = strings.Repeat("2", 40)
)

func at(min int) string { return t0.Add(time.Duration(min) * time.Minute).Format(time.RFC3339) }

func u(id int, name string) map[string]any { return map[string]any{"id": id, "username": name} }

func mrJSON() map[string]any {
	return map[string]any{
		"id": 9001, "iid": 7, "project_id": 42, "title": "Add x", "description": "body",
		"state": "opened", "draft": false, "author": u(1, "alice"),
		"source_branch": "feat", "target_branch": "main", "source_project_id": 42, "target_project_id": 42,
		"sha":                   shaHead,
		"diff_refs":             map[string]any{"base_sha": shaBase, "head_sha": shaHead, "start_sha": shaBase},
		"detailed_merge_status": "mergeable", "has_conflicts": false,
		"labels":        []string{"converge", "converge"},
		"reviewers":     []any{u(2, "bob"), u(3, "GitLabDuo")},
		"head_pipeline": map[string]any{"id": 5, "sha": shaHead, "status": "running", "web_url": "https://gitlab.example.com/group/sub/proj/-/pipelines/5"},
		"web_url":       "https://gitlab.example.com/group/sub/proj/-/merge_requests/7",
	}
}

func pos(head string, line int) map[string]any {
	return map[string]any{"base_sha": shaBase, "start_sha": shaBase, "head_sha": head, "old_path": "a.go", "new_path": "a.go",
		"position_type": "text", "old_line": nil, "new_line": line, "line_range": nil}
}

func noteJSON(id int, typ any, author, body string, min int, system bool, p any) map[string]any {
	return map[string]any{"id": id, "type": typ, "body": body, "author": u(9, author), "created_at": at(min),
		"system": system, "resolvable": typ != nil, "resolved": false, "resolved_by": nil, "noteable_iid": 7, "position": p}
}
