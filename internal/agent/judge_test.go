//go:build unix

package agent

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestAG_B1_JudgeKindsAreReadOnly: the judges' kinds and the review's are
// read-only; a fix, an iteration of the done-check loop and a task of no
// kind edit.
func TestAG_B1_JudgeKindsAreReadOnly(t *testing.T) {
	for kind, want := range map[string]bool{
		TaskKindReview: true, TaskKindRecap: true, TaskKindClassify: true, TaskKindJudge: true,
		TaskKindFix: false, "": false, "iterate": false, "Judge": false,
	} {
		if got := ReadOnly(kind); got != want {
			t.Errorf("ReadOnly(%q) = %v, want %v", kind, got, want)
		}
		if got := IsJudge(kind); got != (want && kind != TaskKindReview) {
			t.Errorf("IsJudge(%q) = %v", kind, got)
		}
	}
}

// TestAG_B1_RunCLIReturnsAJudgesVerdictRaw: a CLI judge's final message is
// its verdict, returned as it is for the judge's own schema — also when it
// is no status record (the done-check loop's verdict) — and the record
// says only how the process ended: complete at a normal exit, blocked when
// the CLI reported a failure or exited non-zero, partial at the budget.
// The same final message from a fix run is read as a status record and is
// unparseable (AG-T3).
func TestAG_B1_RunCLIReturnsAJudgesVerdictRaw(t *testing.T) {
	const verdict = `{"verdict":"done","reasons":["the check passes"],"missing":[]}`
	run := func(kind, body string, failure string) Result {
		t.Helper()
		budget := 20 * time.Second
		if strings.Contains(body, "sleep") {
			budget = 300 * time.Millisecond
		}
		res, err := RunCLI(context.Background(), Task{Kind: kind, Workdir: t.TempDir(), Budget: budget, Prompt: "judge this"}, CLIRun{
			Backend: "fake", Name: "judge-fake", Argv: script(t, body), Grace: 100 * time.Millisecond,
			Record: ParseStatus,
			Read: func(stdout string) CLIOutput {
				return CLIOutput{Final: strings.TrimSpace(stdout), ReviewFailure: failure}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, kind := range []string{TaskKindRecap, TaskKindClassify, TaskKindJudge} {
		r := run(kind, "cat >/dev/null; echo '"+verdict+"'", "")
		if r.Output != verdict || r.Record.Status != StatusComplete {
			t.Errorf("%s: output %q record %+v, want the verdict raw and complete", kind, r.Output, r.Record)
		}
		if r := run(kind, "echo '"+verdict+"'", "fake ended with error_max_turns"); r.Record.Status != StatusBlocked || r.Record.Reason != "cli-error" {
			t.Errorf("%s: a failure the CLI reported: record %+v, want blocked cli-error", kind, r.Record)
		}
		if r := run(kind, "echo '"+verdict+"'; exit 3", ""); r.Record.Status != StatusBlocked {
			t.Errorf("%s: exit 3: record %+v, want blocked", kind, r.Record)
		}
		if r := run(kind, "exec sleep 30", ""); r.Record.Status != StatusPartial || r.Record.Reason != ReasonBudgetExceeded {
			t.Errorf("%s: stopped at the budget: record %+v, want partial budget-exceeded", kind, r.Record)
		}
	}
	if r := run(TaskKindFix, "echo '"+verdict+"'", ""); r.Record.Reason != ReasonUnparseable {
		t.Errorf("fix: a verdict is no status record, got %+v", r.Record)
	}
}
