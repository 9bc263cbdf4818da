package fakelab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func gql(t *testing.T, l *Lab, token, query string, vars map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", l.GraphQLURL(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := l.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// converge's batched thread writes: aliased createNote replies and
// discussionToggleResolve in one request, answered per alias.
func TestGraphQL_BatchedThreadWrites(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{"true"}})
	tok := l.Tokens()
	_, cu := gql(t, l, tok.Author, `{ currentUser { username } }`, nil)
	if got := cu["data"].(map[string]any)["currentUser"].(map[string]any)["username"]; got != UserAuthor {
		t.Fatalf("currentUser %v", cu)
	}
	d1, _, err := l.OpenDiscussion(testProject, iid, UserReviewer, NewDiscussion{Body: "line 6", Path: "calc.txt", NewLine: 6})
	if err != nil {
		t.Fatal(err)
	}
	d2, _, err := l.OpenDiscussion(testProject, iid, UserReviewer, NewDiscussion{Body: "line 2", Path: "calc.txt", NewLine: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := l.MR(testProject, iid)
	if p := st.Discussions[1].Position; p.OldLine != 2 || p.NewLine != 2 || p.HeadSHA != st.HeadSHA {
		t.Fatalf("context-line position %+v", p)
	}
	if p := st.Discussions[0].Position; p.OldLine != 0 || p.NewLine != 6 {
		t.Fatalf("added-line position %+v", p)
	}
	mrGID := fmt.Sprintf("gid://gitlab/MergeRequest/%d", st.ID)
	q := fmt.Sprintf(`mutation {
  r0: createNote(input: {noteableId: %q, discussionId: "gid://gitlab/Discussion/%s", body: "fixed"}) { note { id body author { username } createdAt } errors }
  v0: discussionToggleResolve(input: {id: "gid://gitlab/Discussion/%s", resolve: true}) { discussion { id resolved } errors }
  r1: createNote(input: {noteableId: %q, discussionId: "gid://gitlab/Discussion/%s", body: "fixed too"}) { note { id body author { username } createdAt } errors }
  v1: discussionToggleResolve(input: {id: "gid://gitlab/Discussion/%s", resolve: true}) { discussion { id resolved } errors }
}`, mrGID, d1, d1, mrGID, d2, d2)
	code, out := gql(t, l, tok.Author, q, nil)
	if code != 200 || out["errors"] != nil {
		t.Fatalf("%d %v", code, out)
	}
	data := out["data"].(map[string]any)
	r0 := data["r0"].(map[string]any)
	note := r0["note"].(map[string]any)
	if !strings.HasPrefix(note["id"].(string), "gid://gitlab/DiffNote/") || note["body"] != "fixed" || len(r0["errors"].([]any)) != 0 {
		t.Fatalf("r0 %v", r0)
	}
	v1 := data["v1"].(map[string]any)["discussion"].(map[string]any)
	if v1["resolved"] != true || v1["id"] != "gid://gitlab/Discussion/"+d2 {
		t.Fatalf("v1 %v", v1)
	}
	st, _ = l.MR(testProject, iid)
	if !st.Discussions[0].Resolved || !st.Discussions[1].Resolved || st.SystemNotes[len(st.SystemNotes)-1] != "resolved all threads" {
		t.Fatalf("after batch %+v", st)
	}

	// A top-level note through createNote is a plain Note.
	_, out = gql(t, l, tok.Author, `mutation($id: NoteableID!) { createNote(input: {noteableId: $id, body: "hello"}) { note { id } errors } }`, map[string]any{"id": mrGID})
	if id := out["data"].(map[string]any)["createNote"].(map[string]any)["note"].(map[string]any)["id"].(string); !strings.HasPrefix(id, "gid://gitlab/Note/") {
		t.Fatalf("top-level note id %s", id)
	}
	// A blank body is a per-mutation error; an unknown discussion a
	// top-level one; a bad token a 401.
	_, out = gql(t, l, tok.Author, `mutation($id: NoteableID!) { createNote(input: {noteableId: $id, body: " "}) { note { id } errors } }`, map[string]any{"id": mrGID})
	if errs := out["data"].(map[string]any)["createNote"].(map[string]any)["errors"].([]any); len(errs) != 1 {
		t.Fatalf("blank body %v", out)
	}
	_, out = gql(t, l, tok.Author, `mutation { discussionToggleResolve(input: {id: "gid://gitlab/Discussion/ffff", resolve: true}) { errors } }`, nil)
	if errs, _ := out["errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["message"].(string), "does not exist") {
		t.Fatalf("unknown discussion %v", out)
	}
	if code, out := gql(t, l, "bogus", `{ currentUser { username } }`, nil); code != 401 || out["errors"] == nil {
		t.Fatalf("bad token %d %v", code, out)
	}
	// An outsider may not resolve.
	_, out = gql(t, l, tok.Outsider, fmt.Sprintf(`mutation { discussionToggleResolve(input: {id: "gid://gitlab/Discussion/%s", resolve: false}) { errors } }`, d1), nil)
	if out["errors"] == nil {
		t.Fatalf("outsider resolved: %v", out)
	}
}

// Every write lands in the write log: a batch of aliased mutations is
// one Write with a field per mutation.
func TestWrites_Logged(t *testing.T) {
	l, iid := seeded(t, Options{}, ProjectOptions{TestCommand: []string{"true"}})
	d, _, err := l.OpenDiscussion(testProject, iid, UserReviewer, NewDiscussion{Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := l.MR(testProject, iid)
	q := fmt.Sprintf(`mutation { a: createNote(input: {noteableId: "gid://gitlab/MergeRequest/%d", discussionId: "gid://gitlab/Discussion/%s", body: "ok"}) { errors } b: discussionToggleResolve(input: {id: "gid://gitlab/Discussion/%s", resolve: true}) { errors } }`, st.ID, d, d)
	gql(t, l, l.Tokens().Author, q, nil)
	gql(t, l, l.Tokens().Author, `{ currentUser { username } }`, nil)
	ws := l.Writes()
	if len(ws) != 1 || ws[0].Actor != UserAuthor || strings.Join(ws[0].Fields, ",") != "createNote,discussionToggleResolve" {
		t.Fatalf("writes %+v", ws)
	}
}
