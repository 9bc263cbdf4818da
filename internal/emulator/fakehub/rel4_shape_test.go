package fakehub

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/testutil/jsonshape"
	"github.com/convergeloop/converge/internal/testutil/recorded"
)

// appPerms: an App's permissions are its own choice; the recorded run's
// App (GitHub Actions on PyGithub's repository) asked for more than the
// emulator's CI App, and converge reads none of them.
const appPerms = "an App's permissions are its own; converge reads none"

// shapeCases are the recorded REST answers the emulator is held to: the
// request the emulator is sent for each (on its own repository, PR 1, its
// head), and the differences of shape left, each with why it cannot
// matter to converge or to a client of the sandbox. A difference not
// listed fails the test, and so does one listed that no longer occurs.
var shapeCases = []struct {
	file   string
	method string
	path   string // under the API root; {head} is PR 1's head
	body   any
	status int
	token  string            // default: the author's
	known  map[string]string // path of the difference → why it cannot matter
}{
	{file: "rest-get-pull-mergeable-null-200.json", method: "GET", path: "repos/acme/widget/pulls/1", status: 200},
	{file: "rest-list-pulls-200.json", method: "GET", path: "repos/acme/widget/pulls", status: 200},
	{file: "rest-combined-status-200.json", method: "GET", path: "repos/acme/widget/commits/{head}/status", status: 200},
	{file: "rest-list-check-runs-for-ref-200.json", method: "GET", path: "repos/acme/widget/commits/{head}/check-runs", status: 200,
		known: map[string]string{
			"$.check_runs[].app.permissions.actions":              appPerms,
			"$.check_runs[].app.permissions.deployments":          appPerms,
			"$.check_runs[].app.permissions.issues":               appPerms,
			"$.check_runs[].app.permissions.packages":             appPerms,
			"$.check_runs[].app.permissions.pages":                appPerms,
			"$.check_runs[].app.permissions.repository_hooks":     appPerms,
			"$.check_runs[].app.permissions.repository_projects":  appPerms,
			"$.check_runs[].app.permissions.security_events":      appPerms,
			"$.check_runs[].app.permissions.vulnerability_alerts": appPerms,
		}},
	{file: "rest-list-issue-comments-200.json", method: "GET", path: "repos/acme/widget/issues/1/comments", status: 200},
	{file: "rest-list-issue-events-200.json", method: "GET", path: "repos/acme/widget/issues/1/events", status: 200},
	{file: "rest-compare-200.json", method: "GET", path: "repos/acme/widget/compare/main...feature/greet", status: 200},
	{file: "rest-permission-200.json", method: "GET", path: "repos/acme/widget/collaborators/" + LoginAuthor + "/permission", status: 200},
	{file: "rest-get-user-200.json", method: "GET", path: "user", status: 200},
	{file: "rest-create-issue-comment-201.json", method: "POST", path: "repos/acme/widget/issues/1/comments", body: map[string]any{"body": "a comment"}, status: 201},
	{file: "rest-create-status-201.json", method: "POST", path: "repos/acme/widget/statuses/{head}", body: map[string]any{"state": "success", "context": "ci/x", "description": "ok"}, status: 201},
	{file: "rest-add-labels-200.json", method: "POST", path: "repos/acme/widget/issues/1/labels", body: map[string]any{"labels": []string{"bug"}}, status: 200},
	{file: "rest-404-not-found.json", method: "GET", path: "repos/acme/nosuchrepo", status: 404},
	{file: "rest-401-bad-credentials.json", method: "GET", path: "user", status: 401, token: "ghp_notATokenOfAnyone0000000000000000000"},
}

// TestREL_4_EmulatorAnswersHaveTheRecordedShape: for each recorded real
// answer above, the emulator's answer to the same request has the same
// status and the recording's shape — every field the recording has, with
// the same JSON type, null where GitHub may give null — but for the
// differences listed with their reason.
func TestREL_4_EmulatorAnswersHaveTheRecordedShape(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h)
	head := h.prForTest(t, "acme", "widget", 1).headSHA
	// Something for the lists to hold.
	do(t, h, h.Tokens().Author, "POST", h.APIURL()+"/repos/acme/widget/issues/1/comments", map[string]any{"body": "first"})
	do(t, h, h.Tokens().Author, "POST", h.APIURL()+"/repos/acme/widget/issues/1/labels", map[string]any{"labels": []string{"first"}})
	do(t, h, h.Tokens().CI, "POST", h.APIURL()+"/repos/acme/widget/check-runs", map[string]any{"name": "build", "head_sha": head, "status": "completed", "conclusion": "success"})
	do(t, h, h.Tokens().Author, "POST", h.APIURL()+"/repos/acme/widget/statuses/"+head, map[string]any{"state": "success", "context": "lint"})
	report := os.Getenv("FAKEHUB_SHAPE_REPORT") != ""
	recs := recorded.Load(t, "github")
	for _, c := range shapeCases {
		t.Run(c.file, func(t *testing.T) {
			rec, ok := recs[c.file]
			if !ok {
				t.Fatalf("no recording %s", c.file)
			}
			tok := c.token
			if tok == "" {
				tok = h.Tokens().Author
			}
			status, body := do(t, h, tok, c.method, h.APIURL()+"/"+strings.ReplaceAll(c.path, "{head}", head), c.body)
			if status != rec.Response.Status || status != c.status {
				t.Fatalf("%s %s: the emulator answered %d, GitHub %d: %s", c.method, c.path, status, rec.Response.Status, body)
			}
			var want, got any
			if err := json.Unmarshal(rec.Response.Body, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("the emulator's answer is not JSON: %s", body)
			}
			diffs := jsonshape.Diff(want, got)
			if report {
				keys := slices.Sorted(func(yield func(string) bool) {
					for k := range diffs {
						if !yield(k) {
							return
						}
					}
				})
				for _, k := range keys {
					fmt.Printf("%s\t%s\t%s\n", c.file, k, diffs[k])
				}
				return
			}
			unlisted, gone := jsonshape.Unexplained(diffs, c.known)
			if len(unlisted) > 0 {
				t.Errorf("the emulator's answer differs from GitHub's recorded one:\n  %s", strings.Join(unlisted, "\n  "))
			}
			if len(gone) > 0 {
				t.Errorf("listed differences that no longer occur (drop them from the list): %s", strings.Join(gone, ", "))
			}
		})
	}
}

// gqlShapeCases are the recorded GraphQL answers the emulator is held to:
// the recorded document sent as it was, its ids replaced by the
// emulator's (prep says which object each stands for), and the
// differences left with why they cannot matter.
var gqlShapeCases = []struct {
	file  string
	prep  string // "pr": $id is PR 1; "thread": the input's thread id is PR 1's thread
	known map[string]string
}{
	{file: "graphql-mergeable-unknown-200.json", prep: "pr"},
	{file: "graphql-mergeable-conflicting-200.json", prep: "pr"},
	{file: "graphql-review-threads-resolved-200.json", prep: "pr"},
	{file: "graphql-reply-to-thread-200.json", prep: "thread"},
	{file: "graphql-resolve-thread-200.json", prep: "thread"},
	{file: "graphql-unresolve-thread-200.json", prep: "thread"},
	// graphql-review-threads-file-level-200.json is not here: the
	// emulator's reviewers comment on lines, so it holds no file-level
	// thread to answer with (the client contract test reads GitHub's).
}

// TestREL_4_EmulatorGraphQLAnswersHaveTheRecordedShape: each recorded
// real GraphQL answer's document, sent to the emulator on its own PR and
// thread, is answered with the recording's shape: the same fields, JSON
// types and nulls, no errors, but for the differences listed.
func TestREL_4_EmulatorGraphQLAnswersHaveTheRecordedShape(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h)
	do(t, h, h.Tokens().Reviewer, "POST", h.APIURL()+"/repos/acme/widget/pulls/1/reviews", map[string]any{
		"event": "COMMENT", "body": "one thread", "comments": []map[string]any{{"path": "main.go", "line": 4, "body": "a nit"}}})
	r := gql(t, h, h.Tokens().Author, `query{repository(owner:"acme",name:"widget"){pullRequest(number:1){id reviewThreads(first:1){nodes{id}}}}}`, nil)
	var ids struct {
		Repository struct {
			PullRequest struct {
				ID            string
				ReviewThreads struct{ Nodes []struct{ ID string } }
			}
		}
	}
	if err := json.Unmarshal(r.Data, &ids); err != nil || len(ids.Repository.PullRequest.ReviewThreads.Nodes) != 1 {
		t.Fatalf("the PR's thread: %v %s", err, r.Data)
	}
	prID, threadID := ids.Repository.PullRequest.ID, ids.Repository.PullRequest.ReviewThreads.Nodes[0].ID
	// The resolved thread's recording has a reply and is resolved.
	gql(t, h, h.Tokens().Author, `mutation($id:ID!){addPullRequestReviewThreadReply(input:{pullRequestReviewThreadId:$id,body:"fixed"}){comment{id}}}`, map[string]any{"id": threadID})
	recs := recorded.Load(t, "github")
	for _, c := range gqlShapeCases {
		t.Run(c.file, func(t *testing.T) {
			rec, ok := recs[c.file]
			if !ok || rec.Request.GraphQLDocument == "" {
				t.Fatalf("no GraphQL recording %s", c.file)
			}
			vars := map[string]any{}
			for k, v := range rec.Request.GraphQLVariables {
				vars[k] = v
			}
			switch c.prep {
			case "pr":
				vars["id"] = prID
			case "thread":
				in := map[string]any{}
				for k, v := range vars["input"].(map[string]any) {
					in[k] = v
				}
				for _, k := range []string{"threadId", "pullRequestReviewThreadId"} {
					if _, ok := in[k]; ok {
						in[k] = threadID
					}
				}
				vars["input"] = in
			}
			if c.file == "graphql-review-threads-resolved-200.json" {
				gql(t, h, h.Tokens().Author, `mutation($id:ID!){resolveReviewThread(input:{threadId:$id}){thread{id}}}`, map[string]any{"id": threadID})
			}
			status, body := do(t, h, h.Tokens().Author, "POST", h.GraphQLURL(), map[string]any{"query": rec.Request.GraphQLDocument, "variables": vars})
			if status != rec.Response.Status {
				t.Fatalf("the emulator answered %d, GitHub %d: %s", status, rec.Response.Status, body)
			}
			var want, got any
			if err := json.Unmarshal(rec.Response.Body, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("the emulator's answer is not JSON: %s", body)
			}
			unlisted, gone := jsonshape.Unexplained(jsonshape.Diff(want, got), c.known)
			if len(unlisted) > 0 {
				t.Errorf("the emulator's answer differs from GitHub's recorded one:\n  %s\nemulator: %s", strings.Join(unlisted, "\n  "), body)
			}
			if len(gone) > 0 {
				t.Errorf("listed differences that no longer occur (drop them from the list): %s", strings.Join(gone, ", "))
			}
		})
	}
}
