package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/mcpserver"
	"github.com/convergeloop/converge/internal/secure"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// hubEnv is the environment a user's shell gives converge for the
// emulator (IF-2, IF-3): its API, its CA, the author's token, and no
// other token from the developer's shell.
func hubEnv(hub *fakehub.Hub) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secure.TokenEnv, k) && k != "GITHUB_API_URL" {
			env = append(env, kv)
		}
	}
	return append(env, "GITHUB_API_URL="+hub.APIURL(), "SSL_CERT_FILE="+hub.CAFile(), "CONVERGE_TOKEN="+hub.Tokens().Author)
}

// TestPR_M2_MCPDisposeThreadsRepliesAtTheForge: dispose_threads is
// converge pr --dispose-only: a reviewer's open thread that no loop
// commit addressed is deferred to a human — at the forge, converge's
// reply is in the thread and the thread stays open — and the tool
// answers with the envelope and the disposal's run, recorded in the
// store. Asked again, it writes nothing twice.
func TestPR_M2_MCPDisposeThreadsRepliesAtTheForge(t *testing.T) {
	t.Parallel()
	hub, demo := hubtest.Demo(t, time.Hour)
	rev, err := github.NewClient(github.WithHTTPClient(hub.HTTPClient()), github.WithAuthToken(hub.Tokens().Reviewer), github.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
	must(t, err)
	if _, _, err := rev.PullRequests.CreateReview(context.Background(), demo.Owner, demo.Repo, demo.Number, &github.PullRequestReviewRequest{
		Event: new("COMMENT"),
		Comments: []*github.DraftReviewComment{{
			Path: new("summary.go"), Line: new(16), Side: new("RIGHT"), Body: new("Mean must return ErrEmpty for an empty slice instead of dividing by zero."),
		}},
	}); err != nil {
		t.Fatal(err)
	}
	before, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	must(t, err)
	if len(before.ThreadList) != 1 {
		t.Fatalf("the PR has %d threads, want the reviewer's one", len(before.ThreadList))
	}
	thread := before.ThreadList[0].ID
	cs := session(t, filepath.Join(t.TempDir(), "state"), hubEnv(hub), buildConverge(t))

	var out struct {
		Run      string   `json:"run"`
		PR       string   `json:"pr"`
		Replied  []string `json:"replied"`
		Resolved []string `json:"resolved"`
		Skipped  []string `json:"skipped"`
	}
	call(t, cs, "dispose_threads", map[string]any{"pr": demo.PRURL}, &out)
	if !slices.Equal(out.Replied, []string{thread}) || len(out.Resolved) != 0 || len(out.Skipped) != 0 || out.PR != demo.PRURL {
		t.Fatalf("dispose_threads: want the thread replied to and nothing resolved, got %+v", out)
	}
	after, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	must(t, err)
	th := after.ThreadList[0]
	if th.Resolved || len(th.Authors) != 2 || th.Authors[1] != fakehub.LoginAuthor {
		t.Fatalf("at the forge the thread is %+v; want converge's reply in it, left open", th)
	}
	if after.HeadSHA != before.HeadSHA {
		t.Errorf("the disposal moved the head")
	}
	var r mcpserver.Run
	call(t, cs, "run_status", map[string]any{"run": out.Run}, &r)
	if r.Kind != "pr-dispose" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("the disposal's run: %+v", r)
	}

	call(t, cs, "dispose_threads", map[string]any{"pr": demo.PRURL}, &out)
	if len(out.Replied) != 0 || !slices.Equal(out.Skipped, []string{thread}) {
		t.Errorf("a second disposal: want the thread skipped, got %+v", out)
	}
	again, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	must(t, err)
	if got := len(again.ThreadList[0].Authors); got != 2 {
		t.Errorf("a second disposal wrote in the thread again: %d comments", got)
	}
}

// TestPR_G5_MCPStartPRRunsAtTheForgeUntilStopped: start_pr starts
// converge pr on the emulator's PR as a converge of its own; the run is
// in the store, held by it, and works at the forge (Copilot's review is
// requested and starts); stop_run ends it stopped-by-human (exit 3) with
// the head as it was.
func TestPR_G5_MCPStartPRRunsAtTheForgeUntilStopped(t *testing.T) {
	t.Parallel()
	hub, demo := hubtest.Demo(t, time.Hour) // Copilot reviews for an hour: the loop waits
	events, unsubscribe := hub.Subscribe()
	defer unsubscribe()
	copilot := make(chan struct{})
	go func() {
		for e := range events {
			if e.Kind == "copilot_started" {
				close(copilot)
				return
			}
		}
	}()
	before, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	must(t, err)
	cs := session(t, filepath.Join(t.TempDir(), "state"), hubEnv(hub), buildConverge(t))

	var out started
	call(t, cs, "start_pr", map[string]any{"prs": []string{demo.PRURL}, "agent": "suggest"}, &out)
	stopOnCleanup(t, out.PID)
	if len(out.Runs) != 1 || out.Runs[0].Kind != "pr" || out.Runs[0].Target != demo.PRURL || out.Runs[0].ExitCode != nil {
		t.Fatalf("start_pr: want the running PR run, got %+v", out)
	}
	id := out.Runs[0].ID
	select {
	case <-copilot:
	case <-time.After(3 * time.Minute):
		b, _ := os.ReadFile(out.Output)
		t.Fatalf("the run never requested Copilot's review:\n%s", b)
	}

	call(t, cs, "stop_run", map[string]any{"run": id}, nil)
	r := ended(t, cs, id)
	if r.Status != "stopped-by-human" || *r.ExitCode != 3 {
		b, _ := os.ReadFile(out.Output)
		t.Fatalf("the stopped PR run ended %s (exit %d), want stopped-by-human (exit 3):\n%s", r.Status, *r.ExitCode, b)
	}
	after, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	must(t, err)
	if after.HeadSHA != before.HeadSHA {
		t.Errorf("the head moved from %s to %s", before.HeadSHA, after.HeadSHA)
	}
}
