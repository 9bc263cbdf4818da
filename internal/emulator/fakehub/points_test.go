package fakehub

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v93/github"
)

// TestPR_O1_GraphQLPointsByGitHubsFormula: the emulator charges what
// GitHub's published formula says (1 request per connection per node of
// the connections around it; the sum over 100, rounded, at least 1), in
// rateLimit.cost, in the x-ratelimit-used header and in Counts.
func TestPR_O1_GraphQLPointsByGitHubsFormula(t *testing.T) {
	for _, tt := range []struct {
		name     string
		doc      string
		vars     map[string]any
		requests int
		points   int
	}{
		{"no connection costs 1", `query { viewer { login } }`, nil, 0, 1},
		// GitHub's own example: 1 + 100 + 100×50 requests → 51 points.
		{"the docs' example", `query { viewer { repositories(first: 100) { nodes { issues(first: 50) { nodes { labels(first: 60) { nodes { name } } } } } } } }`, nil, 5101, 51},
		{"variables count", `query Q($n: Int!) { viewer { repositories(first: $n) { nodes { issues(first: $n) { totalCount } } } } }`, map[string]any{"n": float64(100)}, 101, 1},
		{"nested 100×100 via a fragment", `query { viewer { repositories(last: 100) { nodes { ...F } } } } fragment F on Repository { issues(first: 100) { nodes { comments(first: 10) { totalCount } } } }`, nil, 1 + 100 + 100*100, 101},
		{"siblings under one connection: 1 + 50 + 50", `query { viewer { repositories(first: 50) { nodes { issues(first: 1) { totalCount } pullRequests(first: 1) { totalCount } } } } }`, map[string]any{}, 101, 1},
		{"a mutation", `mutation { a: resolveReviewThread(input: {threadId: "x"}) { thread { id } } }`, nil, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := scoreGraphQL(tt.doc, "", tt.vars)
			if sc.Requests != tt.requests || sc.Points != tt.points {
				t.Errorf("score %+v, want %d requests, %d points", sc, tt.requests, tt.points)
			}
		})
	}
	if pointsFor(150) != 2 || pointsFor(149) != 1 || pointsFor(5101) != 51 || pointsFor(0) != 1 {
		t.Errorf("rounding: 150→%d 149→%d 5101→%d 0→%d", pointsFor(150), pointsFor(149), pointsFor(5101), pointsFor(0))
	}

	// Over the wire: the cost GitHub reports, the header and the counts.
	h := newHub(t, Options{HTTP: true})
	seedPR(t, h, RepoOptions{})
	tok := h.Tokens().Author
	const doc = `query { rateLimit { cost remaining used } repository(owner: "acme", name: "widget") { pullRequest(number: 1) { reviewThreads(first: 100) { nodes { comments(first: 100) { nodes { body } } } } commits(last: 100) { nodes { commit { parents(first: 2) { nodes { oid } } } } } } } }`
	before := h.Counts()
	hdr1, r1 := gqlRaw(t, h, tok, doc)
	hdr2, _ := gqlRaw(t, h, tok, `query { viewer { login } }`)
	var d struct {
		RateLimit struct{ Cost, Remaining, Used int } `json:"rateLimit"`
	}
	if err := json.Unmarshal(r1.Data, &d); err != nil {
		t.Fatal(err)
	}
	// 1 + 100 + 1 + 100 = 202 requests: 2 points.
	if d.RateLimit.Cost != 2 {
		t.Errorf("rateLimit.cost = %d, want 2", d.RateLimit.Cost)
	}
	used1, _ := strconv.Atoi(hdr1.Get("X-RateLimit-Used"))
	used2, _ := strconv.Atoi(hdr2.Get("X-RateLimit-Used"))
	if used2-used1 != 1 || d.RateLimit.Used != used1 || d.RateLimit.Remaining != 5000-used1 {
		t.Errorf("used %d then %d, rateLimit %+v", used1, used2, d.RateLimit)
	}
	if got := h.Counts().Sub(before); got.GraphQLQuery != 2 || got.GraphQLPoints != 3 || got.SecondaryPoints != 2 || got.Requests() != 2 {
		t.Errorf("counts %+v, want 2 queries, 3 points, 2 secondary points", got)
	}
	if hdr1.Get("X-RateLimit-Resource") != "graphql" || hdr1.Get("X-RateLimit-Limit") != "5000" || hdr1.Get("X-RateLimit-Reset") == "" {
		t.Errorf("graphql rate headers: %v", hdr1)
	}
}

func gqlRaw(t *testing.T, h *Hub, token, doc string) (http.Header, gqlResp) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": doc})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", h.GraphQLURL(), strings.NewReader(string(body)))
	req.Header.Set("Authorization", "bearer "+token)
	resp, err := h.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r gqlResp
	if err := json.Unmarshal(b, &r); err != nil || len(r.Errors) > 0 {
		t.Fatalf("graphql: %v %s", err, b)
	}
	return resp.Header, r
}

// TestPR_O1_ETagsAnd304sAsGitHub: a GET carries a weak ETag; the same GET
// with If-None-Match (one validator, a list, or the strong spelling) is
// 304 with no body, rate-limit headers and the same remaining count, free
// on the primary limit; any change to the answer changes the ETag. Held
// with go-github and with raw HTTP.
func TestPR_O1_ETagsAnd304sAsGitHub(t *testing.T) {
	h := newHub(t, Options{HTTP: true})
	n := seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h) // else the first read's mergeable: null moves the answer
	tok := h.Tokens().Author
	author := ghClient(t, h, tok)
	ctx := t.Context()
	pull := h.APIURL() + "/repos/acme/widget/pulls/" + strconv.Itoa(n)

	get := func(inm string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", pull, nil)
		req.Header.Set("Authorization", "token "+tok)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := h.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	first, _ := get("")
	etag := first.Header.Get("ETag")
	if first.StatusCode != 200 || !strings.HasPrefix(etag, `W/"`) {
		t.Fatalf("GET: %d, ETag %q: want 200 with a weak ETag", first.StatusCode, etag)
	}
	remaining := first.Header.Get("X-RateLimit-Remaining")
	before := h.Counts()
	for _, inm := range []string{etag, strings.TrimPrefix(etag, "W/"), `W/"nope", ` + etag} {
		resp, body := get(inm)
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and no body", inm, resp.StatusCode, len(body))
		}
		if resp.Header.Get("X-RateLimit-Remaining") != remaining || resp.Header.Get("X-RateLimit-Resource") != "core" || resp.Header.Get("ETag") != etag {
			t.Errorf("304 headers: remaining %q (was %q), resource %q, etag %q", resp.Header.Get("X-RateLimit-Remaining"), remaining, resp.Header.Get("X-RateLimit-Resource"), resp.Header.Get("ETag"))
		}
	}
	if got := h.Counts().Sub(before); got.RESTGet != 3 || got.NotModified != 3 || got.RESTPoints != 0 || got.PrimaryPoints() != 0 {
		t.Errorf("304s counted %+v: want 3 GETs, all 304, 0 points", got)
	}

	// go-github sends the validator it was given and reads the 304.
	req, _ := author.NewRequest(ctx, "GET", "repos/acme/widget/pulls/1", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err := author.Do(req, nil)
	if resp == nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("go-github conditional GET: %v %v", resp, err)
	}

	// A change to the answer changes the ETag: a label, then a reply.
	if _, _, err := author.Issues.AddLabelsToIssue(ctx, "acme", "widget", n, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	after, _ := get(etag)
	if after.StatusCode != 200 || after.Header.Get("ETag") == etag {
		t.Errorf("after a label: %d, ETag %q (was %q): want 200 and a new ETag", after.StatusCode, after.Header.Get("ETag"), etag)
	}
	used := func(r *http.Response) int { n, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Used")); return n }
	again, _ := get("")
	if used(again) != used(after)+1 {
		t.Errorf("a 200 GET costs 1: used %d then %d", used(after), used(again))
	}
}

// TestREL_1_CountsEveryRequestByKind: REST reads and writes, GraphQL
// queries and mutations (each aliased mutation a write), 304s and points,
// in total and per token.
func TestREL_1_CountsEveryRequestByKind(t *testing.T) {
	h := newHub(t, Options{HTTP: true})
	n := seedPR(t, h, RepoOptions{})
	tok := h.Tokens()
	author := ghClient(t, h, tok.Author)
	ctx := t.Context()
	h.ResetRequestCounts()

	if _, _, err := author.PullRequests.Get(ctx, "acme", "widget", n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := author.Issues.AddLabelsToIssue(ctx, "acme", "widget", n, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ghClient(t, h, tok.Reviewer).Issues.CreateComment(ctx, "acme", "widget", n, github.IssueCommentRequest{Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	gql(t, h, tok.Author, `query { viewer { login } }`, nil)
	r := gql(t, h, tok.Author, `mutation { a: resolveReviewThread(input: {threadId: "nope"}) { clientMutationId } b: resolveReviewThread(input: {threadId: "nope2"}) { clientMutationId } }`, nil)
	_ = r // errors per field are fine: the request still ran two mutations
	c := h.Counts()
	want := Counts{RESTGet: 1, RESTWrite: 2, GraphQLQuery: 1, GraphQLMutation: 1, Mutations: 2, RESTPoints: 3, GraphQLPoints: 2, SecondaryPoints: 1 + 5 + 5 + 1 + 5}
	if c != want {
		t.Errorf("counts\n got %+v\nwant %+v", c, want)
	}
	if a := h.CountsFor(LoginAuthor); a.Requests() != 4 || a.Writes() != 2 {
		t.Errorf("author's counts %+v: want 4 requests, 2 writes", a)
	}
	if rv := h.CountsFor(LoginReviewer); rv.RESTWrite != 1 || rv.Requests() != 1 {
		t.Errorf("reviewer's counts %+v", rv)
	}
	if c.Writes() != 3 || c.Requests() != 5 || c.PrimaryPoints() != 5 {
		t.Errorf("writes %d requests %d primary %d", c.Writes(), c.Requests(), c.PrimaryPoints())
	}
}
