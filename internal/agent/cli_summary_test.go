//go:build unix

package agent

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// A CLI run stopped at its budget without a record is told to summarize
// in its own session (AG-T1), and only a valid record from that turn, in
// its time, is taken (AG-T3): anything else leaves the stop as it is.
func TestAG_T1_RunCLISummaryAtBudget(t *testing.T) {
	const partial = `{"status":"partial","next_action":"finish b.go","needs_extension_minutes":3,"summary":"a.go done","files_changed":["a.go"]}`
	tests := []struct {
		name    string
		kind    string
		run     string // the stopped run's script
		resume  string // the summary turn's script; "" means it must not run
		status  Status
		reason  string
		summary string // in the record's summary
	}{
		{name: "partial record from the session", run: `echo '{"session":"S1"}'; sleep 30`,
			resume: `echo 'Stopping.'; echo '` + partial + `'`, status: StatusPartial},
		{name: "a long run's session, named at its start, is still found", run: `echo '{"session":"S1"}'; head -c 400000 /dev/zero | tr '\0' 'x'; echo; sleep 30`,
			resume: `echo '` + partial + `'`, status: StatusPartial},
		{name: "garbage from the session is no record", run: `echo '{"session":"S1"}'; sleep 30`,
			resume: `echo 'all good!'`, status: StatusPartial, reason: ReasonBudgetExceeded, summary: "summary requested, no status record came"},
		{name: "a summary turn that overruns is no record", run: `echo '{"session":"S1"}'; sleep 30`,
			resume: `sleep 30`, status: StatusPartial, reason: ReasonBudgetExceeded, summary: "summary requested, no status record came"},
		{name: "a record after the summary turn's budget is no record", run: `echo '{"session":"S1"}'; sleep 30`,
			resume: `trap 'echo "` + strings.ReplaceAll(partial, `"`, `\"`) + `"; exit 0' TERM; sleep 30 & wait`,
			status: StatusPartial, reason: ReasonBudgetExceeded},
		{name: "no session named: not asked", run: `echo '{"event":"start"}'; sleep 30`,
			status: StatusPartial, reason: ReasonBudgetExceeded},
		{name: "a review run is not asked", kind: TaskKindReview, run: `echo '{"session":"S1"}'; sleep 30`,
			status: StatusPartial, reason: ReasonBudgetExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			asked := filepath.Join(dir, "asked")
			resume := tt.resume
			if resume == "" {
				resume = "echo not asked"
			}
			// The summary turn writes down its session and its prompt.
			resumeArgv := script(t, `printf '%s\n' "$1" > `+asked+`; cat >> `+asked+`; echo 'turn stderr' >&2; `+resume)
			res, err := RunCLI(context.Background(), Task{Kind: cmp.Or(tt.kind, TaskKindFix), Workdir: dir, Budget: 300 * time.Millisecond},
				CLIRun{
					Backend: "test", Name: "test",
					Argv:   append(script(t, `echo 'run stderr' >&2; `+tt.run), "x"),
					Grace:  100 * time.Millisecond,
					Record: ParseStatus,
					// Only the summary turn (whose output names no
					// session, unlike every stopped run's) reports a price, as Claude Code's does for
					// a run stopped before its result event.
					Read: func(stdout string) CLIOutput {
						u := Usage{OutputTokens: 1}
						if !strings.Contains(stdout, `"session"`) && !strings.Contains(stdout, "xxxx") {
							u.CostUSD, u.CostReported = 0.01, true
						}
						return CLIOutput{Final: stdout, Usage: u}
					},
					Session: func(stdout string) string {
						var ev struct{ Session string }
						EachJSONLine(stdout, func(e *struct{ Session string }, _ string) {
							if e.Session != "" {
								ev = *e
							}
						})
						return ev.Session
					},
					Resume:        func(session string) ([]string, []string) { return append(resumeArgv, session), nil },
					SummaryBudget: 500 * time.Millisecond,
				})
			if err != nil {
				t.Fatalf("RunCLI: %v", err)
			}
			rec := res.Record
			if rec.Status != tt.status || rec.Reason != tt.reason || !strings.Contains(rec.Summary, tt.summary) {
				t.Errorf("record = %+v, want %s/%s with summary %q", rec, tt.status, tt.reason, tt.summary)
			}
			prompt, readErr := os.ReadFile(asked)
			if tt.resume == "" {
				if readErr == nil {
					t.Errorf("the summary turn ran: %s", prompt)
				}
				return
			}
			if !strings.HasPrefix(string(prompt), "S1\n"+SummaryRequest) || !strings.Contains(string(prompt), `"needs_extension_minutes"`) {
				t.Errorf("the summary turn got %q, want session S1 and the summary prompt", prompt)
			}
			if !strings.Contains(res.Stderr, "run stderr") || !strings.Contains(res.Stderr, "turn stderr") {
				t.Errorf("stderr = %q, want both runs'", res.Stderr)
			}
			if res.Usage.OutputTokens != 2 {
				t.Errorf("usage = %+v, want both runs'", res.Usage)
			}
			if res.Usage.CostReported {
				t.Errorf("usage = %+v: the summary turn's price is not the stopped run's", res.Usage)
			}
			if tt.reason != "" {
				if FailureOf("test", res, err) == nil {
					t.Error("FailureOf = nil for a stop without a record")
				}
				return
			}
			if !slices.Contains(rec.Concerns, SummaryConcern) || !strings.HasSuffix(strings.TrimSpace(res.Output), partial) {
				t.Errorf("concerns %q, output %q", rec.Concerns, res.Output)
			}
			if next, ok := (Task{Budget: time.Second}).Extended(rec); !ok || next.Budget != 3*time.Minute {
				t.Errorf("Extended = %v, %v", next.Budget, ok)
			}
		})
	}
}

func TestSummaryBudget(t *testing.T) {
	for budget, want := range map[time.Duration]time.Duration{
		time.Second: 30 * time.Second, 3 * time.Minute: 36 * time.Second, DefaultBudget: time.Minute, time.Hour: time.Minute,
	} {
		if got := SummaryBudget(budget); got != want {
			t.Errorf("SummaryBudget(%s) = %s, want %s", budget, got, want)
		}
	}
}

func TestNewSessionID(t *testing.T) {
	a, b := NewSessionID(), NewSessionID()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a) || a == b {
		t.Errorf("session ids %q, %q: want distinct version-4 UUIDs", a, b)
	}
}
