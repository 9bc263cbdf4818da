package fakehub

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	ghgraphql "github.com/convergeloop/converge/internal/forge/github/graphql"
	"github.com/convergeloop/converge/internal/testutil/ghschema"
)

func TestSchemaIsSubsetOfGitHub(t *testing.T) {
	t.Parallel()
	github := ghschema.Load(t)
	ours, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: SchemaSDL()})
	if err != nil {
		t.Fatalf("our SDL does not load: %v", err)
	}
	for _, p := range ghschema.CheckSubset(github, ours) {
		t.Error(p)
	}
	// Every client document must be valid against our schema as well, so
	// the emulator can serve all of it.
	for name, doc := range ghgraphql.All() {
		if err := ghschema.ValidateDocument(ours, doc); err != nil {
			t.Errorf("%s: not served by our schema: %v", name, err)
		}
	}
}

// TestPR_O1_ClientDocumentsRunWithoutErrors executes every document the
// client sends against a running emulator.
func TestPR_O1_ClientDocumentsRunWithoutErrors(t *testing.T) {
	t.Parallel()
	// Copilot stays requested while its review is pending.
	h := newHub(t, Options{CopilotDelay: time.Hour})
	n := seedPR(t, h, RepoOptions{})
	tok := h.Tokens()
	p := h.prForTest(t, "acme", "widget", n)
	threadID := h.addThreadsForTest(t, p, 1, 1)[0]
	base := map[string]any{"owner": "acme", "name": "widget", "number": n}
	vars := map[string]map[string]any{
		"observe":              base,
		"threads_page":         {"owner": "acme", "name": "widget", "number": n, "after": cursor(0)},
		"thread_comments_page": {"id": threadID, "after": cursor(0)},
		"reply":                {"input": map[string]any{"pullRequestReviewThreadId": threadID, "body": "Fixed."}},
		"resolve":              {"input": map[string]any{"threadId": threadID}},
		"unresolve":            {"input": map[string]any{"threadId": threadID}},
		"request_reviews":      {"input": map[string]any{"pullRequestId": p.nodeID(), "userLogins": []string{LoginReviewer}, "botLogins": []string{LoginCopilot}, "union": true}},
	}
	docs := ghgraphql.All()
	// Sorted, so resolve runs before unresolve.
	names := slices.Sorted(maps.Keys(docs))
	for _, name := range names {
		doc := docs[name]
		v, ok := vars[name]
		if !ok {
			t.Errorf("no variables for client document %s: add them here", name)
			continue
		}
		r := gql(t, h, tok.Author, doc, v)
		if len(r.Errors) > 0 {
			t.Errorf("%s: errors %v", name, r.Errors)
		}
		if string(r.Data) == "" || string(r.Data) == "null" {
			t.Errorf("%s: no data", name)
		}
	}
	r := gql(t, h, tok.Author, docs["observe"], base)
	var got struct {
		Repository struct {
			PullRequest struct {
				HeadRefOid       string
				MergeStateStatus string
				Mergeable        string
				Author           struct{ Login string }
				ReviewRequests   struct {
					Nodes []struct {
						RequestedReviewer struct {
							Typename string `json:"__typename"`
							Login    string
						}
					}
				}
				ReviewThreads struct {
					Nodes []struct {
						IsResolved bool
						Line       int
						Comments   struct{ Nodes []struct{ Body string } }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatal(err)
	}
	pr := got.Repository.PullRequest
	if pr.HeadRefOid != p.headSHA || pr.MergeStateStatus != "CLEAN" || pr.Mergeable != "MERGEABLE" || pr.Author.Login != LoginAuthor {
		t.Errorf("observation: %+v", pr)
	}
	var reviewers []string
	for _, n := range pr.ReviewRequests.Nodes {
		reviewers = append(reviewers, n.RequestedReviewer.Typename+":"+n.RequestedReviewer.Login)
	}
	if want := "User:octo-reviewer Bot:copilot-pull-request-reviewer"; strings.Join(reviewers, " ") != want {
		t.Errorf("requested reviewers %v, want %s", reviewers, want)
	}
	if len(pr.ReviewThreads.Nodes) != 1 || pr.ReviewThreads.Nodes[0].IsResolved || len(pr.ReviewThreads.Nodes[0].Comments.Nodes) != 2 {
		t.Errorf("threads: %+v", pr.ReviewThreads)
	}
}

// TestPR_O1_ThreadAndCommentPagination pages >100 threads and >100
// comments with the client's own documents.
func TestPR_O1_ThreadAndCommentPagination(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	ids := h.addThreadsForTest(t, p, 150, 1)
	big := h.addThreadsForTest(t, p, 1, 230)[0]
	tok := h.Tokens().Author
	docs := ghgraphql.All()

	type page struct {
		PageInfo struct {
			HasNextPage bool
			EndCursor   string
		}
		Nodes []struct {
			ID       string
			Comments struct {
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
				Nodes []struct{ ID string }
			}
		}
	}
	var seen []string
	r := gql(t, h, tok, docs["observe"], map[string]any{"owner": "acme", "name": "widget", "number": n})
	var first struct {
		Repository struct{ PullRequest struct{ ReviewThreads page } }
	}
	if err := json.Unmarshal(r.Data, &first); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	pg := first.Repository.PullRequest.ReviewThreads
	var bigThread = func(pg page) (string, bool, int) {
		for _, nd := range pg.Nodes {
			if nd.ID == big {
				return nd.Comments.PageInfo.EndCursor, nd.Comments.PageInfo.HasNextPage, len(nd.Comments.Nodes)
			}
		}
		return "", false, 0
	}
	var bigCursor string
	for {
		for _, nd := range pg.Nodes {
			seen = append(seen, nd.ID)
		}
		if c, more, k := bigThread(pg); k > 0 {
			if !more || k != 100 {
				t.Errorf("big thread first page: %d comments, more=%v", k, more)
			}
			bigCursor = c
		}
		if !pg.PageInfo.HasNextPage {
			break
		}
		r := gql(t, h, tok, docs["threads_page"], map[string]any{"owner": "acme", "name": "widget", "number": n, "after": pg.PageInfo.EndCursor})
		var next struct {
			Repository struct{ PullRequest struct{ ReviewThreads page } }
		}
		if err := json.Unmarshal(r.Data, &next); err != nil || len(r.Errors) > 0 {
			t.Fatal(err, r.Errors)
		}
		pg = next.Repository.PullRequest.ReviewThreads
	}
	if len(seen) != 151 || seen[0] != ids[0] || seen[150] != big {
		t.Fatalf("paged %d threads, want 151", len(seen))
	}
	comments := 100
	for cur := bigCursor; ; {
		r := gql(t, h, tok, docs["thread_comments_page"], map[string]any{"id": big, "after": cur})
		var cp struct {
			Node struct {
				Comments struct {
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
					Nodes []struct{ ID string }
				}
			}
		}
		if err := json.Unmarshal(r.Data, &cp); err != nil || len(r.Errors) > 0 {
			t.Fatal(err, r.Errors)
		}
		comments += len(cp.Node.Comments.Nodes)
		if !cp.Node.Comments.PageInfo.HasNextPage {
			break
		}
		cur = cp.Node.Comments.PageInfo.EndCursor
	}
	if comments != 230 {
		t.Errorf("paged %d comments, want 230", comments)
	}
	// last: pages from the end, as reviews(last:100) does.
	r = gql(t, h, tok, `query($id: ID!) { node(id: $id) { ... on PullRequestReviewThread { comments(last: 5) { pageInfo { hasPreviousPage } nodes { body } } } } }`, map[string]any{"id": big})
	if !strings.Contains(string(r.Data), "comment 229") || !strings.Contains(string(r.Data), `"hasPreviousPage":true`) {
		t.Errorf("last page: %s", r.Data)
	}
	r = gql(t, h, tok, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { reviewThreads(first: 101) { totalCount } } } }`, nil)
	if len(r.Errors) == 0 || r.Errors[0]["type"] != "EXCESSIVE_PAGINATION" {
		t.Errorf("first:101 errors %v", r.Errors)
	}
}

func TestGraphQLErrorsInGitHubShape(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	tok := h.Tokens().Author
	r := gql(t, h, tok, `query { repository(owner: "acme", name: "nope") { id } }`, nil)
	if len(r.Errors) != 1 || r.Errors[0]["type"] != "NOT_FOUND" || fmt.Sprint(r.Errors[0]["path"]) != "[repository]" || string(r.Data) != `{"repository":null}` {
		t.Errorf("not found: %v %s", r.Errors, r.Data)
	}
	r = gql(t, h, tok, `query { repository(owner: "acme", name: "widget") { nope } }`, nil)
	if len(r.Errors) == 0 || r.Data != nil {
		t.Errorf("invalid field must fail validation: %v %s", r.Errors, r.Data)
	}
	p := h.prForTest(t, "acme", "widget", n)
	r = gql(t, h, tok, ghgraphql.Doc("request_reviews"), map[string]any{"input": map[string]any{"pullRequestId": p.nodeID(), "botLogins": []string{"no-such-bot"}}})
	if len(r.Errors) != 1 || r.Errors[0]["type"] != "NOT_FOUND" || !strings.Contains(fmt.Sprint(r.Errors[0]["message"]), "no-such-bot") {
		t.Errorf("unknown bot: %v", r.Errors)
	}
	r = gql(t, h, h.Tokens().Outsider, ghgraphql.Doc("request_reviews"), map[string]any{"input": map[string]any{"pullRequestId": p.nodeID(), "botLogins": []string{LoginCopilot}}})
	if len(r.Errors) != 1 || r.Errors[0]["type"] != "FORBIDDEN" {
		t.Errorf("outsider request: %v", r.Errors)
	}
	status, body := do(t, h, "", "POST", h.GraphQLURL(), map[string]any{"query": "{ viewer { login } }"})
	if status != 401 || !strings.Contains(string(body), `"message":"Bad credentials"`) {
		t.Errorf("no token: %d %s", status, body)
	}
	// Introspection works: gh relies on it on Enterprise hosts.
	r = gql(t, h, tok, `query { __type(name: "PullRequest") { fields(includeDeprecated: true) { name } } }`, nil)
	if !strings.Contains(string(r.Data), `"reviewThreads"`) {
		t.Errorf("introspection: %s %v", r.Data, r.Errors)
	}
}

// prForTest returns the PR's model.
func (h *Hub) prForTest(t *testing.T, owner, name string, n int) *pr {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.repoLocked(owner, name).pr(n)
	if p == nil {
		t.Fatalf("no PR %d", n)
	}
	return p
}

// addThreadsForTest adds k threads with m comments each on main.go line 4;
// cheap enough for pagination tests.
func (h *Hub) addThreadsForTest(t *testing.T, p *pr, k, m int) []string {
	t.Helper()
	var cs []NewComment
	for i := 0; i < k; i++ {
		cs = append(cs, NewComment{Path: "main.go", Line: 4, Body: fmt.Sprintf("thread %d", i)})
	}
	before := len(p.threads)
	if _, err := h.createReview(t.Context(), h.userByLogin(LoginReviewer), p, "COMMENT", "", "", cs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	h.mu.Lock()
	ts := append([]*thread(nil), p.threads[before:]...)
	h.mu.Unlock()
	for _, th := range ts {
		for j := 1; j < m; j++ {
			h.replyToThread(h.userByLogin(LoginAuthor), th, fmt.Sprintf("comment %d", j))
		}
		ids = append(ids, th.nodeID())
	}
	return ids
}
