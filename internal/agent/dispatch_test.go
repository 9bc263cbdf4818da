package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// scripted is the orchestrator's collaborator under test: an agent that
// answers each run with the next of its records and keeps the tasks it
// was given.
type scripted struct {
	answers []StatusRecord
	tasks   []Task
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Run(_ context.Context, t Task) (Result, error) {
	s.tasks = append(s.tasks, t)
	if len(s.tasks) > len(s.answers) {
		return Result{}, errors.New("scripted agent: run past its script")
	}
	rec := s.answers[len(s.tasks)-1]
	return Result{Record: rec, Outcomes: OutcomesFor(t.Findings, rec), Usage: Usage{OutputTokens: 10}}, nil
}

func impl(status string, reason string, concerns ...string) StatusRecord {
	rec := StatusRecord{Status: StatusComplete, Summary: "did it", FilesChanged: []string{}, ImplementerStatus: status, Reason: reason, Concerns: concerns}
	if status == ImplNeedsContext || status == ImplBlocked {
		rec.Status = StatusBlocked
	}
	return rec
}

var fixTask = Task{Kind: TaskKindFix, Findings: []Finding{{ID: "F1", Path: "a.go", EndLine: 3, Body: "fix it"}}}

// dispatch runs fixTask through a Runner on s and counts the resets.
func dispatch(t *testing.T, s *scripted, ladder []string, more func(StatusRecord) string) (Dispatched, int) {
	t.Helper()
	resets := 0
	r := Runner{Agent: s, Reset: func(context.Context) error { resets++; return nil }}
	d, err := r.Dispatch(context.Background(), fixTask, ladder, more)
	if err != nil {
		t.Fatal(err)
	}
	return d, resets
}

func models(ts []Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Model)
	}
	return out
}

func statuses(as []Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Status)
	}
	return out
}

// TestAG_T2_DoneIsAcceptedAsItIs: DONE is the task's answer, one run,
// nothing re-dispatched, no context asked for.
func TestAG_T2_DoneIsAcceptedAsItIs(t *testing.T) {
	s := &scripted{answers: []StatusRecord{impl(ImplDone, "")}}
	d, resets := dispatch(t, s, []string{"base", "strong"}, func(StatusRecord) string {
		t.Error("context asked for after DONE")
		return "x"
	})
	if !d.Done() || d.Status != ImplDone || len(s.tasks) != 1 || resets != 0 || d.Retries() != 0 {
		t.Errorf("status %s after %d runs, %d resets; want DONE after one", d.Status, len(s.tasks), resets)
	}
	if s.tasks[0].Model != "base" {
		t.Errorf("first run on model %q, want the ladder's first", s.tasks[0].Model)
	}
}

// TestAG_T2_ConcernsAreRecordedAndCriticalOnesBlock: the concerns of
// DONE_WITH_CONCERNS are kept and the task accepted, unless one is
// marked critical: then the task stops BLOCKED with that concern as its
// reason and no finding counts as addressed — not re-dispatched, as the
// work was done and judged wrong by its author.
func TestAG_T2_ConcernsAreRecordedAndCriticalOnesBlock(t *testing.T) {
	s := &scripted{answers: []StatusRecord{impl(ImplDoneWithConcerns, "", "the file is getting long")}}
	d, _ := dispatch(t, s, []string{"base", "strong"}, nil)
	if !d.Done() || d.Status != ImplDoneWithConcerns || !slices.Equal(d.Concerns, []string{"the file is getting long"}) {
		t.Errorf("got %s with concerns %q; want DONE_WITH_CONCERNS, the concern recorded", d.Status, d.Concerns)
	}
	if d.Result.Outcomes[0].Status != StatusComplete {
		t.Errorf("outcome %+v, want complete", d.Result.Outcomes[0])
	}

	for _, c := range []string{"critical: this deletes the migration", "  CRITICAL: this deletes the migration"} {
		for _, status := range []string{ImplDoneWithConcerns, ImplDone} {
			s := &scripted{answers: []StatusRecord{impl(status, "", "minor: naming", c), impl(ImplDone, "")}}
			d, _ := dispatch(t, s, []string{"base", "strong"}, nil)
			if d.Done() || d.Status != ImplBlocked || d.Reason != strings.TrimSpace(c) || len(s.tasks) != 1 {
				t.Errorf("%s with %q: %s (%q) after %d runs; want BLOCKED on the concern after one", status, c, d.Status, d.Reason, len(s.tasks))
			}
			if o := d.Result.Outcomes[0]; o.Status != StatusBlocked || o.Reason != strings.TrimSpace(c) || d.Result.Record.Status != StatusBlocked {
				t.Errorf("outcome %+v, record %s; want blocked with the concern", o, d.Result.Record.Status)
			}
		}
	}
	// A concern that only mentions the word is not marked critical.
	s = &scripted{answers: []StatusRecord{impl(ImplDoneWithConcerns, "", "not critical: a long line")}}
	if d, _ := dispatch(t, s, nil, nil); !d.Done() {
		t.Errorf("a concern not starting with the marker blocked the task: %s", d.Reason)
	}
}

// TestAG_T2_NeedsContextRedispatchedOnceWithMoreContext: the first
// NEEDS_CONTEXT is answered by the caller's context, on the same model,
// from a reset tree; the context is in the task (and its prompt, quoted
// as data).
func TestAG_T2_NeedsContextRedispatchedOnceWithMoreContext(t *testing.T) {
	s := &scripted{answers: []StatusRecord{impl(ImplNeedsContext, "which parser does a.go use?"), impl(ImplDone, "")}}
	var asked []string
	d, resets := dispatch(t, s, []string{"base", "strong"}, func(rec StatusRecord) string {
		asked = append(asked, rec.Reason)
		return "a.go uses the strict parser"
	})
	if !d.Done() || len(s.tasks) != 2 || resets != 1 || !slices.Equal(asked, []string{"which parser does a.go use?"}) {
		t.Fatalf("%s after %d runs, %d resets, context asked %q; want DONE after one re-dispatch", d.Status, len(s.tasks), resets, asked)
	}
	if got := models(s.tasks); !slices.Equal(got, []string{"base", "base"}) {
		t.Errorf("models %q, want the same model with more context", got)
	}
	if s.tasks[0].Context != "" || s.tasks[1].Context != "a.go uses the strict parser" {
		t.Errorf("contexts %q, %q", s.tasks[0].Context, s.tasks[1].Context)
	}
	if p := RenderTaskPrompt(s.tasks[1]); !strings.Contains(p, contextOpen) || !strings.Contains(p, dataPrefix+"a.go uses the strict parser\n") {
		t.Errorf("the prompt does not quote the context as data:\n%s", p)
	}
	if d.Retries() != 1 || !d.Attempts[1].Context || d.Attempts[0].Reason != "which parser does a.go use?" {
		t.Errorf("attempts %+v", d.Attempts)
	}
}

// TestAG_E1_SecondFailureEscalatesTheModel: NEEDS_CONTEXT again after
// the context, or BLOCKED, re-dispatches on the next model of the ladder,
// the context kept; the last model's failure is the task's BLOCKED with
// its reason.
func TestAG_E1_SecondFailureEscalatesTheModel(t *testing.T) {
	more := func(StatusRecord) string { return "more" }
	for _, tc := range []struct {
		name     string
		answers  []StatusRecord
		ladder   []string
		more     func(StatusRecord) string
		models   []string
		statuses []string
		final    string
		reason   string
	}{
		{"needs context twice, then the stronger model is done",
			[]StatusRecord{impl(ImplNeedsContext, "r1"), impl(ImplNeedsContext, "r2"), impl(ImplDone, "")},
			[]string{"base", "strong"}, more,
			[]string{"base", "base", "strong"}, []string{ImplNeedsContext, ImplNeedsContext, ImplDone}, ImplDone, ""},
		{"blocked climbs the whole ladder, the last failure is reported",
			[]StatusRecord{impl(ImplBlocked, "b1"), impl(ImplBlocked, "b2"), impl(ImplBlocked, "b3")},
			[]string{"base", "strong", "strongest"}, more,
			[]string{"base", "strong", "strongest"}, []string{ImplBlocked, ImplBlocked, ImplBlocked}, ImplBlocked, "b3"},
		{"no context to add: needs context climbs at once",
			[]StatusRecord{impl(ImplNeedsContext, "r1"), impl(ImplDone, "")},
			[]string{"base", "strong"}, func(StatusRecord) string { return " \n" },
			[]string{"base", "strong"}, []string{ImplNeedsContext, ImplDone}, ImplDone, ""},
		{"one model: blocked is final at once",
			[]StatusRecord{impl(ImplBlocked, "b1")},
			nil, more,
			[]string{""}, []string{ImplBlocked}, ImplBlocked, "b1"},
		{"one model: needs context gets its context, then it is blocked",
			[]StatusRecord{impl(ImplNeedsContext, "r1"), impl(ImplNeedsContext, "r2")},
			nil, more,
			[]string{"", ""}, []string{ImplNeedsContext, ImplNeedsContext}, ImplBlocked, "r2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: tc.answers}
			d, resets := dispatch(t, s, tc.ladder, tc.more)
			if got := models(s.tasks); !slices.Equal(got, tc.models) {
				t.Errorf("models %q, want %q", got, tc.models)
			}
			if got := statuses(d.Attempts); !slices.Equal(got, tc.statuses) {
				t.Errorf("attempts %q, want %q", got, tc.statuses)
			}
			if d.Status != tc.final || d.Reason != tc.reason {
				t.Errorf("final %s (%q), want %s (%q)", d.Status, d.Reason, tc.final, tc.reason)
			}
			if resets != len(tc.models)-1 {
				t.Errorf("%d resets for %d runs: every re-dispatch starts from a reset tree", resets, len(tc.models))
			}
			if d.Usage.OutputTokens != int64(10*len(tc.models)) {
				t.Errorf("usage %+v, want every attempt's", d.Usage)
			}
		})
	}
	// The context, once given, stays with the stronger model.
	s := &scripted{answers: []StatusRecord{impl(ImplNeedsContext, "r1"), impl(ImplBlocked, "r2"), impl(ImplDone, "")}}
	dispatch(t, s, []string{"base", "strong"}, more)
	if s.tasks[2].Context != "more" {
		t.Errorf("escalated task lost its context: %q", s.tasks[2].Context)
	}
}

// TestAG_T1_PartialAtTheCapIsBlockedNotEscalated: a run still partial
// after its extensions is the time-box's business (the caller narrows
// the input), not a model's: BLOCKED with its next action, the backend's
// per-finding outcomes kept.
func TestAG_T1_PartialAtTheCapIsBlockedNotEscalated(t *testing.T) {
	partial := StatusRecord{Status: StatusPartial, NextAction: "finish b.go", NeedsExtensionMinutes: 5, FilesChanged: []string{}}
	s := &scripted{answers: []StatusRecord{partial, partial, partial, impl(ImplDone, "")}}
	d, _ := dispatch(t, s, []string{"base", "strong"}, nil)
	if len(s.tasks) != 3 || d.Status != ImplBlocked || d.Reason != "finish b.go" || d.Attempts[0].Extensions != MaxExtensions {
		t.Errorf("%d runs, %s (%q), attempts %+v; want two extensions, then BLOCKED with the next action", len(s.tasks), d.Status, d.Reason, d.Attempts)
	}
	if s.tasks[1].Extension != 1 || s.tasks[2].Extension != 2 || s.tasks[2].Model != "base" {
		t.Errorf("extension runs %+v", s.tasks[1:])
	}
}

// TestAG_T4_RunnerRetriesARunThatCouldNotRunOnce: garbage output is no
// status: retried once from a reset tree, then a *RunFailure — never a
// step of the ladder.
func TestAG_T4_RunnerRetriesARunThatCouldNotRunOnce(t *testing.T) {
	garbage := unparseable("last line is not a JSON object")
	s := &scripted{answers: []StatusRecord{garbage, garbage, impl(ImplDone, "")}}
	resets := 0
	r := Runner{Agent: s, Reset: func(context.Context) error { resets++; return nil }}
	_, err := r.Dispatch(context.Background(), fixTask, []string{"base", "strong"}, nil)
	var fail *RunFailure
	if !errors.As(err, &fail) || len(s.tasks) != 2 || resets != 1 || s.tasks[1].Model != "base" {
		t.Errorf("err %v after %d runs, %d resets; want a RunFailure after one retry on the same model", err, len(s.tasks), resets)
	}

	s = &scripted{answers: []StatusRecord{garbage, impl(ImplDone, "")}}
	d, err := Runner{Agent: s}.Dispatch(context.Background(), fixTask, nil, nil)
	if err != nil || !d.Done() || len(d.Attempts) != 1 {
		t.Errorf("retry that answers: %v, %+v", err, d)
	}
	// The attempt that could not run was paid for too (PR-M5).
	if d.Usage.OutputTokens != 20 || d.Result.Usage.OutputTokens != 20 {
		t.Errorf("usage %+v (result %+v), want both runs' 20 output tokens", d.Usage, d.Result.Usage)
	}
}

func TestAG_T2_JudgeRecord(t *testing.T) {
	for _, tc := range []struct {
		rec            StatusRecord
		status, reason string
	}{
		{StatusRecord{Status: StatusComplete}, ImplDone, ""},
		{StatusRecord{Status: StatusComplete, Concerns: []string{"stopped at the 5m0s budget"}}, ImplDoneWithConcerns, ""},
		{StatusRecord{Status: StatusBlocked, Summary: "stuck"}, ImplBlocked, "stuck"},
		{StatusRecord{Status: StatusBlocked, ImplementerStatus: ImplNeedsContext, Reason: "which API?"}, ImplNeedsContext, "which API?"},
		{StatusRecord{Status: StatusPartial, NextAction: "more"}, "", "more"},
		{StatusRecord{Status: StatusBlocked}, ImplBlocked, "the agent reported blocked without a reason"},
		{StatusRecord{Status: StatusComplete, ImplementerStatus: ImplDone, Concerns: []string{"Critical: breaks the build on Windows"}}, ImplBlocked, "Critical: breaks the build on Windows"},
	} {
		if s, r := JudgeRecord(tc.rec); s != tc.status || r != tc.reason {
			t.Errorf("JudgeRecord(%+v) = %s, %q; want %s, %q", tc.rec, s, r, tc.status, tc.reason)
		}
	}
}

// cliFailing is an agent whose every run ends with its CLI's own error.
type cliFailing struct {
	err  *CLIError
	runs int
}

func (c *cliFailing) Name() string { return "claude" }

func (c *cliFailing) Run(context.Context, Task) (Result, error) {
	c.runs++
	return Result{Record: StatusRecord{Status: StatusBlocked, Reason: ReasonCLIError, FilesChanged: []string{}}}, c.err
}

// TestAG_T4_AuthAndEndpointFailuresAreNotRetried: a run whose CLI said
// its credentials failed, or whose model endpoint stayed down for the
// retry bound, is not run again (RunFailure.Retryable): the *RunFailure
// carries the CLI's error, so the command's exit code is the CLI's (6
// for auth). Any other CLI error is retried once, as AG-T4 says.
func TestAG_T4_AuthAndEndpointFailuresAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		kind FailKind
		runs int
	}{{FailAuth, 1}, {FailEndpoint, 1}, {FailCLI, 2}} {
		a := &cliFailing{err: &CLIError{Agent: "claude", Kind: tc.kind, Message: "Not logged in", Endpoint: "http://127.0.0.1:9"}}
		resets := 0
		_, err := Runner{Agent: a, Reset: func(context.Context) error { resets++; return nil }}.Dispatch(context.Background(), fixTask, nil, nil)
		var fail *RunFailure
		if !errors.As(err, &fail) || fail.CLI == nil || KindOf(err) != tc.kind {
			t.Fatalf("%s: err %v, want a *RunFailure carrying the CLI's error", tc.kind, err)
		}
		if a.runs != tc.runs || resets != tc.runs-1 {
			t.Errorf("%s: %d runs, %d resets; want %d runs", tc.kind, a.runs, resets, tc.runs)
		}
		if !strings.Contains(err.Error(), "Not logged in") {
			t.Errorf("%s: %v does not quote the CLI", tc.kind, err)
		}
	}
}
