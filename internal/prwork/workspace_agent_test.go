//go:build unix

package prwork

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/agent/suggest"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/proc/proctest"
)

const okRecord = `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["notes.txt"]}`

// localPR is a PR on a bare repository in a temp dir: main holds base,
// feature adds head on top. It returns the PR as Fix sees it.
func localPR(t testing.TB, base, head map[string]string) (*forge.PullRequest, string) {
	t.Helper()
	return seedPR(t, base, head, nil)
}

// seedPR builds that repository; extra, when set, runs in the seed work
// tree before the head commit (e.g. to plant a symlink).
func seedPR(t testing.TB, base, head map[string]string, extra func(seed string)) (*forge.PullRequest, string) {
	t.Helper()
	root := t.TempDir()
	bare, work := filepath.Join(root, "origin.git"), filepath.Join(root, "seed")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = gitTestEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(files map[string]string) {
		for name, content := range files {
			p := filepath.Join(work, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git(root, "init", "-q", "--bare", "-b", "main", bare)
	git(root, "init", "-q", "-b", "main", work)
	write(base)
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "base")
	baseSHA := git(work, "rev-parse", "HEAD")
	git(work, "checkout", "-q", "-b", "feature")
	write(head)
	if extra != nil {
		extra(work)
	}
	git(work, "add", "-A")
	git(work, "commit", "-q", "--allow-empty", "-m", "head")
	headSHA := git(work, "rev-parse", "HEAD")
	git(work, "push", "-q", bare, "main", "feature")
	return &forge.PullRequest{
		Ref:     forge.PRRef{Host: "local.test", Owner: "acme", Repo: "notes", Number: 1},
		Number:  1,
		HeadRef: "feature", HeadSHA: headSHA,
		BaseRef: "main", BaseSHA: baseSHA,
	}, bare
}

func gitTestEnv() []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
}

func remoteHead(t *testing.T, bare string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", bare, "rev-parse", "refs/heads/feature").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func testWorkspace(t testing.TB, bare string, a agent.Agent, testCmd string) *GitWorkspace {
	ws := &GitWorkspace{
		Checkout: Checkout{
			Root:     t.TempDir(),
			RunID:    "r-test",
			CloneURL: bare,
			GitEnv:   gitTestEnv(),
		},
		Agent:    a,
		AgentEnv: agent.ScrubEnv(os.Environ()),
		Budget:   time.Minute,
		Author:   "converge",
		Email:    "converge@example.com",
	}
	if testCmd != "" {
		ws.TestCmd = []string{"sh", "-c", testCmd}
	} else {
		// These repositories have no tests: their fixes are pushed
		// untested only when allowed (PR-V4).
		ws.AllowUntested = true
	}
	return ws
}

// counting counts an agent's runs.
type counting struct {
	agent.Agent
	runs atomic.Int32
}

func (c *counting) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	c.runs.Add(1)
	return c.Agent.Run(ctx, t)
}

func commandAgent(t *testing.T, body string, grace time.Duration) *counting {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := command.New([]string{"sh", "-c", p}, command.Options{Name: "fixer", Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	return &counting{Agent: a}
}

// fixWithRecord runs Fix on a one-note PR with a fixer that always ends
// with record, and says how often the fixer ran.
func fixWithRecord(t *testing.T, record string) (prloop.FixResult, int32) {
	t.Helper()
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	a := commandAgent(t, "cat >/dev/null; echo '"+record+"'", 0)
	res, err := testWorkspace(t, bare, a, "").Fix(context.Background(), pr, 1, notesFinding)
	if err != nil {
		t.Fatal(err)
	}
	return res, a.runs.Load()
}

var notesFinding = []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "notes.txt", EndLine: 1, Summary: "fix the note"}}

// TestAG_T4_AgentThatCannotRunEndsTheRun: an agent that crashes, prints
// garbage, exits non-zero without a record, hangs past its budget or does
// not exist is tried exactly twice, then Fix returns a *agent.RunFailure
// naming the agent with its last stderr lines — no disposition, no push.
func TestAG_T4_AgentThatCannotRunEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		missing    bool
		what       string // in RunFailure.What
		stderr     string // in RunFailure.Stderr
	}{
		{name: "crash", body: "echo 'segfault in fixer' >&2; echo partial; kill -SEGV $$", what: "no valid status record", stderr: "segfault in fixer"},
		{name: "garbage", body: "echo 'thinking hard' >&2; echo 'I fixed everything!'", what: "last line is not a JSON object", stderr: "thinking hard"},
		{name: "non-zero exit without record", body: "echo 'error: model quota exhausted' >&2; exit 3", what: "exit code 3", stderr: "model quota exhausted"},
		{name: "hang past the budget", body: "echo 'waiting on the model' >&2; sleep 30", what: "budget without a status record", stderr: "waiting on the model"},
		{name: "missing program", missing: true, what: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
			var a *counting
			if tc.missing {
				cmd, err := command.New([]string{filepath.Join(t.TempDir(), "no-such-fixer")}, command.Options{Name: "fixer"})
				if err != nil {
					t.Fatal(err)
				}
				a = &counting{Agent: cmd}
			} else {
				a = commandAgent(t, tc.body, 200*time.Millisecond)
			}
			ws := testWorkspace(t, bare, a, "")
			ws.Budget = 300 * time.Millisecond
			res, err := ws.Fix(context.Background(), pr, 1, notesFinding)
			var rf *agent.RunFailure
			if !errors.As(err, &rf) {
				t.Fatalf("Fix = %+v, %v; want a RunFailure", res, err)
			}
			if got := a.runs.Load(); got != 2 {
				t.Errorf("agent ran %d times, want 2 (one retry)", got)
			}
			if rf.Agent != "fixer" || !strings.Contains(strings.ToLower(rf.What), strings.ToLower(tc.what)) || !strings.Contains(rf.Stderr, tc.stderr) {
				t.Errorf("failure %+v, want what %q and stderr %q", rf, tc.what, tc.stderr)
			}
			if msg := err.Error(); !strings.Contains(msg, "agent fixer could not run") || strings.Contains(msg, "unparseable") {
				t.Errorf("error %q", msg)
			}
			if len(res.Addressed)+len(res.Blocked) != 0 {
				t.Errorf("a failed run gave dispositions: %+v", res)
			}
			if remoteHead(t, bare) != pr.HeadSHA {
				t.Error("a failed agent run pushed")
			}
		})
	}
}

// TestAG_T4_BlockedRecordIsAHandOffWithItsReason: a valid blocked record is
// the agent's answer, run once: a hand-off quoting its reason, or, without
// one, the record's own words — never an empty reason.
func TestAG_T4_BlockedRecordIsAHandOffWithItsReason(t *testing.T) {
	for _, tc := range []struct{ name, record, want string }{
		{"reason", `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"x","files_changed":[],"reason":"needs the API owners decision"}`, "needs the API owners decision"},
		{"next action", `{"status":"blocked","next_action":"ask which format the parser expects","needs_extension_minutes":0,"summary":"","files_changed":[]}`, "ask which format the parser expects"},
		{"summary", `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"the note is generated","files_changed":[]}`, "the note is generated"},
		{"nothing", `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[]}`, "the agent reported blocked without a reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, runs := fixWithRecord(t, tc.record)
			if len(res.Blocked) != 1 || res.Blocked[0].Reason != tc.want || runs != 1 {
				t.Errorf("blocked %+v after %d runs, want reason %q after 1", res.Blocked, runs, tc.want)
			}
		})
	}
}

// TestAG_T5_RedBaselineJudgesFixesAgainstIt: tests red on the PR's head
// before any fix are the baseline. A fix adding no failure is kept and
// pushed; one adding a failure is handed off quoting that failure, and
// every hand-off says the head was red already. The head is tested once,
// and the pushed head's run is reused as its baseline.
func TestAG_T5_RedBaselineJudgesFixesAgainstIt(t *testing.T) {
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n", "other.txt": "x\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	runs := filepath.Join(t.TempDir(), "runs")
	// Always red with TestAlways; TestNotes fails too once notes.txt holds
	// BREAK.
	testCmd := `echo run >> ` + runs + `
echo "=== RUN   TestAlways"
echo "--- FAIL: TestAlways (0.00s)"
echo "    always_test.go:3: broken on main too"
if grep -q BREAK notes.txt; then echo "--- FAIL: TestNotes (0.01s)"; echo "    notes_test.go:9: notes.txt is broken"; fi
echo FAIL
printf 'FAIL\texample.com/notes\t0.0%ss\n' $$
exit 1`
	a := commandAgent(t, `task=$(cat)
case "$task" in *'"id":"T-break"'*) echo BREAK >> notes.txt;; esac
case "$task" in *'"id":"T-ok"'*) echo fixed >> other.txt;; esac
echo '`+okRecord+`'`, 0)
	ws := testWorkspace(t, bare, a, testCmd)
	findings := []prloop.Finding{
		{ID: "T-break", ThreadID: "T-break", Path: "notes.txt", EndLine: 2, Summary: "break it"},
		{ID: "T-ok", ThreadID: "T-ok", Path: "other.txt", EndLine: 1, Summary: "fix it"},
	}
	res, err := ws.Fix(context.Background(), pr, 1, findings)
	if err != nil {
		t.Fatal(err)
	}
	if !res.BaselineRed || !strings.Contains(res.BaselineTail, "--- FAIL: TestAlways") || !strings.Contains(res.BaselineTail, "broken on main too") {
		t.Errorf("baseline red %v tail %q", res.BaselineRed, res.BaselineTail)
	}
	if len(res.Addressed) != 1 || res.Addressed[0] != "T-ok" || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA {
		t.Fatalf("addressed %v commit %q: want T-ok kept and pushed against the red baseline", res.Addressed, res.CommitSHA)
	}
	if len(res.Blocked) != 1 || res.Blocked[0].ID != "T-break" {
		t.Fatalf("blocked %+v, want T-break", res.Blocked)
	}
	r := res.Blocked[0].Reason
	t.Logf("hand-off reason: %s", r)
	for _, want := range []string{"tests fail with this fix: --- FAIL: TestNotes", "notes.txt is broken", "already red on the PR's head before any fix: --- FAIL: TestAlways"} {
		if !strings.Contains(r, want) {
			t.Errorf("reason %q lacks %q", r, want)
		}
	}
	if strings.Contains(strings.SplitN(r, ";", 2)[0], "TestAlways") {
		t.Errorf("the fix is blamed for the baseline's failure: %q", r)
	}
	// baseline, all fixes, all fixes again with the failing output
	// (PR-S10), each alone (2), the kept one again.
	if n := countLines(t, runs); n != 6 {
		t.Errorf("tests ran %d times, want 6", n)
	}

	// The next round on the pushed head reuses its test run as baseline.
	pr.HeadSHA = res.CommitSHA
	res2, err := ws.Fix(context.Background(), pr, 2, []prloop.Finding{{ID: "T-ok", ThreadID: "T-ok2", Path: "other.txt", EndLine: 1, Summary: "again"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, runs); n != 7 || !res2.BaselineRed || len(res2.Addressed) != 1 {
		t.Errorf("round 2: %d test runs (want 7), result %+v", n, res2)
	}
}

// TestAG_T5_TestsStoppedAtTheirBudget: a test run that hangs is stopped at
// TestBudget with its whole process group, and counts as red with the
// reason "tests timed out after D". The hang outlives the test: only the
// budget ends the run, and only the group's kill its grandchild. The
// context is a backstop minutes away: a run it ended would not read as
// timed out.
func TestAG_T5_TestsStoppedAtTheirBudget(t *testing.T) {
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	pids := filepath.Join(t.TempDir(), "pids")
	// Green on the head; hangs (in a grandchild) once the fix is in.
	testCmd := `if grep -q HANG notes.txt; then sleep 1000 & echo $! >> ` + pids + `; wait; fi`
	a := commandAgent(t, "cat >/dev/null; echo HANG >> notes.txt; echo '"+okRecord+"'", 0)
	ws := testWorkspace(t, bare, a, testCmd)
	ws.TestBudget = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := ws.Fix(ctx, pr, 1, notesFinding)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Fix ended at the backstop, not at the test budget: %+v", res)
	}
	if res.BaselineRed || len(res.Blocked) != 1 || res.Blocked[0].Reason != "tests timed out after 300ms" || res.CommitSHA != "" {
		t.Fatalf("result %+v, want the fix blocked by a test time-out and nothing pushed", res)
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		// Gone, not going: a minute is a backstop against a kill that
		// never comes.
		if !proctest.WaitGone(pid, time.Minute) {
			t.Fatalf("test process %d outlived its budget", pid)
		}
	}
}

// TestPR_S9_WorkspacePassesReviewedLines: the fix task carries what the
// reviewer saw, so the suggest backend refuses a suggestion whose lines
// changed since (case 8 of issue 6) instead of writing it blind.
func TestPR_S9_WorkspacePassesReviewedLines(t *testing.T) {
	pr, bare := localPR(t, map[string]string{"NOTES.md": "# Notes\nalpha\nbeta\n"}, map[string]string{"NOTES.md": "# Notes\nintro\nalpha\nbeta\n"})
	body := "```suggestion\nALPHA\n```"
	findings := []prloop.Finding{
		// Written on the base at line 2 ("alpha"); the head moved it to 3,
		// and the thread's numbers are stale.
		{ID: "T-stale", ThreadID: "T-stale", Path: "NOTES.md", StartLine: 2, EndLine: 2, Summary: body,
			Outdated: true, OrigStart: 2, OrigEnd: 2, OriginalCommit: pr.BaseSHA},
	}
	res, err := testWorkspace(t, bare, suggest.New(), "").Fix(context.Background(), pr, 1, findings)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blocked) != 1 || !strings.HasPrefix(res.Blocked[0].Reason, suggest.ReasonStale) || res.CommitSHA != "" {
		t.Fatalf("result %+v, want the stale suggestion handed off and nothing pushed", res)
	}
}

// TestAG_T5_JudgeComparesFailureLines pins how a red run is compared with
// a red baseline.
func TestAG_T5_JudgeComparesFailureLines(t *testing.T) {
	red := func(out string, code int) testRun { return testRun{out: out, code: code, budget: time.Minute} }
	goOut := "--- FAIL: TestA (0.00s)\n    a_test.go:1: bad\nFAIL\nFAIL\tpkg\t0.010s\n"
	for _, tc := range []struct {
		name     string
		base, tr testRun
		want     string // "" accepts; else a substring of the verdict
	}{
		{"green run", red(goOut, 1), red("ok", 0), ""},
		{"green baseline, red run", red("", 0), red("boom\n", 2), "boom"},
		{"green baseline, silent red run", red("", 0), red("", 2), "exit status 2, no output"},
		{"same failures, other timings", red(goOut, 1), red(strings.ReplaceAll(goOut, "0.0", "1.2"), 1), ""},
		{"new failing test", red(goOut, 1), red(goOut+"--- FAIL: TestB (0.00s)\n    b_test.go:2: worse\n", 1), "--- FAIL: TestB (0.00s) | b_test.go:2: worse"},
		{"build now broken", red(goOut, 1), red("FAIL\tpkg [build failed]\n", 1), "FAIL pkg [build failed]"},
		{"tap renumbered", red("not ok 1 - a\n", 1), red("ok 1 - new\nnot ok 2 - a\n", 1), ""},
		{"no failure lines, same status", red("broken\n", 1), red("still broken\n", 1), ""},
		{"no failure lines, other status", red("broken\n", 1), red("worse\n", 2), "exit status 2, was 1"},
		{"red without failure lines on a baseline with some", red(goOut, 1), red("panic: boom\n", 2), "panic: boom"},
		{"timed out", red(goOut, 1), testRun{timedOut: true, code: -1, budget: 10 * time.Minute}, "tests timed out after 10m"},
	} {
		got := judge(&tc.base, tc.tr)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: judge = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
