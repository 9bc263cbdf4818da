package github_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// emulatorPR starts the emulator with a one-finding Copilot script and
// returns a client acting as the PR author.
func emulatorPR(t *testing.T) (*fakehub.Hub, *ghclient.Client, forge.PRRef) {
	t.Helper()
	hub := hubtest.Start(t, 100*time.Millisecond)
	if err := hub.CreateRepo("acme", "widget", map[string]string{
		"go.mod":  "module example.com/widget\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
	}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "widget", fakehub.NewPR{
		Head: "feature/bye", Title: "Say bye", Body: "Adds a farewell.",
		Files: map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"bye\")\n}\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.SetCopilotScript("acme", "widget", n, fakehub.CopilotScript{Rounds: []fakehub.CopilotRound{{
		Findings: []fakehub.Finding{{Path: "main.go", Anchor: `println("bye")`, Body: "Say goodbye in full.", Suggestion: "\tprintln(\"goodbye\")"}},
	}}}); err != nil {
		t.Fatal(err)
	}
	c := hubtest.Client(t, hub, hub.Tokens().Author)
	ref, err := forge.ParsePRURL(hub.PRURL("acme", "widget", n))
	if err != nil {
		t.Fatal(err)
	}
	return hub, c, ref
}

// TestPR_O1_ObserveIsOneGraphQLRequestAgainstEmulator: the client reads a
// whole PR from the emulator in one GraphQL request and nothing else.
func TestPR_O1_ObserveIsOneGraphQLRequestAgainstEmulator(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	// GitHub computes a new PR's mergeability in the background: read at
	// once, it is UNKNOWN (fakehub's TestREL_4_MergeabilityIsComputedLazily).
	letTimePass(hub)
	hub.ResetRequestCounts()
	pr, err := c.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	counts := hub.RequestCount()
	if counts.GraphQL != 1 || counts.REST != 0 || pr.Requests != 1 {
		t.Fatalf("observe cost graphql=%d rest=%d (client says %d); want exactly one GraphQL request", counts.GraphQL, counts.REST, pr.Requests)
	}
	st, _ := hub.PR("acme", "widget", ref.Number)
	if pr.State != forge.StateOpen || pr.HeadSHA != st.HeadSHA || pr.HeadRef != "feature/bye" || pr.BaseRef != "main" || pr.Author != "octo-author" {
		t.Fatalf("observation does not match the emulator: %+v vs %+v", pr, st)
	}
	if pr.MergeState != forge.MergeClean || len(pr.Commits) != 1 || pr.Commits[0].SHA != st.HeadSHA {
		t.Fatalf("merge state / commits: %s %+v", pr.MergeState, pr.Commits)
	}
}

// TestPR_O2_RequestCopilotThroughClient: requesting Copilot through the
// client yields copilot_work_started, a review by the bot and threads, with
// the right login on each surface; reply, resolve, unresolve, labels,
// statuses and permissions round-trip through the emulator.
func TestPR_O2_RequestCopilotThroughClient(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	events, cancel := hub.Subscribe()
	defer cancel()

	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.IssueEvents(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviews(ctx, pr, nil, []string{"copilot-pull-request-reviewer"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case e := <-events:
			done = e.Kind == "copilot_finished"
		case <-deadline:
			t.Fatal("copilot never finished its review")
		}
	}

	after, err := c.IssueEvents(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var started *forge.Event
	for i := range after {
		if after[i].Event == "copilot_work_started" {
			started = &after[i]
		}
	}
	if started == nil || started.Actor != "Copilot" || (len(before) > 0 && started.ID <= before[len(before)-1].ID) {
		t.Fatalf("want a new copilot_work_started by Copilot, got %+v (before %+v)", after, before)
	}

	pr, err = c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Reviews) != 1 || pr.Reviews[0].Author != "copilot-pull-request-reviewer" || pr.Reviews[0].CommitSHA != pr.HeadSHA || pr.Reviews[0].State != forge.ReviewCommented {
		t.Fatalf("GraphQL review: %+v", pr.Reviews)
	}
	if len(pr.Threads) != 1 || len(pr.Threads[0].Comments) != 1 || pr.Threads[0].Comments[0].Author != "copilot-pull-request-reviewer" || pr.Threads[0].Path != "main.go" || pr.Threads[0].Line != 5 {
		t.Fatalf("GraphQL thread: %+v", pr.Threads)
	}
	if !strings.Contains(pr.Threads[0].Comments[0].Body, "```suggestion") {
		t.Errorf("finding lacks its suggestion block: %q", pr.Threads[0].Comments[0].Body)
	}

	// The REST surfaces, read with go-github as any other client would.
	rest, err := gh.NewClient(gh.WithHTTPClient(hub.HTTPClient()), gh.WithAuthToken(hub.Tokens().Reviewer), gh.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	reviews, _, err := rest.PullRequests.ListReviews(ctx, "acme", "widget", ref.Number, nil)
	if err != nil || len(reviews) != 1 || reviews[0].GetUser().GetLogin() != "copilot-pull-request-reviewer[bot]" {
		t.Fatalf("REST review author: %v %v", reviews, err)
	}
	comments, _, err := rest.PullRequests.ListComments(ctx, "acme", "widget", ref.Number, nil)
	if err != nil || len(comments) != 1 || comments[0].GetUser().GetLogin() != "Copilot" {
		t.Fatalf("REST inline comment author: %v %v", comments, err)
	}

	th := pr.Threads[0].ID
	reply, err := c.ReplyToThread(ctx, ref, th, "Fixed, thanks.")
	if err != nil || reply.Author != "octo-author" {
		t.Fatalf("reply: %+v %v", reply, err)
	}
	if err := c.ResolveThread(ctx, ref, th); err != nil {
		t.Fatal(err)
	}
	pr, _ = c.Observe(ctx, ref)
	if !pr.Threads[0].IsResolved || len(pr.Threads[0].Comments) != 2 {
		t.Fatalf("after reply+resolve: %+v", pr.Threads[0])
	}
	if err := c.UnresolveThread(ctx, ref, th); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLabels(ctx, ref, "converge:needs-attention"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetCommitStatus(ctx, ref, pr.HeadSHA, forge.CommitStatus{State: forge.StatusPending, Context: "converge", Description: "running"}); err != nil {
		t.Fatal(err)
	}
	pr, _ = c.Observe(ctx, ref)
	if pr.Threads[0].IsResolved || len(pr.Labels) != 1 || pr.Labels[0] != "converge:needs-attention" {
		t.Fatalf("after unresolve+label: resolved=%v labels=%v", pr.Threads[0].IsResolved, pr.Labels)
	}
	found := false
	for _, cc := range pr.Checks.Contexts {
		found = found || (cc.IsStatus && cc.Name == "converge")
	}
	if !found {
		t.Errorf("commit status converge not in the rollup: %+v", pr.Checks)
	}
	if err := c.RemoveLabel(ctx, ref, "converge:needs-attention"); err != nil {
		t.Fatal(err)
	}

	for login, want := range map[string]forge.Permission{"octo-reviewer": "write", "outsider": "read", "nobody-here": "none"} {
		if got, err := c.Permission(ctx, ref, login); err != nil || got != want {
			t.Errorf("Permission(%s) = %q, %v; want %q", login, got, err, want)
		}
	}
	if v, err := c.Viewer(ctx); err != nil || v != "octo-author" {
		t.Errorf("Viewer = %q, %v", v, err)
	}

	// An unchanged event list costs a 304 (PR-O1).
	if _, err := c.IssueEvents(ctx, ref); err != nil {
		t.Fatal(err)
	}
	hub.ResetRequestCounts()
	if _, err := c.IssueEvents(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if n := hub.RequestCount().NotModified; n != 1 {
		t.Errorf("unchanged issue events: %d answered 304, want 1", n)
	}
}

// TestIF1_EmulatorRejectsBadToken: a wrong token is an auth error (exit 6).
func TestIF1_EmulatorRejectsBadToken(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	c, err := ghclient.New(ghclient.Options{APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), Token: "ghp_wrong", CAFile: hub.CAFile()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Observe(context.Background(), ref)
	if forge.KindOf(err) != forge.KindAuth {
		t.Fatalf("want an auth error, got %v", err)
	}
	if strings.Contains(err.Error(), "ghp_wrong") {
		t.Errorf("error leaks the token: %v", err)
	}
}

// waitCopilot waits for Copilot to finish a review on the hub.
// reviewedByCopilot requests Copilot's review of ref and waits for it.
func reviewedByCopilot(t *testing.T, hub *fakehub.Hub, c *ghclient.Client, ref forge.PRRef) {
	t.Helper()
	ctx := context.Background()
	events, cancel := hub.Subscribe()
	defer cancel()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviews(ctx, pr, nil, []string{"copilot-pull-request-reviewer"}); err != nil {
		t.Fatal(err)
	}
	waitCopilot(t, events)
}

func waitCopilot(t *testing.T, events <-chan fakehub.Event) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind == "copilot_finished" {
				return
			}
		case <-deadline:
			t.Fatal("copilot never finished its review")
		}
	}
}

// TestPR_O2_ObserveReadsCountsLinksAndConversation: one observation
// carries each review's own comment count, each comment's review and
// original commit, the top-level conversation, the clone URL the API
// reports and whether the commit list is whole — still in one request.
func TestPR_O2_ObserveReadsCountsLinksAndConversation(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	reviewedByCopilot(t, hub, c, ref)
	rev := hubtest.Client(t, hub, hub.Tokens().Reviewer)
	if _, err := rev.CreateIssueComment(ctx, ref, "Please also update the changelog."); err != nil {
		t.Fatal(err)
	}

	hub.ResetRequestCounts()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := hub.RequestCount().Total(); n != 1 {
		t.Errorf("observation cost %d requests, want 1", n)
	}
	if len(pr.Reviews) != 1 || pr.Reviews[0].CommentCount != 1 {
		t.Fatalf("reviews: %+v", pr.Reviews)
	}
	if len(pr.Threads) != 1 {
		t.Fatalf("threads: %+v", pr.Threads)
	}
	cm := pr.Threads[0].Comments[0]
	if cm.ReviewID != pr.Reviews[0].ID || cm.OriginalCommit != pr.HeadSHA {
		t.Errorf("comment links: review %q (want %q), original commit %q (want %q)", cm.ReviewID, pr.Reviews[0].ID, cm.OriginalCommit, pr.HeadSHA)
	}
	if len(pr.IssueComments) != 1 || pr.IssueComments[0].Author != "octo-reviewer" ||
		pr.IssueComments[0].Body != "Please also update the changelog." || pr.IssueComments[0].ID == 0 || pr.IssueComments[0].NodeID == "" {
		t.Errorf("issue comments: %+v", pr.IssueComments)
	}
	if want := hub.GitURL("acme", "widget"); pr.CloneURL != want {
		t.Errorf("clone URL %q, want the emulator's git URL %q", pr.CloneURL, want)
	}
	if !pr.CommitsComplete || len(pr.Commits) != 1 {
		t.Errorf("commits complete=%v (%d commits), want the whole list", pr.CommitsComplete, len(pr.Commits))
	}
}

// TestPR_O2_LagFaultSeenThroughTheClient: under the lag fault the client
// sees a review whose body states a count while its own count is 0 and its
// thread is absent, and sees them settle on read K+1.
func TestPR_O2_LagFaultSeenThroughTheClient(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	hub.SetReviewLag(2)
	reviewedByCopilot(t, hub, c, ref)
	for read := 1; read <= 3; read++ {
		pr, err := c.Observe(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.Reviews) != 1 || !strings.Contains(pr.Reviews[0].Body, "generated 1 comment.") {
			t.Fatalf("read %d: the review itself must be visible: %+v", read, pr.Reviews)
		}
		settled := pr.Reviews[0].CommentCount == 1 && len(pr.Threads) == 1 && pr.Threads[0].Comments[0].ReviewID == pr.Reviews[0].ID
		lagging := pr.Reviews[0].CommentCount == 0 && len(pr.Threads) == 0
		if (read <= 2 && !lagging) || (read == 3 && !settled) {
			t.Errorf("read %d: count %d, %d threads", read, pr.Reviews[0].CommentCount, len(pr.Threads))
		}
	}
}

// TestPR_M3_RefusalTellsFromTransientAgainstEmulator: a repository without
// Copilot refuses the bot (KindInvalid, ErrReviewerUnavailable); a 502 or
// GitHub's "something went wrong" on the request is unreachable, starts
// nothing, and a retry then starts Copilot.
func TestPR_M3_RefusalTellsFromTransientAgainstEmulator(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	bot := []string{"copilot-pull-request-reviewer"}

	if err := hub.SetCopilotAvailable("acme", "widget", false); err != nil {
		t.Fatal(err)
	}
	err = c.RequestReviews(ctx, pr, nil, bot)
	if forge.KindOf(err) != forge.KindInvalid || !errors.Is(err, ghclient.ErrReviewerUnavailable) {
		t.Fatalf("without Copilot: %v (kind %v), want a refusal", err, forge.KindOf(err))
	}
	if err := hub.SetCopilotAvailable("acme", "widget", true); err != nil {
		t.Fatal(err)
	}

	for _, status := range []int{502, 200} {
		hub.InjectGraphQLFault("requestReviewsByLogin", status, 1)
		if _, err := c.Observe(ctx, ref); err != nil {
			t.Fatalf("a fault aimed at the mutation hit a query: %v", err)
		}
		err = c.RequestReviews(ctx, pr, nil, bot)
		if k := forge.KindOf(err); k != forge.KindUnreachable || errors.Is(err, ghclient.ErrReviewerUnavailable) {
			t.Fatalf("status %d: %v (kind %v), want unreachable and no refusal", status, err, k)
		}
	}
	evs, err := c.IssueEvents(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Event == "copilot_work_started" {
			t.Fatalf("a failed request started Copilot: %+v", evs)
		}
	}
	if err := c.RequestReviews(ctx, pr, nil, bot); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if st, _ := hub.PR("acme", "widget", ref.Number); len(st.Requested) != 1 {
		t.Errorf("after the retry Copilot is not requested: %v", st.Requested)
	}

	// A repository created without Copilot refuses it from the start.
	if err := hub.CreateRepo("acme", "plain", nil, fakehub.RepoOptions{NoCopilot: true}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "plain", fakehub.NewPR{Head: "f", Title: "t", Files: map[string]string{"a.txt": "a\n"}})
	if err != nil {
		t.Fatal(err)
	}
	pref, _ := forge.ParsePRURL(hub.PRURL("acme", "plain", n))
	ppr, err := c.Observe(ctx, pref)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviews(ctx, ppr, nil, bot); !errors.Is(err, ghclient.ErrReviewerUnavailable) {
		t.Errorf("NoCopilot repository: %v, want a refusal", err)
	}
}

// letTimePass moves the hub's clock on, as the seconds between an idle
// PR's polls do: an ETag the probe takes after it is dated well past the
// PR's last change, so it may stand for the PR
// (TestPR_O1_AnETagWithinASecondOfAChangeIsNotKept).
func letTimePass(hub *fakehub.Hub) { hub.AdvanceClock(3 * time.Second) }

// ciSucceeds sets a success status on the PR's head, as CI would.
func ciSucceeds(t *testing.T, hub *fakehub.Hub, ref forge.PRRef) {
	t.Helper()
	st, _ := hub.PR("acme", "widget", ref.Number)
	ci := hubtest.Client(t, hub, hub.Tokens().CI)
	if err := ci.SetCommitStatus(context.Background(), ref, st.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: "ci/test"}); err != nil {
		t.Fatal(err)
	}
}
