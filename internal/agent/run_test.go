//go:build unix

package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc/proctest"
)

const recordLine = `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"ok","files_changed":[]}`

// script writes a /bin/sh script and returns its argv.
func script(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}
}

// TestAG_T1_RunWithBudget: the time-box rule on the test's clock. The
// budget fires only once the agent has reached the point the case is
// about ($READY written), and never for the cases that end by themselves;
// the grace fires only for the agent deaf to SIGTERM. A run that ends for
// another reason than the case's says so in its result (TimedOut, the
// record), and one that does not end fails at a backstop minutes away.
func TestAG_T1_RunWithBudget(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		grace     time.Duration
		fireGrace bool
		status    Status
		reason    string
		timedOut  bool
		concern   string
	}{
		{name: "finishes in time", body: "echo working; echo '" + recordLine + "'",
			status: StatusComplete},
		{name: "hang is stopped at the budget", body: `echo started; : > "$READY"; sleep 30`,
			status: StatusPartial, reason: ReasonBudgetExceeded, timedOut: true},
		{name: "ignoring SIGTERM gets SIGKILL after the grace period",
			body: `trap '' TERM; echo started; : > "$READY"; while :; do sleep 0.05; done`, grace: 300 * time.Millisecond, fireGrace: true,
			status: StatusPartial, reason: ReasonBudgetExceeded, timedOut: true},
		{name: "record printed before hanging stands",
			body:   "echo '" + recordLine + `'; : > "$READY"; sleep 30`,
			status: StatusComplete, timedOut: true, concern: "stopped at the"},
		{name: "summarises on SIGTERM",
			body: `trap 'echo "{\"status\":\"partial\",\"next_action\":\"finish b.go\",\"needs_extension_minutes\":3,\"summary\":\"a.go done\",\"files_changed\":[\"a.go\"]}"; exit 0' TERM
: > "$READY"
sleep 30 & wait`,
			status: StatusPartial, timedOut: true, concern: "stopped at the"},
		{name: "garbage is unparseable", body: "echo 'all good!'",
			status: StatusBlocked, reason: ReasonUnparseable},
		{name: "non-zero exit keeps a valid record", body: "echo '" + recordLine + "'; exit 3",
			status: StatusComplete, concern: "exited with code 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ready := filepath.Join(t.TempDir(), "ready")
			clock := proctest.NewManualClock()
			type ran struct {
				r   CmdResult
				err error
			}
			out := make(chan ran, 1)
			argv := script(t, tt.body)
			go func() {
				r, err := RunWithBudget(context.Background(), Cmd{
					Argv: argv, Budget: 300 * time.Millisecond, Grace: cmpOr(tt.grace, 5*time.Second), Clock: clock,
					Env: []string{"PATH=/usr/bin:/bin", "READY=" + ready},
				})
				out <- ran{r, err}
			}()
			if tt.timedOut {
				// The agent is where the case needs it (its trap set, its
				// record printed) before its budget ends.
				for {
					if _, err := os.Stat(ready); err == nil {
						break
					}
					select {
					case got := <-out:
						t.Fatalf("ended before its budget fired: %+v, %v", got.r, got.err)
					case <-time.After(10 * time.Millisecond):
					}
				}
				clock.Next(t).Fire() // the budget
				grace := clock.Next(t)
				if grace.D != cmpOr(tt.grace, 5*time.Second) {
					t.Fatalf("grace timer %s, want the Cmd's %s", grace.D, cmpOr(tt.grace, 5*time.Second))
				}
				if tt.fireGrace {
					grace.Fire()
				}
			}
			var got ran
			select {
			case got = <-out:
			case <-time.After(2 * time.Minute):
				t.Fatal("the run did not end")
			}
			res, err := got.r, got.err
			if err != nil {
				t.Fatal(err)
			}
			r := res.Record
			if r.Status != tt.status || r.Reason != tt.reason || res.TimedOut != tt.timedOut {
				t.Fatalf("got %+v timedOut=%v; want %s/%q timedOut=%v\nstdout: %s", r, res.TimedOut, tt.status, tt.reason, tt.timedOut, res.Stdout)
			}
			if tt.concern != "" && !strings.Contains(strings.Join(r.Concerns, "\n"), tt.concern) {
				t.Errorf("concerns %q lack %q", r.Concerns, tt.concern)
			}
			if _, ok := Extend(r, 0); ok != (tt.name == "summarises on SIGTERM") {
				t.Errorf("Extend ok = %v", ok)
			}
		})
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func TestAG_T1_RunWithBudgetKillsDescendants(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The grandchild ignores SIGTERM and detaches from stdout, so only the
	// group SIGKILL ends it.
	// It would outlive the test: only the kill ends it.
	argv := script(t, "(trap '' TERM; exec sleep 1000) >/dev/null 2>&1 & echo $! > "+pidFile+"; echo '"+recordLine+"'")
	res, err := RunWithBudget(context.Background(), Cmd{Argv: argv, Budget: 5 * time.Second, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Status != StatusComplete {
		t.Fatalf("record %+v", res.Record)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, c := range strings.TrimSpace(string(b)) {
		pid = pid*10 + int(c-'0')
	}
	// Gone, not going: the wait is a backstop, a minute, against a kill
	// that never comes.
	if !proctest.WaitGone(pid, time.Minute) {
		t.Fatalf("grandchild %d survived the run", pid)
	}
}

func TestAG_T1_RunWithBudgetContextCancel(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The context ends once the agent runs; the budget is a minute away
	// and the agent would end by itself before it: a run that ignored the
	// context would end without an error.
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(ready); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := RunWithBudget(ctx, Cmd{Argv: script(t, ": > "+ready+"; sleep 30"), Budget: time.Minute, Grace: time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context canceled: the cancel did not stop the process", err)
	}
	if res.TimedOut || res.ExitCode != -1 {
		t.Errorf("timed out %v, exit code %d: want stopped by the cancel", res.TimedOut, res.ExitCode)
	}
	if res.Record.Status == StatusComplete {
		t.Errorf("cancelled run reads as complete: %+v", res.Record)
	}
}

func TestSEC2_RunWithBudgetNilEnvIsScrubbed(t *testing.T) {
	t.Setenv("GH_TOKEN", "ghp_should_not_leak")
	t.Setenv("LANG", "C.UTF-8")
	res, err := RunWithBudget(context.Background(), Cmd{Argv: script(t, "env"), Budget: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "GH_TOKEN") || !strings.Contains(res.Stdout, "LANG=C.UTF-8") {
		t.Errorf("env seen by the agent:\n%s", res.Stdout)
	}
}

func TestRunWithBudgetStartFailure(t *testing.T) {
	if _, err := RunWithBudget(context.Background(), Cmd{Argv: []string{"/nonexistent/agent"}}); err == nil {
		t.Error("want an error for a missing program")
	}
	if _, err := RunWithBudget(context.Background(), Cmd{}); err == nil {
		t.Error("want an error for empty argv")
	}
}

// TestAG_T1_OutputFloodStopsTheRun: an agent that floods its output (yes
// on stdout, or on stderr, both streams counted together) is stopped as
// soon as it passes the bound, long before its budget: the run is not a
// timeout and no error; its record is blocked with reason output-flood,
// the summary naming the bound, and FailureOf makes it a failure of the
// run (AG-T4), never a hand-off of a finding on an agent's say.
func TestAG_T1_OutputFloodStopsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		max     int64
		summary string
	}{
		{"stdout, the default bound", "yes", 0, "the agent wrote more than 64 MiB of output; stopped"},
		{"stderr, a bound of 1 MiB", "yes >&2", 1 << 20, "the agent wrote more than 1 MiB of output; stopped"},
		{"both streams together", "yes & yes >&2; wait", 2 << 20, "the agent wrote more than 2 MiB of output; stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A flood the bound missed would run into the budget: a timeout.
			res, err := RunWithBudget(context.Background(), Cmd{Argv: script(t, tc.body), Budget: time.Minute, MaxRead: tc.max})
			if err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if !res.Flooded || res.TimedOut {
				t.Errorf("flooded %v, timed out %v: want a flood, not a timeout", res.Flooded, res.TimedOut)
			}
			if res.Record.Status != StatusBlocked || res.Record.Reason != ReasonOutputFlood || res.Record.Summary != tc.summary {
				t.Errorf("record = %+v, want blocked %s %q", res.Record, ReasonOutputFlood, tc.summary)
			}
			if len(res.Stdout) > OutputTail || len(res.Stderr) > OutputTail {
				t.Errorf("kept %d and %d bytes, more than the tail", len(res.Stdout), len(res.Stderr))
			}
			f := FailureOf("fixer", Result{Record: res.Record, Output: res.Stdout, Stderr: res.Stderr}, nil)
			if f == nil || !strings.Contains(f.Error(), tc.summary) || strings.Contains(f.Error(), "deadline") {
				t.Errorf("FailureOf = %v, want the run's failure naming the flood", f)
			}
		})
	}
	// Under the bound is no flood.
	res, err := RunWithBudget(context.Background(), Cmd{Argv: script(t, "head -c 100000 /dev/zero | tr '\\0' x; echo; echo '"+recordLine+"'"), Budget: time.Minute, MaxRead: 1 << 20})
	if err != nil || res.Flooded || res.Record.Status != StatusComplete {
		t.Errorf("a run within the bound: %+v, %v", res.Record, err)
	}
}

// TestAG_T1_CLIVersionFloodIsStopped: a CLI whose --version floods is
// stopped at once, no version, not after the minute a hung one gets. This
// one floods (8 MB, past the 1 MiB bound) and then prints a version and
// exits 0: read to its end, it would give that version.
func TestAG_T1_CLIVersionFloodIsStopped(t *testing.T) {
	argv := script(t, "yes | head -c 8000000; echo; echo fake-cli 1.0")
	if v := CLIVersion(context.Background(), argv[1], nil); v != "" {
		t.Errorf("version %q, want none", v)
	}
}
