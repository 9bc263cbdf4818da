package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// The source's status protocol and review loop (seed 004), as PLAN-1
// states them: record and continue, the orchestrator judging concerns,
// splitting a task too large, and NEEDS_CONTEXT answered with exactly
// what was asked.

const chainPlan = `
groups:
  - name: one
    tasks:
      - {id: a, prompt: do a, files: [a.go]}
      - {id: b, prompt: extend a, files: [b.go], depends_on: [a]}
      - {id: c, prompt: do c, files: [c.go]}
`

// TestPLAN_1_NotApprovedIsRecordedAndTheRunGoesOn: a task the review does
// not approve after 2 fix-review iterations is NOT_APPROVED with the
// last review's open issues, its commits stay on the branch (no unwind),
// its dependent and the rest run on, and nothing says it is done or
// approved: the run ends blocked (exit 3).
func TestPLAN_1_NotApprovedIsRecordedAndTheRunGoesOn(t *testing.T) {
	s := newSim(t)
	s.rev = func(task string, n int) Review {
		if task == "a" {
			return Review{Valid: true, Summary: "still untested", Issues: []Issue{
				{Severity: "important", Summary: fmt.Sprintf("no test for the empty input (review %d)", n), File: "a.go", Line: 3},
				{Severity: "minor", Summary: "a name"}}}
		}
		return Review{Valid: true, Approved: true}
	}
	st := s.run(newRun(mustPlan(t, chainPlan), 1))
	a := task(st, "a")
	if a.Status != TaskNotApproved || a.Phase != PhaseNotApproved || a.Fixes != MaxFixIterations || len(a.Reviews) != MaxFixIterations+1 {
		t.Fatalf("a = %s/%s fixes %d reviews %d", a.Status, a.Phase, a.Fixes, len(a.Reviews))
	}
	if want := []Issue{{Severity: "important", Summary: "no test for the empty input (review 3)", File: "a.go", Line: 3}}; !slices.Equal(a.OpenIssues, want) {
		t.Errorf("open issues = %+v, want the last review's blocking ones %+v", a.OpenIssues, want)
	}
	// Its commits stay on the branch: never unwound, nothing kept aside.
	if slices.Contains(s.log, "unwind a") || a.Kept != "" || a.Head != a.Dispatches[2].Report.Head {
		t.Errorf("a's commits were taken off the branch: log %q, task %+v", s.log, a)
	}
	// The run goes on: its dependent runs on top of it, with a concern
	// saying so; the independent task too.
	b, c := task(st, "b"), task(st, "c")
	if b.Status != TaskDoneWithConcerns || len(b.Concerns) != 1 || !strings.Contains(b.Concerns[0], "builds on a, which the review did not approve") {
		t.Errorf("b = %s %q", b.Status, b.Concerns)
	}
	if b.Base != a.Head {
		t.Errorf("b starts from %s, want a's last commit %s", b.Base, a.Head)
	}
	if c.Status != TaskDone {
		t.Errorf("c = %s", c.Status)
	}
	// Fail closed: the run is not complete, and a is never counted done.
	if st.Terminal.Status != StatusBlocked || st.Terminal.ExitCode != 3 || !strings.Contains(st.Terminal.Message, "2 of 3 task(s) done and approved") ||
		!strings.Contains(st.Terminal.Message, "not approved after 2 fix-review iterations (commits on the branch, open issues in the report): a") {
		t.Errorf("terminal = %+v", st.Terminal)
	}
	res := BuildResult(st, t0)
	if res.Counts.NotApproved != 1 || res.Counts.Done != 1 || res.Counts.DoneWithConcerns != 1 {
		t.Errorf("counts = %+v", res.Counts)
	}
	ra := res.Tasks[0]
	if ra.Status != TaskNotApproved || ra.Commit != a.Head || len(ra.OpenIssues) != 1 || ra.Reviews[2].Passed || ra.Reviews[2].Approved {
		t.Errorf("a's result = %+v", ra)
	}
	var md strings.Builder
	WriteReport(&md, res)
	for _, want := range []string{"## a: NOT_APPROVED", "| a | one | NOT_APPROVED |", "- not approved after 2 fix-review iterations: its commits stay on the branch, not approved",
		"- open issue: important: no test for the empty input (review 3) (a.go)", "- tasks: 1 done, 1 done with concerns, 1 not approved, 0 blocked, 0 skipped"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "| a | one | DONE") {
		t.Errorf("the report calls a done:\n%s", md.String())
	}
}

// TestPLAN_1_NotApprovedInTheDecisionLog: the step that ends a task
// NOT_APPROVED says so in the run's events (converge log), with its open
// issues and where its commits are.
func TestPLAN_1_NotApprovedInTheDecisionLog(t *testing.T) {
	s := newSim(t)
	s.rev = func(task string, n int) Review {
		return Review{Valid: true, Issues: []Issue{{Severity: "critical", Summary: "drops rows", File: "a.go"}}}
	}
	p := mustPlan(t, onePlan)
	final := s.run(newRun(p, 1))
	prev := final.clone()
	prev.Tasks[0].Phase, prev.Tasks[0].Status = PhaseReview, ""
	var rec recorder
	(&Loop{Deps: Deps{Reporter: &rec}}).Stepped(prev, final, Observation{})
	want := fmt.Sprintf("task a: NOT_APPROVED: not approved after 2 fix-review iterations; its commits stay on the branch at %s; open issues: critical: drops rows (a.go)", text.ShortSHA(final.Tasks[0].Head))
	if !slices.Contains(rec.messages(), want) {
		t.Errorf("events %q lack %q", rec.messages(), want)
	}
}

type recorder struct {
	mu sync.Mutex
	ev []engine.Event
}

func (r *recorder) Report(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, e)
}

func (r *recorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.ev {
		out = append(out, e.Message)
	}
	return out
}

// TestPLAN_1_ConcernsAreJudgedByTheOrchestrator: the concerns of a done
// task are judged before its review, not taken on the implementer's word:
// by the judge when the run has one (a concern it judges critical stops
// the task BLOCKED, unreviewed, its commit off the branch, though no
// concern was marked critical), else by the fail-closed rule.
func TestPLAN_1_ConcernsAreJudgedByTheOrchestrator(t *testing.T) {
	cases := []struct {
		name     string
		judge    string
		concerns []string
		verdict  map[string]string // the judge's, by concern
		status   string
		log      []string
		reason   string
		by       string
	}{
		{name: "the judge finds a plain concern critical", judge: "reviewer", concerns: []string{"the migration runs twice on retry"},
			verdict: map[string]string{"the migration runs twice on retry": VerdictCritical}, status: TaskBlocked,
			log:    []string{"dispatch a first", "judge a 1", "unwind a"},
			reason: "the orchestrator judged a concern critical (judge test): the migration runs twice on retry", by: "judge test"},
		{name: "justified and observation concerns are recorded and reviewed", judge: "reviewer", concerns: []string{"may be slow", "file is long"},
			verdict: map[string]string{"may be slow": VerdictJustified, "file is long": VerdictObservation}, status: TaskDoneWithConcerns,
			log: []string{"dispatch a first", "judge a 1", "review a 1"}, by: "judge test"},
		{name: "without a judge the rule stops a concern about correctness", concerns: []string{"the file is long", "empty input may return the wrong total"},
			status: TaskBlocked, log: []string{"dispatch a first", "unwind a"},
			reason: `the orchestrator judged a concern critical (rule): empty input may return the wrong total — no judge evaluated it and it names a risk to correctness or scope ("wrong")`, by: "rule"},
		{name: "without a judge the rule records an observation", concerns: []string{"the file is getting long"},
			status: TaskDoneWithConcerns, log: []string{"dispatch a first", "review a 1"}, by: "rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t)
			s.impl = func(string, Dispatch) Report {
				return Report{Implementer: TaskDoneWithConcerns, Concerns: c.concerns}
			}
			s.judge = func(_ string, cs []string) []ConcernVerdict {
				var out []ConcernVerdict
				for _, x := range cs {
					out = append(out, ConcernVerdict{Concern: x, Verdict: c.verdict[x], Reason: "from the code", By: "judge test"})
				}
				return out
			}
			st := newRun(mustPlan(t, onePlan), 1)
			st.Config.Judge = c.judge
			st = s.run(st)
			a := task(st, "a")
			if a.Status != c.status || !slices.Equal(s.log, c.log) || !strings.Contains(a.BlockReason, c.reason) {
				t.Fatalf("status %s reason %q log %q; want %s %q %q", a.Status, a.BlockReason, s.log, c.status, c.reason, c.log)
			}
			if len(a.Judged) != len(c.concerns) {
				t.Fatalf("judged %+v, want a verdict on each of %q", a.Judged, c.concerns)
			}
			for _, v := range a.Judged {
				if v.By != c.by {
					t.Errorf("verdict %+v, want by %s", v, c.by)
				}
			}
			if c.status == TaskBlocked && (!a.Undone || s.head != "c0") {
				t.Errorf("a task blocked on a concern keeps its commit on the branch: head %s", s.head)
			}
			if r := BuildResult(st, t0).Tasks[0]; len(r.ConcernVerdicts) != len(c.concerns) {
				t.Errorf("the report's verdicts = %+v", r.ConcernVerdicts)
			}
		})
	}
}

// TestPLAN_1_FixConcernsAreJudgedOnce: a fix that repeats a concern
// already judged is not judged again; a new one is.
func TestPLAN_1_FixConcernsAreJudgedOnce(t *testing.T) {
	s := newSim(t)
	var asked [][]string
	s.judge = func(_ string, cs []string) []ConcernVerdict {
		asked = append(asked, cs)
		var out []ConcernVerdict
		for _, c := range cs {
			out = append(out, ConcernVerdict{Concern: c, Verdict: VerdictObservation, By: "judge test"})
		}
		return out
	}
	s.impl = func(_ string, d Dispatch) Report {
		if d.Kind == DispatchFix {
			return Report{Implementer: TaskDoneWithConcerns, Concerns: []string{"long file", "new helper is unusual"}}
		}
		return Report{Implementer: TaskDoneWithConcerns, Concerns: []string{"long file"}}
	}
	s.rev = func(_ string, n int) Review {
		if n == 1 {
			return Review{Valid: true, Issues: []Issue{{Severity: "important", Summary: "fix it"}}}
		}
		return Review{Valid: true, Approved: true}
	}
	st := newRun(mustPlan(t, onePlan), 1)
	st.Config.Judge = "reviewer"
	st = s.run(st)
	if want := [][]string{{"long file"}, {"new helper is unusual"}}; fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("judged %q, want %q", asked, want)
	}
	if a := task(st, "a"); a.Status != TaskDoneWithConcerns || len(a.Judged) != 2 {
		t.Errorf("a = %s %+v", a.Status, a.Judged)
	}
}

func TestPLAN_1_RuleVerdictFailsClosed(t *testing.T) {
	for concern, want := range map[string]string{
		"the file is getting long":                       VerdictObservation,
		"atypical pattern for this package":              VerdictObservation,
		"naming is inconsistent with the rest":           VerdictObservation,
		"the file is long and drops data on retry":       VerdictCritical,
		"I guessed the format":                           VerdictCritical,
		"changes a file outside the task's scope":        VerdictCritical,
		"not sure the API exists":                        VerdictCritical,
		"slow on big inputs":                             VerdictCritical,
		"the token is logged":                            VerdictCritical,
		"tests are missing for the error path":           VerdictCritical,
		"   ":                                            VerdictCritical,
		"formatting of the docs could be more idiomatic": VerdictObservation,
	} {
		if got := RuleVerdict(concern); got.Verdict != want || got.By != "rule" || got.Reason == "" {
			t.Errorf("RuleVerdict(%q) = %+v, want %s", concern, got, want)
		}
	}
}

func TestPLAN_1_ConcernJudgmentIsReadFailClosed(t *testing.T) {
	concerns := []string{"one", "two"}
	line := func(vs string) string {
		return `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"s","files_changed":[],"verdicts":` + vs + `}`
	}
	got, err := ParseConcernJudgment("thinking\n"+line(`[{"n":2,"verdict":"critical","reason":"r2"},{"n":1,"verdict":"observation","reason":"r1"}]`)+"\n", concerns, "judge x")
	if err != nil || len(got) != 2 || got[0].Concern != "one" || got[0].Verdict != VerdictObservation || got[1].Verdict != VerdictCritical || got[1].By != "judge x" {
		t.Fatalf("got %+v, %v", got, err)
	}
	for name, out := range map[string]string{
		"a concern without a verdict": line(`[{"n":1,"verdict":"observation","reason":"r"}]`),
		"two verdicts on one":         line(`[{"n":1,"verdict":"observation","reason":"r"},{"n":1,"verdict":"critical","reason":"r"},{"n":2,"verdict":"critical","reason":"r"}]`),
		"a verdict on no concern":     line(`[{"n":1,"verdict":"observation","reason":"r"},{"n":2,"verdict":"critical","reason":"r"},{"n":3,"verdict":"critical","reason":"r"}]`),
		"an unknown verdict":          line(`[{"n":1,"verdict":"fine","reason":"r"},{"n":2,"verdict":"critical","reason":"r"}]`),
		"a key in other case":         line(`[{"n":1,"verdict":"critical","Verdict":"observation","reason":"r"},{"n":2,"verdict":"critical","reason":"r"}]`),
		"an echoed example earlier":   line(`[{"n":1,"verdict":"observation","reason":"r"},{"n":2,"verdict":"observation","reason":"r"}]`) + "\nok",
		"nothing":                     "",
	} {
		if vs, err := ParseConcernJudgment(out, concerns, "judge x"); err == nil {
			t.Errorf("%s: read as %+v", name, vs)
		}
	}
}

// scripted is an agent whose answers a test writes; it keeps the tasks
// it was given.
type scripted struct {
	name   string
	answer func(n int, t agent.Task) agent.Result
	mu     sync.Mutex
	seen   []agent.Task
}

func (s *scripted) Name() string { return s.name }

func (s *scripted) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	s.mu.Lock()
	s.seen = append(s.seen, t)
	n := len(s.seen)
	s.mu.Unlock()
	return s.answer(n, t), nil
}

// newTickets is a store holding run r1, for a loop's dispatches.
func newTickets(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateRun(ctx, store.Run{ID: "r1", Kind: Kind, Target: "plan:test", Status: "running", StartedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	return db
}

func (s *scripted) tasks() []agent.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// TestPLAN_1_JudgeThatCannotAnswerLeavesItToTheRule: the judge gets the
// task, the diff and the concerns; a judge whose answer cannot be read
// twice is no judgment: the rule judges, and says why.
func TestPLAN_1_JudgeThatCannotAnswerLeavesItToTheRule(t *testing.T) {
	ctx := context.Background()
	ws, base := repoWithCommit(t)
	put(t, ws.Dir(), "a.go", "package a // CHANGED-LINE\n")
	head, err := ws.Commit(ctx, TaskRef("r1", "a"), "task a", nil)
	if err != nil {
		t.Fatal(err)
	}
	j := &scripted{name: "judge", answer: func(int, agent.Task) agent.Result {
		return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete}, Output: "I think it is fine."}
	}}
	var rec recorder
	l := NewLoop("r1", Deps{Workspace: ws, Judge: j, Reporter: &rec})
	st := newRun(mustPlan(t, onePlan), 1)
	concerns := []string{"the file is getting long", "it may drop the last row"}
	res, err := l.Act(ctx, st, Observation{}, Action{Kind: ActJudge, Task: "a", N: 1, Base: base, Head: head, Concerns: concerns})
	if err != nil || res.Judged == nil {
		t.Fatalf("act: %+v, %v", res, err)
	}
	jd := res.Judged
	if len(j.tasks()) != reviewAttempts {
		t.Errorf("the judge ran %d times, want %d", len(j.tasks()), reviewAttempts)
	}
	if len(jd.Verdicts) != 2 || jd.Verdicts[0].Verdict != VerdictObservation || jd.Verdicts[1].Verdict != VerdictCritical || jd.Verdicts[1].By != "rule" ||
		!strings.Contains(jd.Note, "the judge gave no valid answer") || !strings.Contains(jd.Verdicts[1].Reason, "the judge gave no valid answer") {
		t.Errorf("judgment = %+v", jd)
	}
	p := j.tasks()[0]
	if p.Kind != agent.TaskKindJudge || !agent.ReadOnly(p.Kind) {
		t.Errorf("the judge's task kind %q is not a read-only judge's", p.Kind)
	}
	for _, want := range []string{"CHANGED-LINE", "it may drop the last row", "the file is getting long", "Task a", "do a", `"verdicts"`} {
		if !strings.Contains(p.Prompt, want) {
			t.Errorf("the judge's prompt lacks %q:\n%s", want, p.Prompt)
		}
	}
}

const splitPlan = `
groups:
  - name: one
    tasks:
      - {id: a, prompt: build the whole parser, files: [lex.go, parse.go, ast/]}
      - {id: d, prompt: document the parser, files: [doc.md], depends_on: [a]}
`

func threeParts(task, _ string) SplitDone {
	return SplitDone{Task: task, Parts: []Part{{Prompt: "the lexer", Files: []string{"lex.go"}}, {Prompt: "the AST", Files: []string{"ast/"}}, {Prompt: "the parser", Files: []string{"parse.go", "ast/node.go"}}}}
}

// TestPLAN_1_TooLargeTaskIsSplit: a task its implementer reports too
// large is split by the judge; its parts run in its place, one after the
// other, each reviewed, and its dependent waits for the last; the task is
// SPLIT, counted by its parts.
func TestPLAN_1_TooLargeTaskIsSplit(t *testing.T) {
	s := newSim(t)
	s.impl = func(id string, d Dispatch) Report {
		if id == "a" {
			return Report{Implementer: TaskBlocked, Reason: "Too large: a lexer, an AST and a parser", Attempts: []Attempt{{Status: TaskBlocked}}}
		}
		return Report{Implementer: TaskDone}
	}
	var reasons []string
	s.splitter = func(task, reason string) SplitDone {
		reasons = append(reasons, reason)
		return threeParts(task, reason)
	}
	st := newRun(mustPlan(t, splitPlan), 1)
	st.Config.Judge = "reviewer"
	st = s.run(st)
	want := []string{"dispatch a first", "split a",
		"dispatch a-part1 first", "review a-part1 1", "dispatch a-part2 first", "review a-part2 1", "dispatch a-part3 first", "review a-part3 1",
		"dispatch d first", "review d 1"}
	if !slices.Equal(s.log, want) {
		t.Fatalf("log %q\nwant %q", s.log, want)
	}
	if !slices.Equal(reasons, []string{"a lexer, an AST and a parser"}) {
		t.Errorf("the splitter was told %q", reasons)
	}
	a := task(st, "a")
	if a.Status != TaskSplit || !slices.Equal(a.SplitInto, []string{"a-part1", "a-part2", "a-part3"}) || a.TooLarge == "" {
		t.Errorf("a = %+v", a)
	}
	p3 := st.Config.Plan.Task("a-part3")
	if p3 == nil || p3.SplitFrom != "a" || !slices.Equal(p3.DependsOn, []string{"a-part2"}) || !slices.Equal(p3.Files, []string{"parse.go", "ast/node.go"}) ||
		!strings.Contains(p3.Prompt, "the parser") || !strings.Contains(p3.Prompt, "part 3 of 3 of task a") || !strings.Contains(p3.Prompt, "build the whole parser") {
		t.Errorf("part 3 = %+v", p3)
	}
	if d := st.Config.Plan.Task("d"); !slices.Equal(d.DependsOn, []string{"a-part3"}) {
		t.Errorf("d depends on %v, want the last part", d.DependsOn)
	}
	if st.Terminal.Status != StatusComplete || !strings.Contains(st.Terminal.Message, "4 of 4 task(s) done and approved by review; split: a into a-part1, a-part2, a-part3") {
		t.Errorf("terminal = %+v", st.Terminal)
	}
	res := BuildResult(st, t0)
	if res.Counts.Split != 1 || res.Counts.Done != 4 || res.Tasks[0].Status != TaskSplit || res.Tasks[1].SplitFrom != "a" || res.Tasks[1].Group != "one" {
		t.Errorf("result = %+v", res)
	}
}

// TestPLAN_1_SplittingIsBounded: a part found too large is BLOCKED, never
// split again (the later parts and the task's dependents are SKIPPED); a
// task without a judge, with no valid split, or too large only in a fix
// is BLOCKED.
func TestPLAN_1_SplittingIsBounded(t *testing.T) {
	tooLarge := Report{Implementer: TaskBlocked, Reason: "too large: it is three things", Attempts: []Attempt{{Status: TaskBlocked}}}
	t.Run("a part is never split again", func(t *testing.T) {
		s := newSim(t)
		s.impl = func(id string, _ Dispatch) Report {
			if id == "a" || id == "a-part2" {
				return tooLarge
			}
			return Report{Implementer: TaskDone}
		}
		s.splitter = threeParts
		st := newRun(mustPlan(t, splitPlan), 1)
		st.Config.Judge = "reviewer"
		st = s.run(st)
		if n := strings.Count(strings.Join(s.log, ","), "split "); n != 1 {
			t.Errorf("%d splits: %q", n, s.log)
		}
		p2 := task(st, "a-part2")
		if p2.Status != TaskBlocked || !strings.Contains(p2.BlockReason, "a part is never split again") {
			t.Errorf("a-part2 = %s %q", p2.Status, p2.BlockReason)
		}
		if task(st, "a-part3").Status != TaskSkipped || task(st, "d").Status != TaskSkipped || task(st, "a-part1").Status != TaskDone {
			t.Errorf("tasks = %+v", st.Tasks)
		}
		if st.Terminal.Status != StatusBlocked {
			t.Errorf("terminal = %+v", st.Terminal)
		}
	})
	for _, c := range []struct {
		name, judge, reason string
		split               func(string, string) SplitDone
		fix                 bool
	}{
		{name: "no judge", reason: "too large for one run, and the run has no judge to split it: it is three things"},
		{name: "no valid split", judge: "reviewer", split: func(task, _ string) SplitDone {
			return SplitDone{Task: task, Note: "the split has 1 part(s); it needs 2 to 4"}
		}, reason: "too large for one run (it is three things), and it could not be split: the split has 1 part(s)"},
		{name: "found in a fix", judge: "reviewer", fix: true, reason: "found while fixing its review's issues"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t)
			s.impl = func(id string, d Dispatch) Report {
				if id == "a" && (!c.fix || d.Kind == DispatchFix) {
					return tooLarge
				}
				return Report{Implementer: TaskDone}
			}
			s.rev = func(id string, n int) Review {
				if id == "a" && c.fix {
					return Review{Valid: true, Issues: []Issue{{Severity: "important", Summary: "more"}}}
				}
				return Review{Valid: true, Approved: true}
			}
			if c.split != nil {
				s.splitter = c.split
			}
			st := newRun(mustPlan(t, splitPlan), 1)
			st.Config.Judge = c.judge
			st = s.run(st)
			a := task(st, "a")
			if a.Status != TaskBlocked || !strings.Contains(a.BlockReason, c.reason) || len(st.Tasks) != 2 {
				t.Errorf("a = %s %q (%d tasks); want BLOCKED %q", a.Status, a.BlockReason, len(st.Tasks), c.reason)
			}
			if task(st, "d").Status != TaskSkipped {
				t.Errorf("d = %s", task(st, "d").Status)
			}
		})
	}
}

func TestPLAN_1_SplitIsReadFailClosed(t *testing.T) {
	task := &Task{ID: "a", Files: []string{"lex.go", "ast/"}}
	line := func(parts string) string {
		return `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"s","files_changed":[],"parts":` + parts + `}`
	}
	got, err := ParseSplit(line(`[{"prompt":" the lexer ","files":["./lex.go"]},{"prompt":"the rest"}]`), task)
	if err != nil || len(got) != 2 || got[0].Prompt != "the lexer" || !slices.Equal(got[0].Files, []string{"lex.go"}) || !slices.Equal(got[1].Files, task.Files) {
		t.Fatalf("got %+v, %v", got, err)
	}
	for name, out := range map[string]string{
		"one part":            line(`[{"prompt":"all"}]`),
		"five parts":          line(`[{"prompt":"1"},{"prompt":"2"},{"prompt":"3"},{"prompt":"4"},{"prompt":"5"}]`),
		"a file outside":      line(`[{"prompt":"1","files":["lex.go"]},{"prompt":"2","files":["main.go"]}]`),
		"a file above":        line(`[{"prompt":"1","files":["../lex.go"]},{"prompt":"2"}]`),
		"a blank prompt":      line(`[{"prompt":"  "},{"prompt":"2"}]`),
		"an unknown part key": line(`[{"prompt":"1","depends_on":["x"]},{"prompt":"2"}]`),
		"not json":            "split it in two",
	} {
		if parts, err := ParseSplit(out, task); err == nil {
			t.Errorf("%s: read as %+v", name, parts)
		}
	}
}

// TestPLAN_1_TooLargeEndsTheDispatchAndIsSplitByTheJudge: end to end
// through the loop's acts: an implementer that reports "too large:" on
// the first model is not escalated to the next (the task is split
// instead), and the judge's split prompt carries the task and the reason.
func TestPLAN_1_TooLargeEndsTheDispatchAndIsSplitByTheJudge(t *testing.T) {
	ctx := context.Background()
	ws, _ := repoWithCommit(t)
	impl := &scripted{name: "impl", answer: func(int, agent.Task) agent.Result {
		return agent.Result{Record: agent.StatusRecord{Status: agent.StatusBlocked, ImplementerStatus: agent.ImplNeedsContext, Reason: "too large: LEXER-AND-PARSER are two tasks"}}
	}}
	judge := &scripted{name: "judge", answer: func(int, agent.Task) agent.Result {
		return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete}, Output: `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"two","files_changed":[],"parts":[{"prompt":"lexer","files":["lex.go"]},{"prompt":"parser","files":["parse.go"]}]}`}
	}}
	st := NewState("r1", Config{Plan: mustPlan(t, `
models: [small, large]
groups:
  - tasks:
      - {id: a, prompt: PARSER-TASK, files: [lex.go, parse.go]}
`), Agent: "impl", Reviewer: "judge", Judge: "judge", Parallel: 1})
	l := NewLoop("r1", Deps{Workspace: ws, Tickets: newTickets(t), Judge: judge, Reviewer: judge, PID: 1,
		Agent: func(string) (agent.Agent, error) { return impl, nil }})
	obs, err := l.Observe(ctx, st, engine.Input[ActResult]{})
	if err != nil {
		t.Fatal(err)
	}
	st, acts, _ := Decide(st, obs)
	if len(acts) != 1 || acts[0].Kind != ActDispatch {
		t.Fatalf("acts = %+v", acts)
	}
	if _, err := l.Act(ctx, st, obs, acts[0]); err != nil {
		t.Fatal(err)
	}
	if n := len(impl.tasks()); n != 1 {
		t.Fatalf("the implementer ran %d times: a task too large is split, not re-dispatched or escalated", n)
	}
	obs, err = l.Observe(ctx, st, engine.Input[ActResult]{})
	if err != nil {
		t.Fatal(err)
	}
	st, acts, _ = Decide(st, obs)
	if len(acts) != 1 || acts[0].Kind != ActSplit || acts[0].Reason != "LEXER-AND-PARSER are two tasks" {
		t.Fatalf("acts = %+v", acts)
	}
	r, err := l.Act(ctx, st, obs, acts[0])
	if err != nil || r.Split == nil || len(r.Split.Parts) != 2 {
		t.Fatalf("split: %+v, %v", r, err)
	}
	p := judge.tasks()[0].Prompt
	for _, want := range []string{"PARSER-TASK", "LEXER-AND-PARSER are two tasks", "lex.go, parse.go", `"parts"`} {
		if !strings.Contains(p, want) {
			t.Errorf("the split prompt lacks %q:\n%s", want, p)
		}
	}
	st, acts, _ = Decide(st, Observation{Now: t0, Head: obs.Head, Splits: []SplitDone{*r.Split}})
	if len(acts) != 1 || acts[0].Kind != ActDispatch || acts[0].Jobs[0].Task != "a-part1" || task(st, "a").Status != TaskSplit {
		t.Fatalf("after the split: acts %+v, tasks %+v", acts, st.Tasks)
	}
}

// TestPLAN_1_NeedsContextAnsweredWithExactlyWhatWasAsked: the context a
// re-dispatch carries is what the request named — the lines of the file
// it named, the paragraph of the plan's context on the subject it named,
// the task it named — and not the task's other files or the rest of the
// context; what is not there is said so; nothing outside the repository
// is read.
func TestPLAN_1_NeedsContextAnsweredWithExactlyWhatWasAsked(t *testing.T) {
	dir := t.TempDir()
	var a strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&a, "a-line-%d\n", i)
	}
	files := map[string]string{"src/a.go": a.String(), "src/b.go": "B-CONTENT\nB-SECOND\n", "src/docs/schema.sql": "create table t;\n", "secret.txt": "OUTSIDE", "src/.git/config": "[core]\n"}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repoDir := filepath.Join(dir, "src")
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(repoDir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, `
context: |
  The store is sqlite, opened once in main.

  Logging goes through slog, LOGGING-PARAGRAPH.
groups:
  - tasks:
      - {id: lexer, prompt: write the lexer, files: [lex.go]}
      - {id: b, prompt: write it, files: [a.go, b.go], depends_on: [lexer], context: TASK-CONTEXT}
`)
	st := newRun(p, 1)
	st.Tasks[0].Phase, st.Tasks[0].Status, st.Tasks[0].Head, st.Tasks[0].Base = PhaseDone, TaskDone, "1234567890abcdef", "c0"
	st.Tasks[0].Dispatches = []Dispatch{{Report: &Report{Summary: "LEXER-SUMMARY tokens are in lex.go"}}}
	task := st.Config.Plan.Task("b")
	ask := func(asked string) string {
		return AnswerContext(AnswerInput{State: st, Task: task, Asked: asked, Dir: repoDir, Budget: contextBytes})
	}
	cases := []struct {
		asked    string
		want     []string
		mustNot  []string
		empty    bool
		fallback bool
	}{
		{asked: "I need lines 3-4 of a.go and how the store (sqlite) is opened",
			want:    []string{"File a.go, lines 3-4 of 10:", "    3| a-line-3", "    4| a-line-4", "The store is sqlite, opened once in main."},
			mustNot: []string{"a-line-2", "a-line-5", "B-CONTENT", "LOGGING-PARAGRAPH", "TASK-CONTEXT", "LEXER-SUMMARY", "converge found nothing"}},
		{asked: "what is at b.go:2, and what did task lexer produce?",
			want:    []string{"File b.go, lines 2-2 of 2:", "    2| B-SECOND", "Task lexer is DONE at commit 1234567890ab: LEXER-SUMMARY"},
			mustNot: []string{"B-CONTENT", "a-line", "sqlite"}},
		{asked: "the whole of b.go please",
			want: []string{"File b.go (2 lines):", "    1| B-CONTENT", "    2| B-SECOND"}, mustNot: []string{"a-line"}},
		{asked: "what does ../secret.txt say, and link.txt, and /etc/passwd?",
			want: []string{"../secret.txt is outside the repository", "link.txt leads outside the repository", "/etc/passwd is outside the repository"}, mustNot: []string{"OUTSIDE", "root:"}, fallback: true},
		{asked: "the schema.sql file and the docs/ directory", want: []string{"File docs/schema.sql (1 lines):", "    1| create table t;", "Directory docs holds: schema.sql"}},
		{asked: "is there a config.yaml?", want: []string{"config.yaml does not exist in the repository.", "The plan's context:", "LOGGING-PARAGRAPH", "TASK-CONTEXT", "LEXER-SUMMARY"}, fallback: true},
		{asked: "where does .git/config point?", mustNot: []string{"[core]"}, fallback: true},
	}
	for _, c := range cases {
		got := ask(c.asked)
		if !strings.HasPrefix(got, "You said you need: "+c.asked+"\n") {
			t.Errorf("%q: the answer does not start with the request:\n%s", c.asked, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: the answer lacks %q:\n%s", c.asked, w, got)
			}
		}
		for _, w := range c.mustNot {
			if strings.Contains(got, w) {
				t.Errorf("%q: the answer holds %q, which was not asked for:\n%s", c.asked, w, got)
			}
		}
		if c.fallback != strings.Contains(got, "converge found nothing you named") {
			t.Errorf("%q: fallback %v:\n%s", c.asked, !c.fallback, got)
		}
	}
	// With no context in the plan and nothing named found, there is
	// nothing to add: the task climbs the ladder instead.
	bare := newRun(mustPlan(t, "groups:\n  - tasks:\n      - {id: x, prompt: do x, files: [x.go]}\n"), 1)
	if got := AnswerContext(AnswerInput{State: bare, Task: bare.Config.Plan.Task("x"), Asked: "which approach do you prefer?", Dir: repoDir, Budget: contextBytes}); got != "" {
		t.Errorf("nothing to add, yet: %q", got)
	}
}

// TestPLAN_1_NeedsContextRedispatchPrompt: through the loop, the
// implementer that answered NEEDS_CONTEXT naming lines of a file gets
// them quoted in its re-dispatch's prompt — and not the task's other file.
func TestPLAN_1_NeedsContextRedispatchPrompt(t *testing.T) {
	ctx := context.Background()
	ws, _ := repoWithCommit(t)
	put(t, ws.Dir(), "a.go", "package a\n// A-TWO\n// A-THREE\n")
	put(t, ws.Dir(), "b.go", "package b // B-WHOLE\n")
	if _, err := ws.Commit(ctx, "setup", "setup", nil); err != nil {
		t.Fatal(err)
	}
	impl := &scripted{name: "impl", answer: func(n int, t agent.Task) agent.Result {
		if n == 1 {
			return agent.Result{Record: agent.StatusRecord{Status: agent.StatusBlocked, ImplementerStatus: agent.ImplNeedsContext, Reason: "I need a.go line 2"}}
		}
		return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete, ImplementerStatus: agent.ImplDone, Summary: "done"}}
	}}
	st := NewState("r1", Config{Plan: mustPlan(t, "groups:\n  - tasks:\n      - {id: a, prompt: do a, files: [a.go, b.go]}\n"), Agent: "impl", Reviewer: "impl", Parallel: 1})
	l := NewLoop("r1", Deps{Workspace: ws, Tickets: newTickets(t), PID: 1, Agent: func(string) (agent.Agent, error) { return impl, nil }})
	obs, err := l.Observe(ctx, st, engine.Input[ActResult]{})
	if err != nil {
		t.Fatal(err)
	}
	st, acts, _ := Decide(st, obs)
	if _, err := l.Act(ctx, st, obs, acts[0]); err != nil {
		t.Fatal(err)
	}
	seen := impl.tasks()
	if len(seen) != 2 {
		t.Fatalf("%d runs, want 2", len(seen))
	}
	p := seen[1].Prompt
	for _, want := range []string{"again with the context you asked for", "## More context", "You said you need: I need a.go line 2", "File a.go, lines 2-2 of 3:", "2| // A-TWO"} {
		if !strings.Contains(p, want) {
			t.Errorf("the re-dispatch's prompt lacks %q:\n%s", want, p)
		}
	}
	for _, not := range []string{"B-WHOLE", "A-THREE"} {
		if strings.Contains(p, not) {
			t.Errorf("the re-dispatch's prompt holds %q, which was not asked for:\n%s", not, p)
		}
	}
}

// TestPLAN_1_ImplementerPromptOffersTheSplit: the implementer is told how
// to report a task too large, and how to name what it needs — except a
// part (never split again) and a fix (a task is split only before its
// first commit).
func TestPLAN_1_ImplementerPromptOffersTheSplit(t *testing.T) {
	whole := &Task{ID: "a", Prompt: "do a"}
	part := &Task{ID: "a-part1", Prompt: "do a's first part", SplitFrom: "a"}
	for _, c := range []struct {
		task *Task
		kind DispatchKind
		want bool
	}{{whole, DispatchFirst, true}, {whole, DispatchAgain, true}, {whole, DispatchFix, false}, {part, DispatchFirst, false}} {
		p := RenderImplementPrompt(agent.Task{}, ImplementInput{Task: c.task, Dispatch: Dispatch{N: 1, Kind: c.kind}})
		if got := strings.Contains(p, `reason starting with "too large:"`); got != c.want {
			t.Errorf("%s %s: offers the split %v, want %v", c.task.ID, c.kind, got, c.want)
		}
		if !strings.Contains(p, "converge reads you exactly that") {
			t.Errorf("%s %s: the prompt does not say how to ask for context", c.task.ID, c.kind)
		}
	}
}

// TestPLAN_1_SplitLeavesItsInputAlone: Decide stays pure through a split:
// the same input gives the same answer, and the input's plan is as it was.
func TestPLAN_1_SplitLeavesItsInputAlone(t *testing.T) {
	st := newRun(mustPlan(t, splitPlan), 1)
	st.Config.Judge = "reviewer"
	st.Tasks[0].Phase, st.Tasks[0].TooLarge = PhaseSplitting, "two things"
	obs := Observation{Now: t0, Head: "c0", Splits: []SplitDone{threeParts("a", "")}}
	before := fmt.Sprintf("%+v", st.Config.Plan)
	n1, a1, _ := Decide(st, obs)
	n2, a2, _ := Decide(st, obs)
	if fmt.Sprint(n1.Config.Plan, n1.Tasks, a1) != fmt.Sprint(n2.Config.Plan, n2.Tasks, a2) {
		t.Error("Decide gave two answers to one input")
	}
	if after := fmt.Sprintf("%+v", st.Config.Plan); after != before || len(st.Tasks) != 2 {
		t.Errorf("Decide changed its input's plan:\n%s\n%s", before, after)
	}
	if len(n1.Tasks) != 5 || len(n1.Config.Plan.Tasks) != 5 || n1.Tasks[1].ID != "a-part1" || n1.Config.Plan.Groups[0].Tasks[3] != "a-part3" {
		t.Errorf("after the split: %+v / %+v", n1.Tasks, n1.Config.Plan.Groups)
	}
}
