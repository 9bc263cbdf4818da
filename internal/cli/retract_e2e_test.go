package cli

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_T14_ServeRetractsAVerdictWhoseFactsChanged: three PRs end
// two-stable under `converge serve`; then other actors change a fact of
// each verdict — CI reports red on the proven head of the first, a
// trusted reviewer requests changes on the second, someone pushes to the
// third the moment it is ready — and each verdict is withdrawn at the
// forge: the ready label off, converge's verdict on the head no longer
// success, one comment by converge saying what broke. Polls are ten
// minutes apart: the retractions came from the events.
func TestPR_T14_ServeRetractsAVerdictWhoseFactsChanged(t *testing.T) {
	t.Parallel() // its own emulator, state and port
	if testing.Short() {
		t.Skip("runs PR loops end to end")
	}
	hub := hubtest.Start(t, 100*time.Millisecond)
	numbers, urls := hubtest.DemoPRs(t, hub, 3)
	const secret = "retract-test-secret"
	env := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author, "CONVERGE_WEBHOOK_SECRET": secret}
	addr := freeAddr(t)
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: "http://" + addr + "/webhook", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	sp := startServe(t, env, append([]string{"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", t.TempDir(),
		"--poll-min", "10m", "--poll-max", "10m", "--listen", addr}, urls...)...)

	// The third PR: a push as soon as the label is on, while its run may
	// still be finishing.
	pushed := ""
	waitFor(t, hub, sp, 8*time.Minute, "PR "+fmt.Sprint(numbers[2])+" ready", func() bool {
		return converged(t, hub, numbers[2:]) == 1
	})
	st := prState(t, hub, numbers[2])
	head, err := hub.PushFiles(fakehub.DemoOwner, fakehub.DemoRepo, st.HeadRef, map[string]string{"NOTES.md": "pushed as the verdict landed\n"}, "Add notes")
	if err != nil {
		t.Fatal(err)
	}
	pushed = head
	waitConverged(t, hub, sp, numbers[:2], 2, 8*time.Minute)
	for _, num := range numbers[:2] {
		waitFor(t, hub, sp, 2*time.Minute, fmt.Sprintf("PR %d's loop to end", num), func() bool {
			return !strings.Contains(getRuns(t, sp.addr), fmt.Sprintf("/pull/%d\"", num))
		})
	}
	ctx := context.Background()
	proven := map[int]string{}
	for _, num := range numbers[:2] {
		proven[num] = prState(t, hub, num).HeadSHA
		if !convergeSuccess(t, hub, proven[num]) {
			t.Fatalf("PR %d: no converge success on its proven head %s before the test changes a fact", num, proven[num])
		}
	}
	ci := restAs(t, hub, hub.Tokens().CI)
	if _, _, err := ci.Repositories.CreateStatus(ctx, fakehub.DemoOwner, fakehub.DemoRepo, proven[numbers[0]], github.RepoStatus{
		State: new("failure"), Context: new("ci/integration"), Description: new("integration tests failed"),
	}); err != nil {
		t.Fatal(err)
	}
	reviewer := restAs(t, hub, hub.Tokens().Reviewer)
	if _, _, err := reviewer.PullRequests.CreateReview(ctx, fakehub.DemoOwner, fakehub.DemoRepo, numbers[1], &github.PullRequestReviewRequest{
		Event: new("REQUEST_CHANGES"), Body: new("Not before the API is agreed."),
	}); err != nil {
		t.Fatal(err)
	}

	for i, num := range numbers {
		sha := proven[num]
		if i == 2 {
			sha = pushed
		}
		why := map[int]string{0: "CI on", 1: "requested changes", 2: "a new head"}[i]
		waitFor(t, hub, sp, 3*time.Minute, fmt.Sprintf("PR %d's verdict withdrawn", num), func() bool {
			st := prState(t, hub, num)
			return retractions(t, hub, num) > 0 && (!slices.Contains(st.Labels, prloop.LabelReady) || reproven(t, hub, st))
		})
		// At the forge: no success on the head, one retraction comment by
		// converge's identity, saying what broke. The pushed PR may have
		// earned its label again since: only by a proof of its new head.
		if i < 2 && convergeSuccess(t, hub, sha) {
			t.Errorf("PR %d: converge's verdict on %s is still success", num, sha)
		}
		if st := prState(t, hub, num); slices.Contains(st.Labels, prloop.LabelReady) && !reproven(t, hub, st) {
			t.Errorf("PR %d: ready on %s, which no verdict proved", num, st.HeadSHA)
		}
		bodies := retractionBodies(t, hub, num)
		if len(bodies) != 1 || !strings.Contains(bodies[0], why) {
			t.Errorf("PR %d: retraction comments %q, want one saying %q", num, bodies, why)
		}
	}
	if err := sp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-sp.done
}

func prState(t *testing.T, hub *fakehub.Hub, num int) fakehub.PRState {
	t.Helper()
	st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, num)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// convergeSuccess reports the newest `converge` status on sha is success.
func convergeSuccess(t *testing.T, hub *fakehub.Hub, sha string) bool {
	t.Helper()
	sts, err := hub.Statuses(fakehub.DemoOwner, fakehub.DemoRepo, sha)
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, s := range sts {
		if s.Context == prloop.StatusContext {
			last = s.State
		}
	}
	return last == "success"
}

func retractions(t *testing.T, hub *fakehub.Hub, num int) int {
	return len(retractionBodies(t, hub, num))
}

// retractionBodies are converge's retraction comments on the PR, by the
// identity converge runs as.
func retractionBodies(t *testing.T, hub *fakehub.Hub, num int) []string {
	t.Helper()
	gh := restAs(t, hub, hub.Tokens().Outsider)
	cs, _, err := gh.Issues.ListComments(context.Background(), fakehub.DemoOwner, fakehub.DemoRepo, num, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if strings.Contains(c.GetBody(), "<!-- converge:retracted") {
			if c.GetUser().GetLogin() != fakehub.LoginAuthor {
				t.Errorf("PR %d: a retraction comment by %s, not converge's identity %s", num, c.GetUser().GetLogin(), fakehub.LoginAuthor)
			}
			out = append(out, c.GetBody())
		}
	}
	return out
}

// reproven reports converge's success on the PR's head and Copilot's
// review of that head: a verdict earned again on a new head.
func reproven(t *testing.T, hub *fakehub.Hub, st fakehub.PRState) bool {
	t.Helper()
	reviewed := slices.ContainsFunc(st.ReviewList, func(r fakehub.ReviewState) bool {
		return r.CommitSHA == st.HeadSHA && strings.Contains(strings.ToLower(r.Author), "copilot")
	})
	return reviewed && convergeSuccess(t, hub, st.HeadSHA)
}

// TestPR_T14_WatchRetractsAVerdictWhoseFactsChanged: `converge pr
// --watch` stays after two-stable; CI then reports red on the proven
// head, and the verdict is withdrawn at the forge (label off, no success
// on the head, one comment by converge). SIGINT ends the watch.
func TestPR_T14_WatchRetractsAVerdictWhoseFactsChanged(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	buildConverge(t)
	cmd := exec.Command("converge", append(prArgs(hub, demo, t.TempDir()), "--watch")...)
	cmd.Env = cleanEnv(authorEnv(hub))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	waitOut := func(limit time.Duration, what string, ok func() bool) {
		t.Helper()
		events, cancel := hub.Subscribe()
		defer cancel()
		deadline := time.After(limit)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for !ok() {
			select {
			case <-events:
			case <-tick.C:
			case err := <-done:
				t.Fatalf("converge pr --watch ended (%v) before %s:\n%s", err, what, out.String())
			case <-deadline:
				t.Fatalf("no %s after %s:\n%s", what, limit, out.String())
			}
		}
	}
	waitOut(5*time.Minute, "watching after two-stable", func() bool { return strings.Contains(out.String(), "converge: watching") })
	head := prState(t, hub, demo.Number).HeadSHA
	if !convergeSuccess(t, hub, head) || !slices.Contains(prState(t, hub, demo.Number).Labels, prloop.LabelReady) {
		t.Fatalf("no ready verdict on %s before the test changes a fact:\n%s", head, out.String())
	}
	ci := restAs(t, hub, hub.Tokens().CI)
	if _, _, err := ci.Repositories.CreateStatus(context.Background(), fakehub.DemoOwner, fakehub.DemoRepo, head, github.RepoStatus{
		State: new("failure"), Context: new("ci/integration"), Description: new("integration tests failed"),
	}); err != nil {
		t.Fatal(err)
	}
	waitOut(3*time.Minute, "the verdict withdrawn", func() bool {
		return retractions(t, hub, demo.Number) == 1 && !slices.Contains(prState(t, hub, demo.Number).Labels, prloop.LabelReady)
	})
	if convergeSuccess(t, hub, head) {
		t.Errorf("converge's verdict on %s is still success after CI went red", head)
	}
	if b := retractionBodies(t, hub, demo.Number); len(b) != 1 || !strings.Contains(b[0], "CI on") {
		t.Errorf("retraction comments %q, want one saying CI broke", b)
	}
	// The watch settles: its own runs' writes start at most a run or two
	// more, then the probe reads "unchanged" (a watch that spun would
	// start a run per poll).
	checks := func() int { return strings.Count(out.String(), "changed: checking the verdict") }
	settled := time.Now()
	for last := checks(); time.Since(settled) < 3*time.Second; {
		select {
		case <-time.After(100 * time.Millisecond):
		case err := <-done:
			t.Fatalf("converge pr --watch ended (%v) while watching:\n%s", err, out.String())
		}
		if n := checks(); n != last {
			last, settled = n, time.Now()
		}
		if checks() > 10 {
			t.Fatalf("the watch keeps starting runs on an unchanged PR: writes %+v", hub.Writes()[len(hub.Writes())-12:])
		}
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("converge pr --watch did not end after SIGINT:\n%s", out.String())
	}
}
