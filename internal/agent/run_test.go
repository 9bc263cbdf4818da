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

func TestAG_T1_RunWithBudget(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		grace    time.Duration
		status   Status
		reason   string
		timedOut bool
		concern  string
		maxTime  time.Duration
	}{
		{name: "finishes in time", body: "echo working; echo '" + recordLine + "'",
			status: StatusComplete, maxTime: time.Second},
		{name: "hang is stopped at the budget", body: "echo started; sleep 30",
			status: StatusPartial, reason: ReasonBudgetExceeded, timedOut: true, maxTime: 2 * time.Second},
		{name: "ignoring SIGTERM gets SIGKILL after the grace period",
			body: "trap '' TERM; echo started; while :; do sleep 0.05; done", grace: 300 * time.Millisecond,
			status: StatusPartial, reason: ReasonBudgetExceeded, timedOut: true, maxTime: 2 * time.Second},
		{name: "record printed before hanging stands",
			body:   "echo '" + recordLine + "'; sleep 30",
			status: StatusComplete, timedOut: true, concern: "stopped at the", maxTime: 2 * time.Second},
		{name: "summarises on SIGTERM",
			body: `trap 'echo "{\"status\":\"partial\",\"next_action\":\"finish b.go\",\"needs_extension_minutes\":3,\"summary\":\"a.go done\",\"files_changed\":[\"a.go\"]}"; exit 0' TERM
sleep 30 & wait`,
			status: StatusPartial, timedOut: true, concern: "stopped at the", maxTime: 2 * time.Second},
		{name: "garbage is unparseable", body: "echo 'all good!'",
			status: StatusBlocked, reason: ReasonUnparseable, maxTime: time.Second},
		{name: "non-zero exit keeps a valid record", body: "echo '" + recordLine + "'; exit 3",
			status: StatusComplete, concern: "exited with code 3", maxTime: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := RunWithBudget(context.Background(), Cmd{
				Argv: script(t, tt.body), Budget: 300 * time.Millisecond, Grace: cmpOr(tt.grace, 5*time.Second), Env: []string{"PATH=/usr/bin:/bin"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > tt.maxTime {
				t.Errorf("took %s, want under %s", el, tt.maxTime)
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
	argv := script(t, "(trap '' TERM; exec sleep 30) >/dev/null 2>&1 & echo $! > "+pidFile+"; echo '"+recordLine+"'")
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
	if !proctest.WaitGone(pid, 2*time.Second) {
		t.Fatalf("grandchild %d survived the run", pid)
	}
}

func TestAG_T1_RunWithBudgetContextCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := RunWithBudget(ctx, Cmd{Argv: script(t, "sleep 30"), Budget: time.Minute, Grace: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Error("cancel did not stop the process")
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
			start := time.Now()
			res, err := RunWithBudget(context.Background(), Cmd{Argv: script(t, tc.body), Budget: time.Minute, MaxRead: tc.max})
			if err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("the flood ran %s, want it stopped promptly", el)
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
// stopped at once, no version, not after the minute a hung one gets.
func TestAG_T1_CLIVersionFloodIsStopped(t *testing.T) {
	argv := script(t, "yes")
	start := time.Now()
	if v := CLIVersion(context.Background(), argv[1], nil); v != "" {
		t.Errorf("version %q, want none", v)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("took %s, want it stopped promptly", el)
	}
}
