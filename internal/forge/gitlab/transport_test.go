package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

func TestTokenFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if tok, src := TokenFromEnv(env(map[string]string{"GITLAB_TOKEN": "a", "GL_TOKEN": "b"})); tok != "a" || src != "GITLAB_TOKEN" {
		t.Errorf("%q %q, want GITLAB_TOKEN first", tok, src)
	}
	if tok, src := TokenFromEnv(env(map[string]string{"GITLAB_TOKEN": " ", "GL_TOKEN": "b"})); tok != "b" || src != "GL_TOKEN" {
		t.Errorf("%q %q, want GL_TOKEN", tok, src)
	}
	if tok, src := TokenFromEnv(env(nil)); tok != "" || src != "" {
		t.Errorf("%q %q, want none", tok, src)
	}
}

// TestSEC_6_TokenOnlyToTheAPIHost: the token goes to the API's origin
// alone, as PRIVATE-TOKEN (REST) or Bearer (GraphQL); a request elsewhere
// goes out bare; plain http is refused except to loopback.
func TestSEC_6_TokenOnlyToTheAPIHost(t *testing.T) {
	reg := httpmock.New(t)
	reg.NoSchemaCheck = true // GitLab's documents, not GitHub's
	stub(reg, "GET", "/api/v4/user", "", ok(map[string]any{"id": 1, "username": "me"}))
	reg.Register("elsewhere", func(r *http.Request, _ []byte) bool { return r.URL.Host == "evil.example.com" }, ok(map[string]any{}))
	reg.Register("other port", func(r *http.Request, _ []byte) bool { return r.URL.Host == "gitlab.example.com:8443" }, ok(map[string]any{}))
	reg.GraphQL("BatchResolve", httpmock.GraphQLData(map[string]any{"m0": map[string]any{"discussion": map[string]any{"id": "gid://gitlab/Discussion/" + d1, "resolved": true}, "errors": []any{}}}))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	if _, err := c.Viewer(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"https://evil.example.com/x", "https://gitlab.example.com:8443/x"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("PRIVATE-TOKEN", testToken)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if errs := c.ResolveThreads(ctx, testRef, []string{d1}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	reqs := reg.Requests()
	if reqs[0].Header.Get("PRIVATE-TOKEN") != testToken || reqs[0].Header.Get("Authorization") != "" {
		t.Errorf("API request headers %v", reqs[0].Header)
	}
	for _, r := range reqs[1:3] {
		if r.Header.Get("PRIVATE-TOKEN") != "" || r.Header.Get("Authorization") != "" {
			t.Errorf("token sent to %s", r.Host)
		}
	}
	if g := reqs[3]; g.Path != "/api/graphql" || g.Header.Get("Authorization") != "Bearer "+testToken || g.Header.Get("PRIVATE-TOKEN") != "" {
		t.Errorf("GraphQL request %s headers %v", g.Path, g.Header)
	}

	if _, err := New(Options{APIURL: "http://gitlab.example.com/api/v4", Token: testToken}); err == nil {
		t.Error("a token over plain http to a remote host was accepted")
	}
	if _, err := New(Options{APIURL: "http://127.0.0.1:9/api/v4", Token: testToken}); err != nil {
		t.Errorf("loopback emulator refused: %v", err)
	}
}

// TestIF1_ErrorKinds: GitLab's statuses map to forge error kinds, and no
// message says the token.
func TestIF1_ErrorKinds(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   forge.ErrorKind
	}{
		{401, "401 Unauthorized", forge.KindAuth},
		{403, "403 Forbidden", forge.KindAuth},
		{404, "404 Not found", forge.KindNotFound},
		{409, "409 Conflict", forge.KindInvalid},
		{422, "422 Unprocessable " + testToken, forge.KindInvalid},
		{400, "400 Bad request", forge.KindInvalid},
	}
	for _, c := range cases {
		reg := httpmock.New(t)
		stub(reg, "PUT", pMR, "", msg(c.status, c.body))
		cl, _ := newTestClient(t, reg)
		wantKind(t, fmt.Sprint(c.status), cl.AddLabels(context.Background(), testRef, "x"), c.kind)
	}
}

// TestREL_1_RetriesReadsNotWrites: a read is retried on 5xx; a write that
// may have landed is not; a 429 is retried after Retry-After, writes too.
func TestREL_1_RetriesReadsNotWrites(t *testing.T) {
	reg := httpmock.New(t)
	stub(reg, "GET", "/api/v4/user", "", msg(http.StatusBadGateway, "502 Bad Gateway"))
	stub(reg, "GET", "/api/v4/user", "", ok(map[string]any{"id": 1, "username": "me"}))
	stub(reg, "POST", pMR+"/notes", "", msg(http.StatusBadGateway, "502 Bad Gateway"))
	stub(reg, "PUT", pMR, "", msg(http.StatusTooManyRequests, "429 Too Many Requests", "Retry-After", "7"))
	stub(reg, "PUT", pMR, "", ok(mrJSON()))
	c, sl := newTestClient(t, reg)
	ctx := context.Background()
	if v, err := c.Viewer(ctx); err != nil || v != "me" {
		t.Errorf("viewer after a 502: %q, %v", v, err)
	}
	_, err := c.CreateIssueComment(ctx, testRef, "hi")
	wantKind(t, "a write answered 502", err, forge.KindUnreachable)
	if err := c.AddLabels(ctx, testRef, "x"); err != nil {
		t.Errorf("write after a 429: %v", err)
	}
	if n := len(reg.Requests()); n != 5 {
		t.Errorf("%d requests, want 5 (the 502'd write not repeated)", n)
	}
	found := false
	for _, d := range sl.d {
		found = found || d == 7*time.Second
	}
	if !found {
		t.Errorf("waits %v, want the 429's 7s", sl.d)
	}

	// A rate limit past MaxWait ends the call as rate limited.
	reg2 := httpmock.New(t)
	stub(reg2, "GET", "/api/v4/user", "", msg(http.StatusTooManyRequests, "429", "Retry-After", "3600"))
	c2, _ := newTestClient(t, reg2)
	_, err = c2.Viewer(ctx)
	wantKind(t, "an hour's rate limit", err, forge.KindRateLimited)

	// A connection never made is retried, even for a write.
	reg3 := httpmock.New(t)
	stub(reg3, "POST", pMR+"/notes", "", httpmock.Error(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}))
	stub(reg3, "POST", pMR+"/notes", "", httpmock.JSON(http.StatusCreated, noteJSON(5, nil, "me", "hi", 1, false, nil)))
	c3, _ := newTestClient(t, reg3)
	if _, err := c3.CreateIssueComment(ctx, testRef, "hi"); err != nil {
		t.Errorf("write after a refused connection: %v", err)
	}
}

// TestThreadBatcher: replies and resolves go as aliased mutations, at
// most MaxBatch a request, answered per item in order; a failed item
// fails alone, a failed request fails all of its items.
func TestThreadBatcher(t *testing.T) {
	reg := httpmock.New(t)
	reg.NoSchemaCheck = true // GitLab's schema is the emulator's to hold
	stub(reg, "GET", pMR, "", ok(mrJSON()))
	n := MaxBatch + 2
	first := map[string]any{}
	for i := range MaxBatch {
		a := fmt.Sprintf("m%d", i)
		if i == 1 {
			first[a] = map[string]any{"note": nil, "errors": []string{"Note can't be blank"}}
			continue
		}
		first[a] = map[string]any{"note": map[string]any{"id": fmt.Sprintf("gid://gitlab/DiscussionNote/%d", 1000+i), "body": fmt.Sprintf("r%d", i),
			"author": map[string]any{"username": "converge-bot"}, "createdAt": at(60)}, "errors": []string{}}
	}
	reg.GraphQL("BatchReply", httpmock.GraphQLData(first))
	reg.GraphQL("BatchReply", httpmock.JSON(http.StatusOK, map[string]any{
		"data": map[string]any{"m0": nil, "m1": map[string]any{"note": map[string]any{"id": "gid://gitlab/DiscussionNote/2001", "body": "r51",
			"author": map[string]any{"username": "converge-bot"}, "createdAt": at(61)}, "errors": []string{}}},
		"errors": []any{map[string]any{"message": "The resource that you are attempting to access does not exist or you don't have permission to perform this action", "path": []string{"m0"}}},
	}))
	replies := make([]forge.ThreadReply, n)
	for i := range replies {
		replies[i] = forge.ThreadReply{ThreadID: fmt.Sprintf("%040d", i), Body: fmt.Sprintf("r%d", i)}
	}
	replies[2].Body = " " // refused before sending
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	res := c.ReplyToThreads(ctx, testRef, replies)
	if len(res) != n {
		t.Fatalf("%d results", len(res))
	}
	if res[0].Err != nil || res[0].Comment.ID != "gid://gitlab/DiscussionNote/1000" || res[0].Comment.DatabaseID != 1000 || res[0].Comment.Author != "converge-bot" {
		t.Errorf("item 0: %+v", res[0])
	}
	wantKind(t, "item refused by GitLab", res[1].Err, forge.KindInvalid)
	wantKind(t, "blank item", res[2].Err, forge.KindInvalid)
	wantKind(t, "item whose discussion is gone", res[n-2].Err, forge.KindNotFound)
	if res[n-1].Err != nil || res[n-1].Comment.Body != "r51" {
		t.Errorf("last item: %+v", res[n-1])
	}
	var sent []httpmock.Recorded
	for _, r := range reg.Requests() {
		if r.OpName == "BatchReply" {
			sent = append(sent, r)
		}
	}
	if len(sent) != 2 {
		t.Fatalf("%d batch requests, want 2", len(sent))
	}
	var body struct {
		Query     string                    `json:"query"`
		Variables map[string]map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(sent[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Variables) != MaxBatch-1 || strings.Count(body.Query, "createNote(") != MaxBatch-1 {
		t.Errorf("first request: %d variables", len(body.Variables))
	}
	if v := body.Variables["i0"]; v["noteableId"] != "gid://gitlab/MergeRequest/9001" || v["discussionId"] != "gid://gitlab/Discussion/"+replies[0].ThreadID || v["body"] != "r0" {
		t.Errorf("first input %v", v)
	}

	// A request that fails in flight leaves every item unknown.
	reg2 := httpmock.New(t)
	reg2.NoSchemaCheck = true
	reg2.GraphQL("BatchResolve", httpmock.StringResponse(http.StatusBadGateway, `{"message":"502"}`))
	c2, _ := newTestClient(t, reg2)
	errs := c2.ResolveThreads(ctx, testRef, []string{d1, d2})
	for i, err := range errs {
		wantKind(t, fmt.Sprintf("resolve %d in a failed request", i), err, forge.KindUnreachable)
	}
	if len(reg2.Requests()) != 1 {
		t.Errorf("a mutation was retried: %d requests", len(reg2.Requests()))
	}
}

func TestDocumentsAreOneOperationEach(t *testing.T) {
	for name, doc := range Documents() {
		if op := operationName(doc); op == "" || !strings.HasPrefix(name, op) {
			t.Errorf("%s: operation %q", name, op)
		}
	}
	if d := BatchResolveDoc(2); !strings.Contains(d, "$i1: DiscussionToggleResolveInput!") || !strings.Contains(d, "m1: discussionToggleResolve(input: $i1)") {
		t.Errorf("resolve doc:\n%s", d)
	}
}

func TestSEC_6_HostsAndCloneURL(t *testing.T) {
	api := "https://gitlab.example.com/api/v4"
	if err := CheckHosts(testRef, api, false); err != nil {
		t.Errorf("same host: %v", err)
	}
	other := testRef
	other.Host = "evil.example.com"
	if err := CheckHosts(other, api, false); err == nil {
		t.Error("a merge request on another host passed")
	}
	if err := CheckHosts(other, api, true); err != nil {
		t.Errorf("--allow-host-mismatch: %v", err)
	}
	cases := []struct {
		reported, want string
		ok             bool
	}{
		{"https://gitlab.example.com/group/sub/proj.git", "https://gitlab.example.com/group/sub/proj.git", true},
		{"", "https://gitlab.example.com/group/sub/proj.git", true},
		{"https://evil.example.com/group/sub/proj.git", "", false},
		{"https://u:p@gitlab.example.com/group/sub/proj.git", "", false},
		{"http://gitlab.example.com/group/sub/proj.git", "", false},
	}
	for _, c := range cases {
		got, err := CloneURL(api, c.reported, testRef)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("CloneURL(%q) = %q, %v", c.reported, got, err)
		}
	}
}
