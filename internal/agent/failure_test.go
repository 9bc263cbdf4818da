package agent

import (
	"errors"
	"strings"
	"testing"
)

// TestAG_T4_FailureOfTellsAnAnswerFromARunThatFailed: only a valid record,
// whatever its status, is the agent's answer; an error, no record or a
// run stopped without one is a failure naming the agent, with its stderr.
func TestAG_T4_FailureOfTellsAnAnswerFromARunThatFailed(t *testing.T) {
	stderr := "line 1\nsecret ghp_abcdefghijklmnopqrstuvwxyz0123456789\npanic: boom\n"
	for _, tc := range []struct {
		name string
		r    Result
		err  error
		what string // "" means no failure
	}{
		{"complete", Result{Record: StatusRecord{Status: StatusComplete}}, nil, ""},
		{"blocked with a reason", Result{Record: StatusRecord{Status: StatusBlocked, Reason: "needs a human"}}, nil, ""},
		{"partial", Result{Record: StatusRecord{Status: StatusPartial, NextAction: "finish"}}, nil, ""},
		{"unparseable", Result{Record: unparseable("no output (exit code 2)"), Stderr: stderr}, nil, "no valid status record: no output (exit code 2)"},
		{"budget", Result{Record: StatusRecord{Status: StatusPartial, Reason: ReasonBudgetExceeded, Summary: "stopped at the 1s budget without a status record"}, Stderr: stderr}, nil, "stopped at the 1s budget"},
		{"error", Result{Stderr: stderr}, errors.New("run agent x: exec: \"x\": not found"), `run agent x: exec: "x": not found`},
	} {
		f := FailureOf("fixer", tc.r, tc.err)
		if tc.what == "" {
			if f != nil {
				t.Errorf("%s: failure %v, want the record to stand", tc.name, f)
			}
			continue
		}
		if f == nil || f.Agent != "fixer" || !strings.HasPrefix(f.What, tc.what) {
			t.Fatalf("%s: failure %+v, want What %q", tc.name, f, tc.what)
		}
		msg := f.Error()
		if !strings.Contains(msg, "agent fixer could not run") || !strings.Contains(msg, "panic: boom") || strings.Contains(msg, "ghp_abc") {
			t.Errorf("%s: message %q", tc.name, msg)
		}
	}
}
