package fakehub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	ghgraphql "github.com/convergeloop/converge/internal/forge/github/graphql"
)

// observed is what the client's observe document shows of reviews and
// threads, decoded loosely.
type observed struct {
	Repository struct {
		PullRequest struct {
			Reviews struct {
				Nodes []struct {
					ID       string
					Author   struct{ Login string }
					Body     string
					Comments struct{ TotalCount int }
				}
			}
			ReviewThreads struct {
				Nodes []struct {
					ID       string
					Comments struct {
						Nodes []struct {
							PullRequestReview *struct{ ID string }
						}
					}
				}
			}
		}
	}
}

// observeRaw posts the client's observe document; it returns errors rather
// than failing, so goroutines can call it.
func observeRaw(ctx context.Context, h *Hub, token string, n int) (observed, error) {
	var o observed
	b, _ := json.Marshal(map[string]any{"query": ghgraphql.Doc("observe"), "variables": map[string]any{"owner": "acme", "name": "widget", "number": n}})
	req, err := http.NewRequestWithContext(ctx, "POST", h.GraphQLURL(), bytes.NewReader(b))
	if err != nil {
		return o, err
	}
	req.Header.Set("Authorization", "bearer "+token)
	resp, err := h.HTTPClient().Do(req)
	if err != nil {
		return o, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return o, err
	}
	var r struct {
		Data   observed
		Errors []any
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Errors) > 0 {
		return o, fmt.Errorf("observe: %v %v: %s", err, r.Errors, body)
	}
	return r.Data, nil
}

var generatedRE = regexp.MustCompile(`generated (no new|\d+) comments?\.`)

// statedCount reads the count a Copilot overview states; -1 when none.
func statedCount(body string) int {
	m := generatedRE.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	if m[1] == "no new" {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// threadsOf counts the visible threads the review opened.
func (o observed) threadsOf(reviewID string) int {
	k := 0
	for _, t := range o.Repository.PullRequest.ReviewThreads.Nodes {
		if cs := t.Comments.Nodes; len(cs) > 0 && cs[0].PullRequestReview != nil && cs[0].PullRequestReview.ID == reviewID {
			k++
		}
	}
	return k
}

// TestPR_O2_ObservationIsOneSnapshot hammers the observation while Copilot
// reviews with 0 to 3 comments land: no observation may show a review
// whose own comment count or visible threads disagree with its body.
func TestPR_O2_ObservationIsOneSnapshot(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{CopilotDelay: time.Millisecond})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	anchors := []string{`println("hello, world")`, `println("bye")`, "func main"}
	var rounds []CopilotRound
	for i := range 40 {
		var fs []Finding
		for j := range i % 4 {
			fs = append(fs, Finding{Path: "main.go", Anchor: anchors[j], Body: fmt.Sprintf("finding %d.%d", i, j)})
		}
		rounds = append(rounds, CopilotRound{Findings: fs})
	}
	if err := h.SetCopilotScript("acme", "widget", n, CopilotScript{Rounds: rounds}); err != nil {
		t.Fatal(err)
	}
	events, cancel := h.Subscribe()
	defer cancel()

	ctx, stop := context.WithCancel(t.Context())
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		problems   []string
		reads      int
		checked    int
		withThread int
	)
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				o, err := observeRaw(ctx, h, h.Tokens().Author, n)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						problems = append(problems, err.Error())
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				reads++
				for _, rv := range o.Repository.PullRequest.Reviews.Nodes {
					if rv.Author.Login != LoginCopilot {
						continue
					}
					checked++
					stated, own, seen := statedCount(rv.Body), rv.Comments.TotalCount, o.threadsOf(rv.ID)
					if seen > 0 {
						withThread++
					}
					if stated != own || own != seen {
						problems = append(problems, fmt.Sprintf("review %s: body says %d, own count %d, %d threads visible", rv.ID, stated, own, seen))
					}
				}
				mu.Unlock()
			}
		})
	}
	for range rounds {
		requestCopilot(t, h, p)
		waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
	}
	stop()
	wg.Wait()
	for _, pr := range problems {
		t.Error(pr)
	}
	if reads < len(rounds) || withThread == 0 {
		t.Errorf("the hammer read too little to prove anything: %d reads, %d reviews checked, %d with threads", reads, checked, withThread)
	}
}

// TestPR_O2_LagFaultHidesCommentsForKReads: with a fixed K the review is
// visible at once with its body, its threads absent and its count 0 for K
// reads of the PR, and everything settles on read K+1. A request that does
// not touch the PR is no read of it; REST lags the same comments, without
// advancing the clock, and the PR's ETag moves when they show, as
// GitHub's does when a review comment lands.
func TestPR_O2_LagFaultHidesCommentsForKReads(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h) // only the lagged comments may move the ETag
	const k = 3
	h.SetReviewLag(k)
	tok := h.Tokens()
	rev := ghClient(t, h, tok.Reviewer)
	if _, _, err := rev.PullRequests.CreateReview(t.Context(), "acme", "widget", n, reviewRequest("Two points.", "main.go", 4, 5)); err != nil {
		t.Fatal(err)
	}
	restSees := func(when string, want int) string {
		t.Helper()
		cs, _, err := rev.PullRequests.ListComments(t.Context(), "acme", "widget", n, nil)
		if err != nil || len(cs) != want {
			t.Errorf("%s: REST lists %d comments (%v), want %d", when, len(cs), err, want)
		}
		p, resp, err := rev.PullRequests.Get(t.Context(), "acme", "widget", n)
		if err != nil || p.GetReviewComments() != want {
			t.Fatalf("%s: REST counts %d review comments (%v), want %d", when, p.GetReviewComments(), err, want)
		}
		return resp.Header.Get("ETag")
	}
	lagged := restSees("lagging, before any read", 0)
	gql(t, h, tok.Author, `query { viewer { login } }`, nil)
	for read := 1; read <= k+1; read++ {
		o, err := observeRaw(t.Context(), h, tok.Author, n)
		if err != nil {
			t.Fatal(err)
		}
		pr := o.Repository.PullRequest
		if len(pr.Reviews.Nodes) != 1 || pr.Reviews.Nodes[0].Body != "Two points." {
			t.Fatalf("read %d: the review must be visible at once: %+v", read, pr.Reviews.Nodes)
		}
		own, threads := pr.Reviews.Nodes[0].Comments.TotalCount, len(pr.ReviewThreads.Nodes)
		want := 0
		if read > k {
			want = 2
		}
		if own != want || threads != want {
			t.Errorf("read %d: own count %d, %d threads; want %d", read, own, threads, want)
		}
		if read == k {
			if tag := restSees("lagging, at read K", 0); tag != lagged {
				t.Errorf("the PR's ETag moved while nothing showed: %s → %s", lagged, tag)
			}
		}
	}
	if tag := restSees("settled", 2); tag == lagged {
		t.Errorf("the PR's ETag %s did not move when the lagged comments showed", tag)
	}

	// Touching the PR twice in one request is one read.
	h.SetReviewLag(2)
	if _, _, err := rev.PullRequests.CreateReview(t.Context(), "acme", "widget", n, reviewRequest("One more.", "main.go", 4)); err != nil {
		t.Fatal(err)
	}
	twice := `query { repository(owner: "acme", name: "widget") { a: pullRequest(number: 1) { reviewThreads(first: 100) { totalCount } } b: pullRequest(number: 1) { reviewThreads(first: 100) { totalCount } } } }`
	for read, want := range []string{`{"a":{"reviewThreads":{"totalCount":2}},"b":{"reviewThreads":{"totalCount":2}}}`, `{"a":{"reviewThreads":{"totalCount":2}},"b":{"reviewThreads":{"totalCount":2}}}`, `{"a":{"reviewThreads":{"totalCount":3}},"b":{"reviewThreads":{"totalCount":3}}}`} {
		r := gql(t, h, tok.Author, twice, nil)
		if got := string(r.Data); got != `{"repository":`+want+`}` {
			t.Errorf("read %d: %s", read+1, got)
		}
	}
}

// reviewRequest is a COMMENT review with one comment per line.
func reviewRequest(body, path string, lines ...int) *github.PullRequestReviewRequest {
	rq := &github.PullRequestReviewRequest{Event: new("COMMENT"), Body: new(body)}
	for _, l := range lines {
		rq.Comments = append(rq.Comments, &github.DraftReviewComment{Path: new(path), Line: new(l), Body: new(fmt.Sprintf("line %d", l))})
	}
	return rq
}

// lagTrace creates reviews one at a time on a fresh hub with a seeded lag
// (from Options, or set on the running hub) and reads each until its
// thread shows, noting how many reads it lagged and whether its own count
// lagged with it.
func lagTrace(t *testing.T, seed int64, reviews int, setLater bool) []string {
	t.Helper()
	opts := Options{ReviewLag: ReviewLag{MaxReads: 4, Seed: seed}}
	if setLater {
		opts = Options{}
	}
	h := newHub(t, opts)
	n := seedPR(t, h, RepoOptions{})
	if setLater {
		h.SetReviewLagSeeded(seed, 4)
	}
	rev := ghClient(t, h, h.Tokens().Reviewer)
	var trace []string
	for i := range reviews {
		if _, _, err := rev.PullRequests.CreateReview(t.Context(), "acme", "widget", n, reviewRequest(fmt.Sprintf("review %d", i), "main.go", 4)); err != nil {
			t.Fatal(err)
		}
		for read := 1; ; read++ {
			o, err := observeRaw(t.Context(), h, h.Tokens().Author, n)
			if err != nil {
				t.Fatal(err)
			}
			rvs := o.Repository.PullRequest.Reviews.Nodes
			last := rvs[len(rvs)-1]
			if o.threadsOf(last.ID) == 1 {
				if last.Comments.TotalCount != 1 {
					t.Fatalf("review %d: thread visible but own count %d", i, last.Comments.TotalCount)
				}
				trace = append(trace, fmt.Sprintf("K=%d", read-1))
				break
			}
			if read == 1 {
				trace = append(trace, fmt.Sprintf("count=%d", last.Comments.TotalCount))
			}
			if read > 5 {
				t.Fatalf("review %d still lagging after %d reads with MaxReads 4", i, read)
			}
		}
	}
	return trace
}

// TestPR_O2_SeededLagFaultIsDeterministic: the same seed replays the same
// lags (K and whether the count lags), another seed differs.
func TestPR_O2_SeededLagFaultIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b, c := lagTrace(t, 42, 6, false), lagTrace(t, 42, 6, true), lagTrace(t, 7, 6, false)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("seed 42 gave %v then %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 42 and 7 gave the same lags %v", a)
	}
	t.Logf("seed 42: %v; seed 7: %v", a, c)
}

// TestInjectGraphQLFaultTargetsOneField: a fault aimed at one mutation
// leaves queries alone, hits that mutation count times, then passes.
func TestInjectGraphQLFaultTargetsOneField(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{CopilotDelay: time.Hour})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	tok := h.Tokens().Author
	h.InjectGraphQLFault("requestReviewsByLogin", http.StatusBadGateway, 2)
	if _, err := observeRaw(t.Context(), h, tok, n); err != nil {
		t.Fatalf("query hit by a mutation fault: %v", err)
	}
	vars := map[string]any{"input": map[string]any{"pullRequestId": p.nodeID(), "botLogins": []string{LoginCopilot}, "union": true}}
	for i := range 2 {
		status, body := do(t, h, tok, "POST", h.GraphQLURL(), map[string]any{"query": ghgraphql.Doc("request_reviews"), "variables": vars})
		if status != http.StatusBadGateway {
			t.Errorf("attempt %d: status %d %s", i+1, status, body)
		}
	}
	requestCopilot(t, h, p)
	h.InjectGraphQLFault("RequestReviewsByLogin", http.StatusOK, 1)
	r := gql(t, h, tok, ghgraphql.Doc("request_reviews"), vars)
	if len(r.Errors) != 1 || r.Errors[0]["type"] != nil || string(r.Data) != "null" {
		t.Errorf("status 200 fault: %v %s", r.Errors, r.Data)
	}
}

func TestGraphQLDocumentScan(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]bool{
		ghgraphql.Doc("observe"):                                    false,
		ghgraphql.Doc("request_reviews"):                            true,
		ghgraphql.Doc("resolve"):                                    true,
		`{ viewer { login } }`:                                      false,
		"# mutation in a comment\nquery { viewer { login } }":       false,
		`query { repository(name: "mutation", owner: "x") { id } }`: false,
		`query Q { viewer { login } } mutation M { resolveReviewThread(input: {threadId: "x"}) { clientMutationId } }`: true,
		`query { node(id: """a "mutation" block""") { id } }`:                                                          false,
	} {
		if got := isMutation(doc); got != want {
			t.Errorf("isMutation(%.60q) = %v, want %v", doc, got, want)
		}
	}
	for _, c := range []struct {
		doc, field string
		want       bool
	}{
		{ghgraphql.Doc("request_reviews"), "requestReviewsByLogin", true},
		{ghgraphql.Doc("observe"), "requestReviewsByLogin", false},
		{ghgraphql.Doc("observe"), "reviewThreads", true},
		{`query($reviewThreads: Int) { x }`, "reviewThreads", false},
		{`query { a(reviewThreads: 1) { b } }`, "reviewThreads", false},
		{`query { reviewThreadsX { b } }`, "reviewThreads", false},
	} {
		if got := selectsField(c.doc, c.field); got != c.want {
			t.Errorf("selectsField(%.40q, %s) = %v, want %v", c.doc, c.field, got, c.want)
		}
	}
}
