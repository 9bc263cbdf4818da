package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// syncBuffer is an io.Writer safe to read while a command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testIO returns streams backed by buffers and an environment of env only.
func testIO(env map[string]string) (*cmdutil.IOStreams, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "CONVERGE_SANDBOX_WRITABLE" {
			// The scripted agents write their logs in the test's
			// temporary directories (SEC-7), as in cleanEnv; one value
			// for every in-process run, as the policy is the process's.
			return os.TempDir()
		}
		return ""
	}
	return &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut, Getenv: getenv}, out, errOut
}

// startHub runs the emulator in-process with the demo repository seeded.
func startHub(t *testing.T, delay time.Duration) (*fakehub.Hub, fakehub.DemoInfo) {
	t.Helper()
	return hubtest.Demo(t, delay)
}

func observe(t *testing.T, hub *fakehub.Hub, prURL string) *forge.PullRequest {
	t.Helper()
	ref, err := forge.ParsePRURL(prURL)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := hubtest.Client(t, hub, hub.Tokens().Reviewer).Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// forgeWrites summarises what converge could have written, as the API
// shows it: replies, resolutions, head, labels.
func forgeWrites(pr *forge.PullRequest) string {
	comments, resolved := 0, 0
	for _, th := range pr.Threads {
		comments += len(th.Comments)
		if th.IsResolved {
			resolved++
		}
	}
	return fmt.Sprintf("head=%s comments=%d resolved=%d labels=%v", pr.HeadSHA, comments, resolved, pr.Labels)
}

func prArgs(hub *fakehub.Hub, demo fakehub.DemoInfo, state string) []string {
	return []string{"pr", demo.PRURL, "--api-url", hub.APIURL(), "--ca-file", hub.CAFile(),
		"--state", state, "--poll-min", "50ms", "--poll-max", "500ms"}
}

// TestIF6_DemoConvergesWithProof runs `converge demo`: exit 0 and a proof
// whose head is the emulator's head with no thread awaiting reply.
func TestIF6_DemoConvergesWithProof(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	ios, out, errOut := testIO(nil)
	code := Run(context.Background(), []string{"demo", "--state", t.TempDir()}, ios)
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	s := out.String()
	for _, want := range []string{"converge: two-stable (exit 0)", "open threads awaiting reply  0", "rounds run                   3", "match=true"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
}

// TestPR_S12_ConvergesThenSecondRunWritesNothing drives the sandbox PR to
// two-stable with `converge pr`, then runs again: exit 0 and nothing new on
// the forge (no reply, resolve, commit or label).
func TestPR_S12_ConvergesThenSecondRunWritesNothing(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 200*time.Millisecond)
	state := t.TempDir()
	env := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author}

	ios, out, errOut := testIO(env)
	if code := Run(context.Background(), prArgs(hub, demo, state), ios); code != 0 {
		t.Fatalf("first run exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	first := observe(t, hub, demo.PRURL)
	if !strings.Contains(out.String(), "head                         "+first.HeadSHA) {
		t.Fatalf("proof head is not the forge's head %s:\n%s", first.HeadSHA, out)
	}
	for _, th := range first.Threads {
		if !th.IsResolved {
			t.Errorf("thread %s left unresolved", th.ID)
		}
	}
	before := forgeWrites(first)
	reviewsBefore := len(first.Reviews)

	ios2, out2, errOut2 := testIO(env)
	if code := Run(context.Background(), prArgs(hub, demo, state), ios2); code != 0 {
		t.Fatalf("second run exit %d\nstdout:\n%s\nstderr:\n%s", code, out2, errOut2)
	}
	second := observe(t, hub, demo.PRURL)
	if after := forgeWrites(second); after != before {
		t.Errorf("second run wrote to the forge:\nbefore %s\nafter  %s", before, after)
	}
	if len(second.Reviews) != reviewsBefore {
		t.Errorf("second run triggered a new review: %d → %d", reviewsBefore, len(second.Reviews))
	}
	if strings.Contains(out2.String(), "requested copilot review") {
		t.Errorf("second run requested a review on an already two-stable PR (PR-S1):\n%s", out2)
	}

	// UX-2: status and proof read the state store.
	ios3, out3, _ := testIO(env)
	if code := Run(context.Background(), []string{"status", "--json", "--state", state}, ios3); code != 0 {
		t.Fatalf("status exit %d", code)
	}
	var runs []runView
	if err := json.Unmarshal([]byte(out3.String()), &runs); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out3)
	}
	if len(runs) != 2 || runs[0].Status != "two-stable" || runs[1].Status != "two-stable" {
		t.Fatalf("status: want two two-stable runs, got %+v", runs)
	}
	ios4, out4, _ := testIO(env)
	if code := Run(context.Background(), []string{"proof", runs[1].ID, "--json", "--state", state}, ios4); code != 0 {
		t.Fatalf("proof exit %d", code)
	}
	var view struct {
		Proof struct {
			HeadSHA    string `json:"head_sha"`
			OpenThread int    `json:"open_threads_awaiting_reply"`
		} `json:"proof"`
	}
	if err := json.Unmarshal([]byte(out4.String()), &view); err != nil || view.Proof.HeadSHA != first.HeadSHA {
		t.Fatalf("proof --json: want head %s, got %s (%v)", first.HeadSHA, out4, err)
	}

	// SEC-3: no file under the state directory (store, WAL, clone,
	// worktrees) holds the token in any form.
	assertNoSecretUnder(t, state, hub.Tokens().Author)

	// PR-M5: the per-round ledger: every finding with its disposition.
	db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rounds, err := db.Rounds(context.Background(), runs[1].ID)
	if err != nil || len(rounds) != 3 || rounds[0].CommitSHA == "" || !rounds[0].Structural || rounds[2].Structural {
		t.Fatalf("rounds ledger: %+v %v", rounds, err)
	}
	findings, err := db.Findings(context.Background(), runs[1].ID)
	if err != nil || len(findings) != 3 {
		t.Fatalf("findings ledger: %+v %v", findings, err)
	}
	for _, f := range findings {
		if f.Disposition != "addressed" || f.ThreadID == "" || f.Source != "copilot" {
			t.Errorf("finding %+v: want addressed copilot thread", f)
		}
	}
}

// runPRWhile starts `converge pr` and calls during once the first Copilot
// review has been requested, then returns the exit code and output.
func runPRWhile(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo, during func()) (exitcode.Code, string) {
	t.Helper()
	return runPRWhileIn(t, hub, demo, t.TempDir(), during)
}

// runPRWhileIn is runPRWhile with the state directory named.
func runPRWhileIn(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo, state string, during func()) (exitcode.Code, string) {
	t.Helper()
	events, cancel := hub.Subscribe()
	defer cancel()
	ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author})
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	done := make(chan exitcode.Code, 1)
	go func() { done <- Run(ctx, prArgs(hub, demo, state), ios) }()
	for {
		select {
		case e := <-events:
			if e.Kind == "copilot_started" {
				during()
				select {
				case code := <-done:
					return code, out.String() + errOut.String()
				case <-ctx.Done():
					t.Fatalf("loop did not end: %s", out)
				}
			}
		case code := <-done:
			t.Fatalf("loop ended (exit %d) before the review started:\n%s%s", code, out, errOut)
		}
	}
}

// The human push (PR-T4) and close (PR-T7) scenarios are testscripts:
// testdata/bothforges/pr_t4_human_push_mid_run.txtar, pr_t7_closed_mid_run.txtar.

// TestSandbox_PrintsJSONAndServesGit runs `converge sandbox`: it prints its
// JSON line as soon as it serves, while it goes on serving (not at its
// end); git clone with the author token works and a push to the PR branch
// moves the PR's headRefOid.
func TestSandbox_PrintsJSONAndServesGit(t *testing.T) {
	pr, pw := io.Pipe()
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan exitcode.Code, 1)
	go func() {
		code := Run(ctx, []string{"sandbox", "--state", filepath.Join(t.TempDir(), "sbx")}, ios)
		pw.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("sandbox exit %d after interrupt", code)
		}
	})
	// Nothing interrupts the sandbox until the test ends, and what follows
	// asks it for the PR and clones from it: the line is printed while it
	// serves. One printed only at its end would never come; the wait for
	// it is a backstop, minutes away.
	type read struct {
		line string
		err  error
	}
	lines := make(chan read, 1)
	go func() {
		br := bufio.NewReader(pr)
		line, err := br.ReadString('\n')
		lines <- read{line, err}
		_, _ = io.Copy(io.Discard, br)
	}()
	var line string
	select {
	case r := <-lines:
		if r.err != nil {
			code := <-done
			done <- code
			t.Fatalf("the sandbox ended (exit %d) without its line: %v", code, r.err)
		}
		line = r.line
	case <-time.After(2 * time.Minute):
		t.Fatal("the sandbox printed no line while serving")
	}
	var info sandboxInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("sandbox line is not JSON: %v\n%s", err, line)
	}
	if info.APIURL == "" || info.GraphQLURL == "" || info.GitURL == "" || info.PRURL == "" || info.CAFile == "" ||
		info.Tokens.Author == "" || info.Tokens.Reviewer == "" || info.Tokens.Outsider == "" || info.Tokens.Copilot == "" || info.Tokens.CI == "" {
		t.Fatalf("sandbox line misses fields: %s", line)
	}
	if info.Repo != fakehub.DemoOwner+"/"+fakehub.DemoRepo || info.PRNumber != 1 || !strings.Contains(info.APIURL, "://"+info.Host+"/") ||
		info.PRURL != "https://"+info.Host+"/"+info.Repo+"/pull/1" {
		t.Errorf("sandbox line names host %q, repo %q, PR %d; its URLs say otherwise: %s", info.Host, info.Repo, info.PRNumber, line)
	}

	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ghclient.New(ghclient.Options{APIURL: info.APIURL, GraphQLURL: info.GraphQLURL, Token: info.Tokens.Author, CAFile: info.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	before, err := client.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"GIT_TERMINAL_PROMPT=0", "GIT_SSL_CAINFO="+info.CAFile,
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Bearer "+info.Tokens.Author,
			"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=t@example.com")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	git("clone", "--quiet", info.GitURL, ".")
	git("checkout", "--quiet", before.HeadRef)
	if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("pushed by a test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "NOTES.md")
	git("commit", "--quiet", "-m", "test push")
	sha := git("rev-parse", "HEAD")
	git("push", "--quiet", "origin", "HEAD:"+before.HeadRef)

	after, err := client.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if after.HeadSHA != sha || after.HeadSHA == before.HeadSHA {
		t.Fatalf("push did not move headRefOid: before %s, pushed %s, now %s", before.HeadSHA, sha, after.HeadSHA)
	}
}

// TestAG_B1_CommandAgentBlockedEscalates drives the sandbox PR with an
// external command agent that cannot fix anything: converge reads its
// status record, pushes nothing, replies "escalated" without resolving,
// and ends handed-off naming those threads (PR-T11), never ready-for-merge. The agent never sees
// the forge token (SEC-2).
func TestAG_B1_CommandAgentBlockedEscalates(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	envDump := filepath.Join(dir, "agent-env")
	taskDump := filepath.Join(dir, "agent-task")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
cat > `+taskDump+`
env > `+envDump+`
echo "thinking..."
echo '{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"cannot fix this","files_changed":[],"reason":"needs a human"}'
`), 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := hub.PR(demo.Owner, demo.Repo, demo.Number)
	tok := hub.Tokens().Author
	ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": tok})
	args := append(prArgs(hub, demo, t.TempDir()), "--agent", "command", "--agent-cmd", script, "--review-agent", "suggest")
	code := Run(context.Background(), args, ios)
	// Open hand-offs are never ready-for-merge (PR-T11): handed-off, exit 3.
	if code != exitcode.Human || !strings.Contains(out.String(), "converge: handed-off") {
		t.Fatalf("want handed-off (exit 3), got exit %d\n%s%s", code, out, errOut)
	}
	after := observe(t, hub, demo.PRURL)
	assertNotReady(t, after)
	if after.HeadSHA != before.HeadSHA {
		t.Errorf("a blocked agent's round pushed: %s → %s", before.HeadSHA, after.HeadSHA)
	}
	escalated := 0
	for _, th := range after.Threads {
		if th.IsResolved {
			t.Errorf("thread %s resolved though nothing was fixed", th.ID)
		}
		last := th.Comments[len(th.Comments)-1]
		if strings.Contains(last.Body, "disposition=escalated") && strings.Contains(last.Body, "needs a human") {
			escalated++
		}
	}
	if escalated != len(after.Threads) || escalated == 0 {
		t.Errorf("want every thread escalated with the agent's reason, got %d of %d", escalated, len(after.Threads))
	}
	for _, th := range after.Threads {
		if !strings.Contains(out.String(), th.ID) {
			t.Errorf("the verdict does not name the open hand-off %s:\n%s", th.ID, out)
		}
	}
	env, err := os.ReadFile(envDump)
	if err != nil {
		t.Fatal(err)
	}
	task, _ := os.ReadFile(taskDump)
	if strings.Contains(string(env), tok) || strings.Contains(string(task), tok) {
		t.Errorf("the agent received the forge token")
	}
	if !strings.Contains(string(task), `"findings"`) {
		t.Errorf("the agent got no task JSON on stdin: %s", task)
	}
}

// TestPR_T5_MaxIterationsEndsCapExhausted: with --max-iterations 1 the
// second round never starts: cap-exhausted, exit 4, after round 1's push.
func TestPR_T5_MaxIterationsEndsCapExhausted(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	before, _ := hub.PR(demo.Owner, demo.Repo, demo.Number)
	ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author})
	code := Run(context.Background(), append(prArgs(hub, demo, t.TempDir()), "--max-iterations", "1"), ios)
	if code != exitcode.Bound || !strings.Contains(out.String(), "cap-exhausted") {
		t.Fatalf("want exit 4 cap-exhausted, got %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out.String(), "round 2  round") {
		t.Errorf("a second round started:\n%s", out.String())
	}
	after := observe(t, hub, demo.PRURL)
	if after.HeadSHA == before.HeadSHA {
		t.Errorf("round 1 pushed nothing")
	}
	found := false
	for _, l := range after.Labels {
		found = found || l == "converge:needs-attention"
	}
	if !found {
		t.Errorf("a non-success terminal must apply needs-attention (PR-T8), labels %v", after.Labels)
	}
}

// TestPR_G5_SecondLoopOnSamePRIsRefused: one loop per PR at a time.
func TestPR_G5_SecondLoopOnSamePRIsRefused(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 3*time.Second)
	state := t.TempDir()
	env := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author}
	events, cancel := hub.Subscribe()
	defer cancel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ios1, _, _ := testIO(env)
	done := make(chan exitcode.Code, 1)
	go func() { done <- Run(ctx, prArgs(hub, demo, state), ios1) }()
	for e := range events {
		if e.Kind == "copilot_started" {
			break
		}
	}
	ios2, out2, errOut2 := testIO(env)
	code := Run(context.Background(), prArgs(hub, demo, state), ios2)
	if code != exitcode.Usage || !strings.Contains(errOut2.String(), "already running") {
		t.Fatalf("second loop: want exit 2 'already running', got %d\n%s%s", code, out2, errOut2)
	}
	if n := strings.Count(errOut2.String(), "\n"); n != 1 {
		t.Errorf("want one error line, got %d:\n%s", n, errOut2)
	}
	stop()
	<-done
}

// TestREL3_BadInputAgainstEmulator: a wrong token, a PR that does not exist
// and an untrusted certificate each give one error line and their IF-1
// exit code, and no run is recorded for them.
func TestREL3_BadInputAgainstEmulator(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, time.Second)
	missing := strings.Replace(demo.PRURL, "/pull/1", "/pull/99", 1)
	for _, tc := range []struct {
		name, token, url string
		noCA             bool
		code             exitcode.Code
		want             string
	}{
		{"wrong token", "ghp_wrong", demo.PRURL, false, exitcode.Auth, "token rejected"},
		{"no such PR", hub.Tokens().Author, missing, false, exitcode.Usage, "no pull request 99"},
		{"untrusted CA", hub.Tokens().Author, demo.PRURL, true, exitcode.Unreachable, "--ca-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			args := []string{"pr", tc.url, "--state", state}
			if !tc.noCA {
				args = append(args, "--ca-file", hub.CAFile())
			}
			ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": tc.token})
			code := Run(context.Background(), args, ios)
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout:%s\nstderr:%s", code, tc.code, tc.want, out, errOut)
			}
			if n := strings.Count(errOut.String(), "\n"); n != 1 {
				t.Errorf("want one error line, got:\n%s", errOut)
			}
			if strings.Contains(errOut.String()+out.String(), tc.token) {
				t.Errorf("error leaks the token")
			}
			if _, err := os.Stat(filepath.Join(state, "converge.db")); err == nil {
				t.Errorf("bad input recorded a run")
			}
		})
	}
}

// TestPR_G5_StopFromOutsideAndByLabel: `converge stop RUN` from another
// command, and the converge:stop label on the PR, each end a running loop
// stopped-by-human (exit 3) and release its lock.
func TestPR_G5_StopFromOutsideAndByLabel(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	t.Run("converge stop", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		hub, demo := startHub(t, 2*time.Second)
		state := t.TempDir()
		code, out := runPRWhileIn(t, hub, demo, state, func() {
			ios, sout, _ := testIO(nil)
			if c := Run(context.Background(), []string{"status", "--json", "--state", state}, ios); c != 0 {
				t.Errorf("status exit %d", c)
				return
			}
			var runs []runView
			if err := json.Unmarshal([]byte(sout.String()), &runs); err != nil || len(runs) != 1 || runs[0].Target != demo.PRURL {
				t.Errorf("status: %v %s", err, sout)
				return
			}
			ios2, out2, errOut2 := testIO(nil)
			if c := Run(context.Background(), []string{"stop", runs[0].ID, "--state", state}, ios2); c != 0 || !strings.Contains(out2.String(), "stop requested") {
				t.Errorf("stop exit %d: %s%s", c, out2, errOut2)
			}
		})
		if code != exitcode.Human || !strings.Contains(out, "stopped-by-human") {
			t.Fatalf("want exit 3 stopped-by-human, got %d:\n%s", code, out)
		}
		// The lock is released: another run may take it.
		db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.CreateRun(context.Background(), store.Run{ID: "r-next", Kind: "pr", Target: demo.PRURL}); err != nil {
			t.Fatal(err)
		}
		if holder, ok, err := db.AcquireLock(context.Background(), demo.PRURL, "r-next", os.Getpid()); err != nil || !ok {
			t.Errorf("lock still held by %q after stop (%v)", holder, err)
		}
	})
	t.Run("label", func(t *testing.T) {
		t.Parallel() // its own emulator
		hub, demo := startHub(t, 2*time.Second)
		code, out := runPRWhile(t, hub, demo, func() {
			url := fmt.Sprintf("%s/repos/%s/%s/issues/%d/labels", hub.APIURL(), demo.Owner, demo.Repo, demo.Number)
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"labels":["converge:stop"]}`))
			req.Header.Set("Authorization", "token "+hub.Tokens().Reviewer)
			resp, err := hub.HTTPClient().Do(req)
			if err != nil {
				t.Errorf("label: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
		if code != exitcode.Human || !strings.Contains(out, "converge:stop label") {
			t.Fatalf("want exit 3 stopped by the label, got %d:\n%s", code, out)
		}
	})
}

// TestREL2_KillAfterPushThenRerun kills `converge pr` (SIGKILL) right after
// its first push, before it can reply, then runs it again: the rerun ends
// two-stable with no duplicate reply, resolve or commit and no lost thread.
// The threads the killed run fixed are answered "addressed" from the
// commit's Converge-Addressed trailers, not fixed again.
func TestREL2_KillAfterPushThenRerun(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	if _, err := exec.LookPath("converge"); err != nil {
		t.Skip("converge is not on PATH (TestMain installs it)")
	}
	hub, demo := startHub(t, 300*time.Millisecond)
	state := t.TempDir()
	killed := killAtFirstPush(t, hub, append(os.Environ(), "CONVERGE_TOKEN="+hub.Tokens().Author), prArgs(hub, demo, state))
	if strings.Contains(killed, "replied") {
		t.Logf("the killed run got a reply out before dying; the rerun must still not repeat it")
	}

	ios, out2, errOut2 := testIO(map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author})
	if code := Run(context.Background(), prArgs(hub, demo, state), ios); code != 0 {
		t.Fatalf("rerun exit %d\nkilled run:\n%s\nrerun:\n%s%s", code, killed, out2, errOut2)
	}
	ios3, out3, _ := testIO(nil)
	if code := Run(context.Background(), []string{"status", "--json", "--state", state}, ios3); code != 0 {
		t.Fatalf("status exit %d", code)
	}
	var runs []runView
	// PR-G3: the rerun continues the killed run (one run, its rounds
	// counted across the crash), it does not start over.
	if err := json.Unmarshal([]byte(out3.String()), &runs); err != nil || len(runs) != 1 || runs[0].Status != "two-stable" {
		t.Errorf("status after kill and rerun: want the one resumed run two-stable, got %s (%v)", out3, err)
	}
	if !strings.Contains(out2.String(), "resumed at round 1") || !strings.Contains(out2.String(), "rounds run                   3") {
		t.Errorf("the rerun did not continue the killed run at round 1:\n%s", out2)
	}
	pr := observe(t, hub, demo.PRURL)
	loopCommits := 0
	for _, c := range pr.Commits {
		if strings.Contains(c.Message, "Converge-Round:") {
			loopCommits++
		}
	}
	if loopCommits != 2 {
		t.Errorf("want the 2 fix commits of the demo, got %d loop commits", loopCommits)
	}
	if len(pr.Threads) != 3 {
		t.Fatalf("want the demo's 3 threads, got %d", len(pr.Threads))
	}
	for _, th := range pr.Threads {
		if !th.IsResolved {
			t.Errorf("thread %s left open", th.ID)
		}
		replies := 0
		for _, c := range th.Comments[1:] {
			if strings.Contains(c.Body, "converge:reply") {
				replies++
			}
		}
		if replies != 1 || !strings.Contains(th.Comments[len(th.Comments)-1].Body, "disposition=addressed") {
			t.Errorf("thread %s: want exactly one addressed reply, got %d:\n%+v", th.ID, replies, th.Comments)
		}
	}
}

// assertNoSecretUnder fails when any file below dir contains the token,
// raw or as the basic-auth header git would send.
func assertNoSecretUnder(t *testing.T, dir, token string) {
	t.Helper()
	forms := repo.Secrets(token)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("%s holds the token", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
