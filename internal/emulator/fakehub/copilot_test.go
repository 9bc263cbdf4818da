package fakehub

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	ghgraphql "github.com/convergeloop/converge/internal/forge/github/graphql"
)

// requestCopilot sends the client's own request_reviews document raw.
func requestCopilot(t *testing.T, h *Hub, p *pr) {
	t.Helper()
	r := gql(t, h, h.Tokens().Author, ghgraphql.Doc("request_reviews"), map[string]any{"input": map[string]any{
		"pullRequestId": p.nodeID(), "botLogins": []string{LoginCopilot}, "union": true}})
	if len(r.Errors) > 0 {
		t.Fatalf("request copilot: %v", r.Errors)
	}
}

func TestPR_O2_CopilotLoginsPerSurface(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{CopilotDelay: 300 * time.Millisecond})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	if err := h.SetCopilotScript("acme", "widget", n, CopilotScript{Rounds: []CopilotRound{
		{Findings: []Finding{
			{Path: "main.go", Anchor: `println("bye")`, Body: "Say goodbye properly.", Suggestion: "\tprintln(\"goodbye\")"},
			{Path: "main.go", Anchor: "not in the file", Body: "fixed already"},
		}},
		{Error: true},
	}}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	gh := ghClient(t, h, h.Tokens().Author)
	events, cancel := h.Subscribe()
	defer cancel()

	// REST cannot request Copilot: 201, but nothing is requested (PR-O5).
	_, resp, err := gh.PullRequests.RequestReviewers(ctx, "acme", "widget", n, github.ReviewersRequest{Reviewers: []string{"Copilot"}})
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("REST request: %v", err)
	}
	if st, _ := h.PR("acme", "widget", n); len(st.Requested) != 0 {
		t.Fatalf("REST request for Copilot must be dropped, got %v", st.Requested)
	}

	requestCopilot(t, h, p)
	req, _, err := gh.PullRequests.Get(ctx, "acme", "widget", n)
	if err != nil || len(req.RequestedReviewers) != 1 || req.RequestedReviewers[0].GetLogin() != LoginCopilotShort {
		t.Errorf("requested reviewers on REST: %v %v", req.RequestedReviewers, err)
	}
	evs, _, err := gh.Issues.ListIssueEvents(ctx, "acme", "widget", n, nil)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].GetEvent() != "copilot_work_started" || evs[len(evs)-1].GetActor().GetLogin() != LoginCopilotShort {
		t.Fatalf("copilot_work_started: %v %v", evs, err)
	}
	startedID := evs[len(evs)-1].GetID()
	waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })

	r := gql(t, h, h.Tokens().Author, ghgraphql.Doc("observe"), map[string]any{"owner": "acme", "name": "widget", "number": n})
	var got struct {
		Repository struct {
			PullRequest struct {
				ReviewRequests struct{ Nodes []any }
				Reviews        struct {
					Nodes []struct {
						Author struct{ Login string }
						State  string
						Body   string
						Commit struct{ Oid string }
					}
				}
				ReviewThreads struct {
					Nodes []struct {
						Line     int
						Comments struct {
							Nodes []struct {
								Author struct{ Login string }
								Body   string
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	pr := got.Repository.PullRequest
	if len(pr.Reviews.Nodes) != 1 {
		t.Fatalf("reviews: %+v", pr.Reviews)
	}
	rv := pr.Reviews.Nodes[0]
	if rv.Author.Login != LoginCopilot || rv.State != "COMMENTED" || rv.Commit.Oid != p.headSHA || !strings.Contains(rv.Body, "generated 1 comment.") {
		t.Errorf("GraphQL review: %+v", rv)
	}
	if len(pr.ReviewRequests.Nodes) != 0 {
		t.Errorf("Copilot still requested after its review: %v", pr.ReviewRequests.Nodes)
	}
	if len(pr.ReviewThreads.Nodes) != 1 || pr.ReviewThreads.Nodes[0].Line != 5 ||
		pr.ReviewThreads.Nodes[0].Comments.Nodes[0].Author.Login != LoginCopilot ||
		!strings.Contains(pr.ReviewThreads.Nodes[0].Comments.Nodes[0].Body, "```suggestion\n\tprintln(\"goodbye\")\n```") {
		t.Errorf("GraphQL threads: %+v", pr.ReviewThreads)
	}
	rvs, _, err := gh.PullRequests.ListReviews(ctx, "acme", "widget", n, nil)
	if err != nil || len(rvs) != 1 || rvs[0].GetUser().GetLogin() != LoginCopilotREST || rvs[0].GetUser().GetType() != "Bot" {
		t.Errorf("REST review author: %v %v", rvs, err)
	}
	cs, _, err := gh.PullRequests.ListComments(ctx, "acme", "widget", n, nil)
	if err != nil || len(cs) != 1 || cs[0].GetUser().GetLogin() != LoginCopilotShort {
		t.Errorf("REST inline comment author: %v %v", cs, err)
	}
	evs, _, _ = gh.Issues.ListIssueEvents(ctx, "acme", "widget", n, nil)
	last := evs[len(evs)-1]
	if last.GetEvent() != "copilot_work_finished" || last.GetActor().GetLogin() != LoginCopilotShort || last.GetID() <= startedID {
		t.Errorf("copilot_work_finished: %v", last)
	}

	// Round two is scripted as Copilot's error review (PR-O3).
	requestCopilot(t, h, p)
	waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
	rvs, _, _ = gh.PullRequests.ListReviews(ctx, "acme", "widget", n, nil)
	if len(rvs) != 2 || rvs[1].GetBody() != CopilotErrorBody {
		t.Errorf("error round: %v", rvs)
	}
	// Past the script Copilot finds nothing new.
	requestCopilot(t, h, p)
	waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
	rvs, _, _ = gh.PullRequests.ListReviews(ctx, "acme", "widget", n, nil)
	if len(rvs) != 3 || !strings.Contains(rvs[2].GetBody(), "Copilot reviewed 1 out of 1 changed files in this pull request and generated no new comments.") {
		t.Errorf("clean round: %v", rvs)
	}
}

// TestPR_O3_CopilotScriptBodiesDelaysAndNoStart: a round can dictate the
// review's exact body (also empty, also at odds with its findings), its
// own delay, or accept the request and never start.
func TestPR_O3_CopilotScriptBodiesDelaysAndNoStart(t *testing.T) {
	t.Parallel()
	// Only a round's own delay can make a review land in this test.
	h := newHub(t, Options{CopilotDelay: time.Hour})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	fast := 10 * time.Millisecond
	bye := Finding{Path: "main.go", Anchor: `println("bye")`, Body: "Say goodbye."}
	if err := h.SetCopilotScript("acme", "widget", n, CopilotScript{Rounds: []CopilotRound{
		{Body: Text(CopilotNoFilesBody), Delay: fast},
		{Body: Text(""), Findings: []Finding{bye}, Delay: fast},
		{NoStart: true},
		{Body: Text(CopilotQuotaBody), Delay: fast},
		{Error: true, Delay: -1},
		{Body: Text(CopilotUnavailableBody), Delay: fast},
	}}); err != nil {
		t.Fatal(err)
	}
	gh := ghClient(t, h, h.Tokens().Author)
	events, cancel := h.Subscribe()
	defer cancel()
	started := func() int {
		evs, _, err := gh.Issues.ListIssueEvents(t.Context(), "acme", "widget", n, &github.ListOptions{PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, e := range evs {
			if e.GetEvent() == "copilot_work_started" {
				k++
			}
		}
		return k
	}
	review := func() {
		t.Helper()
		requestCopilot(t, h, p)
		waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
	}

	review()
	review()
	requestCopilot(t, h, p) // NoStart
	time.Sleep(5 * fast)
	st, _ := h.PR("acme", "widget", n)
	if st.Reviews != 2 || len(st.Requested) != 1 || st.Requested[0] != LoginCopilot || started() != 2 {
		t.Fatalf("a round that never starts: %d reviews, requested %v, %d starts", st.Reviews, st.Requested, started())
	}
	review()
	review()
	review()

	st, _ = h.PR("acme", "widget", n)
	var bodies []string
	for _, rv := range st.ReviewList {
		bodies = append(bodies, rv.Body)
	}
	want := []string{CopilotNoFilesBody, "", CopilotQuotaBody, CopilotErrorBody, CopilotUnavailableBody}
	if strings.Join(bodies, "|") != strings.Join(want, "|") {
		t.Errorf("bodies %q, want %q", bodies, want)
	}
	if st.ReviewList[1].Comments != 1 || st.Threads != 1 || st.ThreadList[0].ReviewID != st.ReviewList[1].ID {
		t.Errorf("the empty-bodied review must still carry its finding: %+v %+v", st.ReviewList[1], st.ThreadList)
	}
	if started() != 5 || st.CopilotRounds != 6 || len(st.Requested) != 0 {
		t.Errorf("%d starts, %d rounds played, requested %v", started(), st.CopilotRounds, st.Requested)
	}
}
