package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/proc/proctest"
)

// readPids reads the pid each of files holds; the test fails when one was
// never written.
func readPids(t *testing.T, files ...string) []int {
	t.Helper()
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("the process writing %s never started: %v", filepath.Base(f), err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// stubborn is a shell command that writes its pid to file and then waits,
// ignoring SIGTERM: only SIGKILL ends it.
func stubborn(file string) string {
	return `sh -c 'trap "" TERM; echo $$ > ` + file + `; exec sleep 1000'`
}

// TestAG_T1_StopReachesWhatLeftTheGroup: an agent's tool that moved to a
// session and process group of its own (setsid) is still part of the run,
// and is gone when Run returns at the budget, as is one that stayed.
func TestAG_T1_StopReachesWhatLeftTheGroup(t *testing.T) {
	dir := t.TempDir()
	own, stay := filepath.Join(dir, "setsid.pid"), filepath.Join(dir, "stay.pid")
	script := "setsid " + stubborn(own) + " &\n" +
		stubborn(stay) + " &\n" +
		"trap '' TERM; while :; do sleep 0.05; done"
	r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", script}, Trusted: true,
		Budget: 3 * time.Second, Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut {
		t.Fatalf("result %+v, want stopped at the budget", r)
	}
	for i, pid := range readPids(t, own, stay) {
		if proctest.Alive(pid) {
			t.Errorf("process %d (%s) alive after Run returned", pid, []string{"setsid", "same group"}[i])
		}
	}
}

// TestAG_T1_WhatTheProcessLeftIsGoneWhenRunReturns: the process ends by
// itself, leaving children that ignore SIGTERM; Run kills them and
// returns only once they are gone, since its caller may reset the tree
// they were writing.
func TestAG_T1_WhatTheProcessLeftIsGoneWhenRunReturns(t *testing.T) {
	dir := t.TempDir()
	var files []string
	var script strings.Builder
	for i := range 20 {
		f := filepath.Join(dir, strconv.Itoa(i)+".pid")
		files = append(files, f)
		script.WriteString(stubborn(f) + " &\n")
	}
	script.WriteString("for f in " + strings.Join(files, " ") + "; do while [ ! -s $f ]; do sleep 0.01; done; done\n")
	if _, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", script.String()}, Budget: 20 * time.Second, Trusted: true}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range readPids(t, files...) {
		if proctest.Alive(pid) {
			t.Errorf("process %d alive after Run returned", pid)
		}
	}
}

// TestAG_T1_GraceOutlivesAWrapper: the leader is a wrapper shell that
// SIGTERM ends at once; the agent it runs answers SIGTERM with its record,
// and gets the grace period to do it — under the supervisor (AG-K1) and
// run directly (git runs, systems without the supervisor) alike. The
// clock is the test's: the budget fires once the agent is listening for
// SIGTERM, and the grace timer never does, so Run can only return because
// the wait ended when the agent did.
func TestAG_T1_GraceOutlivesAWrapper(t *testing.T) {
	agent := `trap 'sleep 0.3; echo "{\"status\":\"partial\"}"; exit 0' TERM; echo listening; while :; do sleep 0.05; done`
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "supervised", true: "direct"}[direct], func(t *testing.T) {
			clock := proctest.NewManualClock()
			listening := make(chan struct{})
			var once sync.Once
			type ran struct {
				r   proc.Result
				err error
			}
			out := make(chan ran, 1)
			go func() {
				r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", "sh -c '" + strings.ReplaceAll(agent, "'", `'\''`) + "'; echo wrapper-went-on"},
					Budget: 5 * time.Minute, Grace: 5 * time.Minute, Direct: direct, Clock: clock,
					OnLine: func(_ bool, line string) {
						if line == "listening" {
							once.Do(func() { close(listening) })
						}
					}})
				out <- ran{r, err}
			}()
			select {
			case <-listening:
			case got := <-out:
				t.Fatalf("ended before its budget fired: %+v, %v", got.r, got.err)
			}
			clock.Next(t).Fire() // the budget
			grace := clock.Next(t)
			if grace.D != 5*time.Minute {
				t.Fatalf("grace timer %s, want the Spec's 5m", grace.D)
			}
			// The grace timer is not fired: only the end of the agent (and
			// of all it started) can end the wait. The backstop is for a
			// Run that waits for the grace regardless, which would hang.
			var got ran
			select {
			case got = <-out:
			case <-time.After(2 * time.Minute):
				grace.Fire()
				t.Fatal("Run did not return when the agent ended in its grace: it waited for the grace timer")
			}
			if got.err != nil || !got.r.TimedOut || !strings.Contains(got.r.Stdout, `{"status":"partial"}`) {
				t.Errorf("result %+v, %v; want the record the agent printed in its grace period", got.r, got.err)
			}
		})
	}
}
