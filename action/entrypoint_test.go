// Package action holds the GitHub Action's entry script (entrypoint.sh,
// called by action.yml at the repository root) and its tests: the script
// runs as a workflow step would run it, against the GitHub emulator, with
// the converge its own install step builds.
package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"
	"go.yaml.in/yaml/v3"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/testutil/gobuild"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

func TestMain(m *testing.M) {
	// The install step's go build shares the build cache with the other
	// packages' tests, which build converge the same way.
	gobuild.ShareCache()
	code := m.Run()
	if installed.temp != "" {
		os.RemoveAll(installed.temp)
	}
	os.Exit(code)
}

// installed is what `entrypoint.sh install` put on the job's PATH, once
// for the package.
var installed struct {
	once sync.Once
	temp string
	path []string
	err  error
}

// install runs the action's install step as the runner would: in the
// action's checkout (this repository), appending to GITHUB_PATH.
func install(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the converge binary")
	}
	installed.once.Do(func() {
		if installed.temp, installed.err = os.MkdirTemp("", "converge-action-"); installed.err != nil {
			return
		}
		root, err := filepath.Abs("..")
		if err != nil {
			installed.err = err
			return
		}
		ghPath := filepath.Join(installed.temp, "github_path")
		cmd := exec.Command("bash", "entrypoint.sh", "install")
		cmd.Env = append(os.Environ(), "GITHUB_ACTION_PATH="+root, "RUNNER_TEMP="+installed.temp,
			"GITHUB_PATH="+ghPath, "INPUT_AGENT=suggest", "INPUT_INSTALL_AGENT=true")
		if out, err := cmd.CombinedOutput(); err != nil {
			installed.err = errors.New("entrypoint.sh install: " + err.Error() + "\n" + string(out))
			return
		}
		b, err := os.ReadFile(ghPath)
		if err != nil {
			installed.err = err
			return
		}
		installed.path = strings.Fields(string(b))
	})
	if installed.err != nil {
		t.Fatal(installed.err)
	}
	return installed.path
}

// runAction runs `entrypoint.sh run` as the action's run step, with the
// runner's variables for hub's PR and the step's inputs; it returns the
// step's output and exit code.
func runAction(t *testing.T, hub *fakehub.Hub, event any, vars map[string]string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	eventPath := filepath.Join(dir, "event.json")
	b, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(eventPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// No token or setting of the developer's shell leaks in.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, p := range []string{"CONVERGE_", "GITHUB_", "GH_", "INPUT_", "RUNNER_", "SSL_CERT_", "XDG_STATE_HOME="} {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
	path := os.Getenv("PATH")
	if hub != nil {
		path = strings.Join(install(t), string(os.PathListSeparator)) + string(os.PathListSeparator) + path
	}
	env = append(env, "PATH="+path, "XDG_STATE_HOME="+filepath.Join(dir, "state"), "RUNNER_TEMP="+dir,
		"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_EVENT_PATH="+eventPath)
	if hub != nil {
		// What a runner on a GitHub Enterprise host sets, with the
		// emulator's CA trusted as a self-hosted runner's would be.
		env = append(env, "GITHUB_SERVER_URL="+hub.BaseURL(), "GITHUB_API_URL="+hub.APIURL(),
			"GITHUB_REPOSITORY="+fakehub.DemoOwner+"/"+fakehub.DemoRepo, "SSL_CERT_FILE="+hub.CAFile())
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "entrypoint.sh", "run")
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("entrypoint.sh run: %v\n%s", err, out.String())
	return "", 0
}

const warning = "::warning title=converge::only GITHUB_TOKEN"

// TestSEC_5_ActionWithOnlyGitHubToken: given only the workflow's token,
// whose pushes start no workflows, the action says so and converge does
// not wait for checks that will never come: on a repository whose CI
// never runs on converge's commits, the PR of the event (refs/pull/N/merge)
// is still driven to two-stable, as the workflow's bot.
func TestSEC_5_ActionWithOnlyGitHubToken(t *testing.T) {
	hub := hubtest.Start(t, 100*time.Millisecond)
	demo, err := fakehub.SeedDemoWith(context.Background(), hub, fakehub.DemoOptions{NoCI: true})
	if err != nil {
		t.Fatal(err)
	}
	start, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	if err != nil {
		t.Fatal(err)
	}
	out, code := runAction(t, hub, map[string]any{"action": "opened", "number": demo.Number}, map[string]string{
		"GITHUB_REF":         "refs/pull/1/merge",
		"INPUT_AGENT":        "suggest",
		"INPUT_GITHUB_TOKEN": hub.Tokens().CI,
		"INPUT_ARGS":         "--poll-min 50ms --poll-max 300ms --ci-wait 5s --max-iterations 6",
	})
	if code != 0 || !strings.Contains(out, warning) || !strings.Contains(out, "converge: two-stable") {
		t.Fatalf("exit %d, want 0 with the GITHUB_TOKEN warning and two-stable:\n%s", code, out)
	}
	pr, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	if err != nil {
		t.Fatal(err)
	}
	if pr.HeadSHA == start.HeadSHA {
		t.Fatal("the PR's head did not move: converge pushed nothing")
	}
	if len(pr.ThreadList) == 0 {
		t.Fatal("no review threads: Copilot never reviewed")
	}
	for _, th := range pr.ThreadList {
		if !th.Resolved || !slices.Contains(th.Authors, fakehub.LoginCI) {
			t.Errorf("thread %s on %s: resolved %v, authors %v; want resolved with a reply by %s", th.ID, th.Path, th.Resolved, th.Authors, fakehub.LoginCI)
		}
	}
	pushes := 0
	for _, w := range hub.Writes() {
		switch {
		case w.Actor == fakehub.LoginAuthor || w.Actor == fakehub.LoginReviewer || w.Actor == fakehub.LoginOutsider:
			t.Errorf("a write by %s, not the workflow's token: %s %s", w.Actor, w.Surface, w.What)
		case w.Actor == fakehub.LoginCIREST && w.Surface == "git":
			pushes++
		}
	}
	if pushes == 0 {
		t.Error("no push by the workflow's token")
	}
}

// TestSEC_5_ActionActsWithItsPushToken: with a push token (an App's or a
// personal one) the action acts with it, not with the workflow's token,
// and says nothing about GITHUB_TOKEN; the PR is the event's html_url.
func TestSEC_5_ActionActsWithItsPushToken(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("jq (on every GitHub runner) reads the event")
	}
	hub, demo := hubtest.Demo(t, 100*time.Millisecond)
	rev, err := github.NewClient(github.WithHTTPClient(hub.HTTPClient()), github.WithAuthToken(hub.Tokens().Reviewer), github.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rev.PullRequests.CreateReview(context.Background(), demo.Owner, demo.Repo, demo.Number, &github.PullRequestReviewRequest{
		Event:    new("COMMENT"),
		Comments: []*github.DraftReviewComment{{Path: new("summary.go"), Line: new(16), Side: new("RIGHT"), Body: new("Mean must return ErrEmpty for an empty slice.")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	event := map[string]any{"action": "opened", "number": demo.Number, "pull_request": map[string]any{"number": demo.Number, "html_url": demo.PRURL}}
	out, code := runAction(t, hub, event, map[string]string{
		"GITHUB_REF":         "refs/heads/main",
		"INPUT_AGENT":        "suggest",
		"INPUT_TOKEN":        hub.Tokens().Author,
		"INPUT_GITHUB_TOKEN": hub.Tokens().Outsider,             // read only: a write with it fails
		"INPUT_ARGS":         "--poll-min 50ms\n--dispose-only", // a YAML block: words on lines
	})
	if code != 0 || strings.Contains(out, "::warning") {
		t.Fatalf("exit %d, want 0 and no warning:\n%s", code, out)
	}
	if !regexp.MustCompile(`"pr":"[^"]*/pull/1","replied":\["PRRT_`).MatchString(out) {
		t.Fatalf("converge did not reply on the event's PR:\n%s", out)
	}
	pr, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.ThreadList) != 1 || !slices.Equal(pr.ThreadList[0].Authors, []string{fakehub.LoginReviewer, fakehub.LoginAuthor}) {
		t.Fatalf("threads %+v: want the reviewer's thread answered by the push token's user", pr.ThreadList)
	}
	for _, w := range hub.Writes() {
		if w.Actor != fakehub.LoginAuthor && w.Actor != fakehub.LoginReviewer {
			t.Errorf("a write by %s: %s %s", w.Actor, w.Surface, w.What)
		}
	}
}

// TestIF_1_ActionBadInput: what the action cannot run with is one error
// annotation naming the fix, exit 2, before converge starts.
func TestIF_1_ActionBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"no PR", map[string]string{"GITHUB_REF": "refs/heads/main", "INPUT_TOKEN": "t"}, "no pull request"},
		{"no token", map[string]string{"INPUT_PR_URL": "https://github.com/o/r/pull/1"}, "no token"},
		{"token and app", map[string]string{"INPUT_PR_URL": "https://github.com/o/r/pull/1", "INPUT_TOKEN": "t", "INPUT_APP_ID": "1", "INPUT_APP_PRIVATE_KEY": "k"}, "exclude each other"},
		{"app without key", map[string]string{"INPUT_PR_URL": "https://github.com/o/r/pull/1", "INPUT_APP_ID": "1"}, "app-private-key"},
		{"command without program", map[string]string{"INPUT_PR_URL": "https://github.com/o/r/pull/1", "INPUT_TOKEN": "t", "INPUT_AGENT": "command"}, "agent-cmd"},
		{"key without its variable", map[string]string{"INPUT_PR_URL": "https://github.com/o/r/pull/1", "INPUT_TOKEN": "t", "INPUT_AGENT": "opencode", "INPUT_API_KEY": "k"}, "api-key-env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runAction(t, nil, map[string]any{}, tc.vars)
			if code != 2 || !strings.HasPrefix(out, "::error title=converge::") || !strings.Contains(out, tc.want) || strings.Count(out, "\n") != 1 {
				t.Fatalf("exit %d, want 2 and one ::error line with %q:\n%s", code, tc.want, out)
			}
		})
	}
}

// TestSEC_5_ActionInputsReachTheScript: every input of action.yml reaches
// the entry script as its INPUT_ variable, and the script reads no input
// the action does not have; the agent CLIs it installs are the versions
// the tests run (.ci/run).
func TestSEC_5_ActionInputsReachTheScript(t *testing.T) {
	var a struct {
		Inputs map[string]struct{ Default string }
		Runs   struct {
			Using string
			Steps []struct {
				Run string
				Env map[string]string
			}
		}
	}
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q", a.Runs.Using)
	}
	given := map[string]bool{}
	for _, s := range a.Runs.Steps {
		for k, v := range s.Env {
			name := strings.TrimPrefix(k, "INPUT_")
			in := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
			if _, ok := a.Inputs[in]; !ok || v != "${{ inputs."+in+" }}" {
				t.Errorf("step env %s: %q is not the input %s", k, v, in)
			}
			given[k] = true
		}
	}
	for in := range a.Inputs {
		k := "INPUT_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_"))
		if !given[k] {
			t.Errorf("input %s reaches no step", in)
		}
		if !strings.Contains(string(script), k) {
			t.Errorf("input %s: entrypoint.sh never reads %s", in, k)
		}
	}
	for _, k := range regexp.MustCompile(`INPUT_[A-Z_]+`).FindAllString(string(script), -1) {
		if !given[k] {
			t.Errorf("entrypoint.sh reads %s, which no step gives it", k)
		}
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range regexp.MustCompile(`(?m)^([A-Z_]+_VERSION)=(\S+)$`).FindAllStringSubmatch(string(script), -1) {
		if !regexp.MustCompile(`(?m)^` + pin[1] + `=` + regexp.QuoteMeta(pin[2]) + `$`).Match(ci) {
			t.Errorf("entrypoint.sh installs %s=%s, .ci/run tests another version", pin[1], pin[2])
		}
	}
}
