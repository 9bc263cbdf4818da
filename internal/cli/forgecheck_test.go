package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/gobuild"
)

// The helpers here play the other actors on the emulator with their own
// tokens and check outcomes at the forge, never in converge's own output.

// runBin runs the real converge binary (TestMain puts it on PATH) with env
// added to a clean environment, and returns its exit code and output.
func runBin(t *testing.T, env map[string]string, args ...string) (exitcode.Code, string) {
	t.Helper()
	bin := "converge"
	if b := os.Getenv("CONVERGE_TEST_BIN"); b != "" {
		// Another build, e.g. an older commit, to show a test fails there.
		bin = b
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatal("converge is not on PATH (TestMain installs it)")
	}
	// A bound on a hung run, not on a slow one: on a loaded machine a run
	// with real agent CLIs (a local review's several at once) has taken
	// over three minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv(env)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := exitcode.OK
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run converge: %v\n%s", err, out.String())
		}
		code = exitcode.Code(ee.ExitCode())
	}
	return code, out.String()
}

// cleanEnv is the test process's environment without any token, plus env.
func cleanEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL":
			continue
		}
		out = append(out, kv)
	}
	// The go command keeps this machine's build cache (GOCACHE, and the
	// GOFLAGS that share it) when a test gives converge a HOME of its own:
	// otherwise every done-check's go test under it compiled the
	// standard library again, three quarters of a real-agent test's CPU.
	out = append(out, gobuild.Env()...)
	// The agents these tests script write their logs beside their
	// scripts, in the test's temporary directories: contained (SEC-7),
	// they may, as a user's agent may write where the user says.
	// Containment itself is proven where nothing is made writable
	// (internal/proc, sec7_hostile_test.go).
	out = append(out, "CONVERGE_SANDBOX_WRITABLE="+os.TempDir())
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// authorEnv is converge acting as the PR's author.
func authorEnv(hub *fakehub.Hub) map[string]string {
	return map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author}
}

// restAs is go-github acting as one of the emulator's actors.
func restAs(t testing.TB, hub *fakehub.Hub, token string) *github.Client {
	t.Helper()
	c, err := ghREST(hub, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ghREST(hub *fakehub.Hub, token string) (*github.Client, error) {
	return github.NewClient(github.WithHTTPClient(hub.HTTPClient()), github.WithAuthToken(token), github.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
}

// cloneAs clones the demo repository with all its branches as the actor
// whose token is given.
func cloneAs(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo, token string) *repo.Git {
	t.Helper()
	ctx := context.Background()
	env := append(os.Environ(), hub.GitEnv(token)...)
	dir := filepath.Join(t.TempDir(), "clone")
	if _, err := repo.Clone(ctx, hub.GitURL(demo.Owner, demo.Repo), dir, env); err != nil {
		t.Fatal(err)
	}
	// A clone brings every branch (as refs/remotes/origin/*).
	return &repo.Git{Dir: dir, Env: env}
}

// forcePush points the PR's branch at sha as the author would with
// `git push --force`.
func forcePush(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo, sha string) {
	t.Helper()
	g := cloneAs(t, hub, demo, hub.Tokens().Author)
	if _, err := g.Run(context.Background(), "push", "--force", "origin", sha+":refs/heads/"+fakehub.DemoBranch); err != nil {
		t.Fatal(err)
	}
}

// fileAtHead reads path at the PR's head through a fresh clone.
func fileAtHead(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo, path string) string {
	t.Helper()
	out, err := cloneAs(t, hub, demo, hub.Tokens().Reviewer).Run(context.Background(), "show", "origin/"+fakehub.DemoBranch+":"+path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// killAtFirstPush starts the converge binary with args and env, and
// SIGKILLs it the moment the forge receives its first push; it returns
// what the killed run printed.
func killAtFirstPush(t *testing.T, hub *fakehub.Hub, env []string, args []string) string {
	t.Helper()
	return signalAtFirstPush(t, hub, env, args, os.Kill)
}

// signalAtFirstPush runs converge and sends it sig at the first push the
// emulator sees, then waits for it to end.
func signalAtFirstPush(t *testing.T, hub *fakehub.Hub, env []string, args []string, sig os.Signal) string {
	t.Helper()
	events, cancel := hub.Subscribe()
	defer cancel()
	cmd := exec.Command("converge", args...)
	cmd.Env = env
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	for killed := false; !killed; {
		select {
		case e := <-events:
			if e.Kind == "push" {
				_ = cmd.Process.Signal(sig)
				killed = true
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("no push within 60s:\n%s", out.String())
		}
	}
	_ = cmd.Wait()
	return out.String()
}

// outageOnReviewStart makes every API request fail with 503 for d from
// the moment Copilot starts its first review, while converge waits for it.
func outageOnReviewStart(hub *fakehub.Hub, d time.Duration) {
	events, cancel := hub.Subscribe()
	go func() {
		defer cancel()
		for e := range events {
			if e.Kind == "copilot_started" {
				hub.Outage(d)
				return
			}
		}
	}()
}

// copilotLogin matches Copilot on every API surface.
func copilotLogin(l string) bool { return strings.Contains(strings.ToLower(l), "copilot") }

// trustedLogin is who may drive fixes on the emulator: write access or
// Copilot (the outsider has read only).
func trustedLogin(l string) bool {
	return copilotLogin(l) || strings.EqualFold(l, fakehub.LoginAuthor) || strings.EqualFold(l, fakehub.LoginReviewer)
}

// forgeVerdict is what the forge itself proves about a PR that converge
// called two-stable: the latest Copilot review (or converge's clean local
// review summary) is of the head and clean, no trusted thread is open, CI
// is green on the head, and the labels say ready. "" means proven.
func forgeVerdict(pr *forge.PullRequest, localOK bool) string {
	var why []string
	var latest *forge.Review
	for i := range pr.Reviews {
		r := &pr.Reviews[i]
		if !copilotLogin(r.Author) {
			continue
		}
		if latest == nil || r.SubmittedAt.After(latest.SubmittedAt) || (r.SubmittedAt.Equal(latest.SubmittedAt) && r.CommitSHA == pr.HeadSHA) {
			latest = r
		}
	}
	copilotOK := latest != nil && latest.CommitSHA == pr.HeadSHA && latest.CommentCount == 0 &&
		strings.Contains(latest.Body, "generated no new comments")
	localClean := false
	for _, ic := range pr.IssueComments {
		if strings.Contains(ic.Body, "converge:local-review head="+pr.HeadSHA) && localCleanSummary(ic.Body) {
			localClean = true
		}
	}
	if !copilotOK && !(localOK && localClean) {
		desc := "none"
		if latest != nil {
			desc = fmt.Sprintf("%s on %s with %d comments: %q", latest.ID, latest.CommitSHA, latest.CommentCount, latest.Body)
		}
		why = append(why, "no clean independent review of the head "+pr.HeadSHA+" (latest Copilot review: "+desc+")")
	}
	for _, th := range pr.Threads {
		if !th.IsResolved && len(th.Comments) > 0 && trustedLogin(th.Comments[0].Author) {
			why = append(why, "trusted thread "+th.ID+" is open")
		}
	}
	ciSeen := false
	for _, cx := range pr.Checks.Contexts {
		if strings.EqualFold(cx.Name, "converge") {
			continue
		}
		ciSeen = true
		if !strings.EqualFold(string(cx.Conclusion), "SUCCESS") {
			why = append(why, fmt.Sprintf("CI %s is %s/%s on the head", cx.Name, cx.Status, cx.Conclusion))
		}
	}
	if !ciSeen {
		why = append(why, "no CI on the head")
	}
	ready := false
	for _, l := range pr.Labels {
		if l == "converge:ready-for-merge" {
			ready = true
		}
		if l == "converge:needs-attention" {
			why = append(why, "needs-attention label on a two-stable PR")
		}
	}
	if !ready {
		why = append(why, "no ready-for-merge label")
	}
	return strings.Join(why, "; ")
}

// localCleanSummary reads converge's local review summary comment: clean
// when it reports no findings and no unparsed angle.
func localCleanSummary(body string) bool {
	l := strings.ToLower(body)
	return strings.Contains(l, "clean") && !strings.Contains(l, "could not be parsed") && !strings.Contains(l, "structural (")
}

// assertNotReady fails when the forge shows converge's success marks.
func assertNotReady(t *testing.T, pr *forge.PullRequest) {
	t.Helper()
	for _, l := range pr.Labels {
		if l == "converge:ready-for-merge" {
			t.Errorf("the PR is labelled ready-for-merge: %v", pr.Labels)
		}
	}
	for _, cx := range pr.Checks.Contexts {
		if strings.EqualFold(cx.Name, "converge") && strings.EqualFold(string(cx.Conclusion), "SUCCESS") {
			t.Errorf("converge's own status on the head is success")
		}
	}
}

// convergeReplies counts converge's marked replies in a thread.
func convergeReplies(th forge.Thread) []string {
	var out []string
	for _, c := range th.Comments {
		if strings.Contains(c.Body, "converge:reply") {
			out = append(out, c.Body)
		}
	}
	return out
}

// assertProven fails unless the forge proves the two-stable converge
// claimed (forgeVerdict); out is converge's output, for the failure.
func assertProven(t *testing.T, pr *forge.PullRequest, localOK bool, out string) {
	t.Helper()
	if why := forgeVerdict(pr, localOK); why != "" {
		t.Fatalf("exit 0 but the forge does not prove it: %s\n%s", why, out)
	}
}
