package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/proc"
)

// End-to-end proofs of AG-T1's time-box: the real binary runs a command
// fixer that hangs, with a child of its own, against the emulator. Each
// attempt of the script appends a line to DIR/attempts, a directory
// outside the worktree named in the script's text (the agent's
// environment is scrubbed):
//
//	N PID CHILD PGID START_NS
//
// N the attempt, PID the shell's own pid, CHILD the pid of what it started
// in the background, PGID its process group, START_NS when it began.

// timeboxBudget is the smallest agent_timeout the config takes.
const timeboxBudget = time.Second

// timeboxHead is the start of every variant: read the task, count the
// attempt, start a child that would outlive the shell, record the pids.
const timeboxHead = `#!/bin/sh
input=$(cat)
log=%DIR%
n=$(( $(cat "$log/n" 2>/dev/null || echo 0) + 1 ))
echo $n > "$log/n"
`

// uncontainedForPIDs: the tests that read the pids a scripted agent
// writes run it uncontained (--unsafe-no-sandbox): in its jail (SEC-7) an
// agent sees its namespace's pids, which name other processes here. They
// prove the uncontained path's own lines (AG-K1's supervisor, REL-2's
// reaping, SEC-2's hidden token), which --unsafe-no-sandbox still keeps;
// the jail's are proven in internal/proc and sec7_hostile_test.go.
const uncontainedForPIDs = "--unsafe-no-sandbox"

// timeboxRecord writes the attempt line, $! being the child the variant
// started, and hangs.
const timeboxRecord = `echo "$n $$ $! $(awk '{print $5}' /proc/$$/stat) $(date +%s%N)" >> "$log/attempts"
while :; do sleep 1; done
`

// timeboxHang hangs until it is stopped; SIGTERM ends it, its child too.
const timeboxHang = timeboxHead + `sleep 1000 &
` + timeboxRecord

// timeboxDeaf ignores SIGTERM on its first attempt, and so does its child:
// only the SIGKILL after the grace period ends them. The second attempt
// hangs like timeboxHang.
const timeboxDeaf = timeboxHead + `if [ "$n" = 1 ]; then
  trap 'echo "$n TERM $(date +%s%N)" >> "$log/signals"' TERM
  sh -c 'trap "" TERM; exec sleep 1000' &
else
  sleep 1000 &
fi
` + timeboxRecord

// timeboxSummarize answers SIGTERM, the cue to summarize, with a partial
// record that names its next action and asks for a minute more (AG-T1).
// The extension run finds "extension":1 in its task, keeps the task, and
// gives up with a reason a human can act on.
const timeboxSummarize = timeboxHead + `case "$input" in
*'"extension":1'*)
  printf '%s\n' "$input" > "$log/extension-task"
  echo '{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"extension used","files_changed":[],"reason":"gave up in the extension: the rename needs a human"}'
  exit 0;;
esac
summarize() {
  echo "$n TERM $(date +%s%N)" >> "$log/signals"
  echo '{"status":"partial","next_action":"finish renaming total in summary.go","needs_extension_minutes":1,"summary":"renamed half of it","files_changed":[]}'
  exit 0
}
trap summarize TERM
sleep 1000 &
` + timeboxRecord

// TestAG_T1_HungAgentStoppedAtBudget: a fixer that hangs is stopped at
// its budget, with everything it started, retried once (AG-T4) and then
// the run ends errored naming the agent; the forge shows nothing pushed
// and no reply. A fixer deaf to SIGTERM is killed after the grace period;
// one that answers SIGTERM with a partial record and a concrete next
// action gets its extension, and its record is the outcome.
func TestAG_T1_HungAgentStoppedAtBudget(t *testing.T) {
	t.Parallel() // each subtest has its own emulator and state
	t.Run("hangs with a child", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		r := runTimebox(t, timeboxHang)
		r.assertErroredNothingWritten(t)
		as := r.attempts(t)
		if len(as) != 2 {
			t.Fatalf("want 2 attempts (one retry, AG-T4), got %d", len(as))
		}
		// SIGTERM ends this script: each attempt lasts about the budget.
		assertTook(t, "attempt 1", as[1].start.Sub(as[0].start), timeboxBudget-timeboxLate, timeboxBudget+timeboxSlack)
		assertTook(t, "attempt 2 and the end of the run", r.end.Sub(as[1].start), timeboxBudget-timeboxLate, timeboxBudget+timeboxSlack)
		r.assertAllGone(t, as)
	})
	t.Run("ignores SIGTERM", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		r := runTimebox(t, timeboxDeaf)
		r.assertErroredNothingWritten(t)
		as := r.attempts(t)
		if len(as) != 2 {
			t.Fatalf("want 2 attempts (one retry, AG-T4), got %d", len(as))
		}
		sig := r.read(t, "signals")
		if !strings.HasPrefix(sig, "1 TERM ") {
			t.Errorf("attempt 1 was not sent SIGTERM at the budget (its trap logged %q)", sig)
		}
		// SIGTERM at the budget, SIGKILL after the grace: no sooner, as
		// the agent was owed its time to summarize, and no later.
		assertTook(t, "attempt 1", as[1].start.Sub(as[0].start), timeboxBudget+agent.DefaultGrace-timeboxLate, timeboxBudget+agent.DefaultGrace+timeboxSlack)
		assertTook(t, "attempt 2 and the end of the run", r.end.Sub(as[1].start), timeboxBudget-timeboxLate, timeboxBudget+timeboxSlack)
		r.assertAllGone(t, as)
	})
	t.Run("summarizes at SIGTERM", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		r := runTimebox(t, timeboxSummarize)
		if r.code != exitcode.Human || !strings.Contains(r.out, "converge: handed-off") {
			t.Fatalf("want handed-off (exit 3) from the extension's record, got exit %d:\n%s", r.code, r.out)
		}
		for _, want := range []string{"stopped partway (finish renaming total in summary.go)", "extending by 1m", "(extension 1 of 2)"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("the partial record at the budget earned no 1m extension (no %q):\n%s", want, r.out)
			}
		}
		if strings.Contains(r.out, "could not run") {
			t.Errorf("a run that summarized at its budget was taken for a failure:\n%s", r.out)
		}
		task := r.read(t, "extension-task")
		if !strings.Contains(task, `"budget_seconds":60`) || !strings.Contains(task, `"extension":1`) {
			t.Errorf("the extension run's task lacks the granted minute: %s", task)
		}
		as := r.attempts(t)
		if len(as) == 0 {
			t.Fatal("no attempt was recorded")
		}
		if got := strings.Count(r.read(t, "signals"), " TERM "); got != len(as) {
			t.Errorf("%d runs hung, %d were told to summarize", len(as), got)
		}
		r.assertAllGone(t, as)
		pr := observe(t, r.hub, r.prURL)
		assertNotReady(t, pr)
		if pr.HeadSHA != r.head {
			t.Errorf("a round whose fixer changed nothing pushed: %s → %s", r.head, pr.HeadSHA)
		}
		escalated := 0
		for _, th := range pr.Threads {
			for _, c := range convergeReplies(th) {
				if strings.Contains(c, "disposition=escalated") && strings.Contains(c, "the rename needs a human") {
					escalated++
				}
			}
		}
		if escalated == 0 {
			t.Errorf("no thread was escalated with the extension's reason:\n%s", r.out)
		}
		assertNoAgentFailureOnForge(t, pr)
	})
}

// timeboxSlack is what a loaded machine may add to a time-box: starting
// the shell, resetting the worktree between attempts, the run's last
// writes to the forge. The upper bound only has to tell an agent stopped
// at its budget from one never stopped (the scripts sleep 1000 s), so it
// is wide: a CI machine at a load average of 10 added 6 s and more.
const timeboxSlack = 30 * time.Second

// timeboxLate is how much of its time-box may pass before a script notes
// its start: the time-box runs from the start of the process.
const timeboxLate = 500 * time.Millisecond

// timeboxRun is one `converge pr` run with a time-boxed script agent.
type timeboxRun struct {
	dir         string // the script's log directory
	code        exitcode.Code
	out         string
	end         time.Time
	hub         *fakehub.Hub
	prURL, head string
}

func runTimebox(t *testing.T, script string) *timeboxRun {
	t.Helper()
	hub, demo := startHub(t, 100*time.Millisecond)
	r := &timeboxRun{dir: t.TempDir(), prURL: demo.PRURL}
	r.head = observe(t, hub, demo.PRURL).HeadSHA
	path := filepath.Join(r.dir, "agent.sh")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(script, "%DIR%", shellQuote(r.dir))), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append(prArgs(hub, demo, t.TempDir()), "--agent", "command", "--agent-cmd", path,
		"--review-agent", "suggest", "--agent-timeout", timeboxBudget.String(), uncontainedForPIDs)
	r.code, r.out = runBin(t, authorEnv(hub), args...)
	r.end = time.Now()
	t.Cleanup(r.killLeftovers)
	r.hub = hub
	return r
}

// assertErroredNothingWritten: a fixer stopped at its budget twice
// without a status record ends the run errored naming the agent (AG-T4),
// and the forge shows nothing of it: no push, no reply, no success mark.
func (r *timeboxRun) assertErroredNothingWritten(t *testing.T) {
	t.Helper()
	if r.code != exitcode.Error || !strings.Contains(r.out, "converge: errored") && !strings.Contains(r.out, "could not run") {
		t.Fatalf("want errored (exit 1), got exit %d:\n%s", r.code, r.out)
	}
	want := fmt.Sprintf("agent command could not run: stopped at the %s budget without a status record", timeboxBudget)
	if !strings.Contains(r.out, want) {
		t.Errorf("the run does not end naming the agent and its stop (%q):\n%s", want, r.out)
	}
	if n := strings.Count(r.out, "could not run (attempt "); n != 2 {
		t.Errorf("want both attempts reported, got %d:\n%s", n, r.out)
	}
	pr := observe(t, r.hub, r.prURL)
	assertNotReady(t, pr)
	if pr.HeadSHA != r.head {
		t.Errorf("a stopped fixer's round pushed: %s → %s", r.head, pr.HeadSHA)
	}
	for _, th := range pr.Threads {
		for _, c := range convergeReplies(th) {
			t.Errorf("a stopped fixer produced a PR reply: %q", c)
		}
	}
	assertNoAgentFailureOnForge(t, pr)
}

// assertNoAgentFailureOnForge: an agent that could not run is the run's
// error, never a disposition on the PR (AG-T4).
func assertNoAgentFailureOnForge(t *testing.T, pr *forge.PullRequest) {
	t.Helper()
	var bodies []string
	for _, th := range pr.Threads {
		for _, c := range th.Comments {
			bodies = append(bodies, c.Body)
		}
	}
	for _, c := range pr.IssueComments {
		bodies = append(bodies, c.Body)
	}
	for _, b := range bodies {
		for _, bad := range []string{agent.ReasonUnparseable, agent.ReasonBudgetExceeded} {
			if strings.Contains(b, bad) {
				t.Errorf("a comment on the PR says %q: %q", bad, b)
			}
		}
	}
}

type timeboxAttempt struct {
	n, pid, child, pgid int
	start               time.Time
}

func (r *timeboxRun) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		t.Fatalf("the agent's %s: %v\nconverge said:\n%s", name, err, r.out)
	}
	return string(b)
}

func (r *timeboxRun) attempts(t *testing.T) []timeboxAttempt {
	t.Helper()
	var out []timeboxAttempt
	for _, line := range strings.Split(strings.TrimSpace(r.read(t, "attempts")), "\n") {
		f := strings.Fields(line)
		var v [5]int64
		if len(f) != len(v) {
			t.Fatalf("attempt line %q", line)
		}
		for i := range f {
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatalf("attempt line %q: %v", line, err)
			}
			v[i] = x
		}
		out = append(out, timeboxAttempt{n: int(v[0]), pid: int(v[1]), child: int(v[2]), pgid: int(v[3]), start: time.Unix(0, v[4])})
	}
	return out
}

// assertAllGone: once converge has ended, neither the agent's shell, nor
// its child, nor anything else of its process group lives. A zombie
// counts as gone: it was killed, and reaping it is up to whoever
// inherited it (in a container, a pid 1 that may be slow at it).
func (r *timeboxRun) assertAllGone(t *testing.T, as []timeboxAttempt) {
	t.Helper()
	for _, a := range as {
		if a.pgid <= 1 || a.pgid == syscall.Getpgrp() {
			t.Errorf("attempt %d ran in process group %d, not one of its own", a.n, a.pgid)
			continue
		}
		for _, pid := range []int{a.pid, a.child} {
			if live(pid) {
				t.Errorf("attempt %d: pid %d outlived the run", a.n, pid)
			}
		}
		if left := groupMembers(a.pgid); len(left) > 0 {
			t.Errorf("attempt %d: processes %v of its group %d outlived the run", a.n, left, a.pgid)
		}
	}
}

// killLeftovers ends what a failing run left, so a red test does not
// leave sleeps behind.
func (r *timeboxRun) killLeftovers() {
	b, err := os.ReadFile(filepath.Join(r.dir, "attempts"))
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if pgid, err := strconv.Atoi(f[3]); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

func assertTook(t *testing.T, what string, took, least, most time.Duration) {
	t.Helper()
	if took < least || took > most {
		t.Errorf("%s took %s, want between %s and %s", what, took.Round(time.Millisecond), least, most)
	}
}

// live: the process exists and is not a zombie. Signal delivery and exit
// are asynchronous, so a process killed a moment ago gets a short while.
func live(pid int) bool {
	deadline := time.Now().Add(2 * time.Second)
	for proc.Live(pid) {
		if time.Now().After(deadline) {
			return true
		}
		<-time.After(20 * time.Millisecond)
	}
	return false
}

// groupMembers lists the live, non-zombie processes of process group pgid.
func groupMembers(pgid int) []int {
	var out []int
	for _, p := range proc.Processes() {
		if p.PGID == pgid && !p.Zombie && live(p.PID) {
			out = append(out, p.PID)
		}
	}
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
