package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustPlan(t *testing.T, src string) Plan {
	t.Helper()
	p, err := Parse("plan.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return *p
}

// sim is a scripted world around Decide: implementers and reviewers
// answer by script, commits are names, and it records what ran.
type sim struct {
	t    *testing.T
	impl func(task string, d Dispatch) Report
	rev  func(task string, n int) Review
	// judge gives the verdicts of a run with a judge (Config.Judge);
	// splitter its splits.
	judge    func(task string, concerns []string) []ConcernVerdict
	splitter func(task, reason string) SplitDone
	head     string
	tk       map[string]TicketView
	// batches are the task ids of each dispatch batch; log what ran.
	batches [][]string
	log     []string
	// claimOnly: these tickets are claimed and never finished, as by a
	// converge killed mid-task (once each).
	claimOnly map[string]bool
}

func newSim(t *testing.T) *sim {
	return &sim{t: t, head: "c0", tk: map[string]TicketView{}, claimOnly: map[string]bool{},
		impl: func(string, Dispatch) Report { return Report{Implementer: TaskDone} },
		rev:  func(string, int) Review { return Review{Valid: true, Approved: true} },
		judge: func(_ string, cs []string) []ConcernVerdict {
			var out []ConcernVerdict
			for _, c := range cs {
				out = append(out, ConcernVerdict{Concern: c, Verdict: VerdictJustified, By: "judge test"})
			}
			return out
		},
		splitter: func(task, _ string) SplitDone { return SplitDone{Task: task, Note: "no splitter scripted"} }}
}

func (s *sim) run(st State) State {
	s.t.Helper()
	obs := Observation{Now: t0, Head: s.head, Tickets: s.tk}
	for range 300 {
		next, acts, done := Decide(st, obs)
		st = next
		if done {
			return st
		}
		obs = Observation{Now: t0.Add(time.Minute), Head: s.head, Tickets: s.tk}
		for _, a := range acts {
			switch a.Kind {
			case ActDispatch:
				var ids []string
				for _, j := range a.Jobs {
					ids = append(ids, j.Task)
					d := j.Dispatch
					s.log = append(s.log, fmt.Sprintf("dispatch %s %s", j.Task, d.Kind))
					if s.claimOnly[d.Ticket] {
						delete(s.claimOnly, d.Ticket)
						s.tk[d.Ticket] = TicketView{Status: store.TicketClaimed}
						continue
					}
					rep := s.impl(j.Task, d)
					rep.From, rep.Head = d.From, d.From
					if rep.Failure == "" && (rep.Implementer == TaskDone || rep.Implementer == TaskDoneWithConcerns) {
						rep.Head = "c-" + d.Ticket
						s.head = rep.Head
					}
					s.tk[d.Ticket] = TicketView{Status: store.TicketDone, Report: &rep}
				}
				s.batches = append(s.batches, ids)
			case ActReview:
				s.log = append(s.log, fmt.Sprintf("review %s %d", a.Task, a.N))
				r := s.rev(a.Task, a.N)
				r.N, r.Base, r.Head = a.N, a.Base, a.Head
				obs.Reviews = append(obs.Reviews, ReviewDone{Task: a.Task, Review: r})
			case ActUnwind:
				s.log = append(s.log, "unwind "+a.Task)
				s.head = a.Base
				obs.Kept = append(obs.Kept, a.Task)
			case ActJudge:
				s.log = append(s.log, fmt.Sprintf("judge %s %d", a.Task, a.N))
				obs.Judged = append(obs.Judged, JudgeDone{Task: a.Task, N: a.N, Verdicts: s.judge(a.Task, a.Concerns)})
			case ActSplit:
				s.log = append(s.log, "split "+a.Task)
				sd := s.splitter(a.Task, a.Reason)
				sd.Task = a.Task
				obs.Splits = append(obs.Splits, sd)
			}
		}
		obs.Head = s.head
	}
	s.t.Fatal("the run did not end in 300 steps")
	return st
}

func task(st State, id string) TaskState {
	for _, t := range st.Tasks {
		if t.ID == id {
			return t
		}
	}
	panic("no task " + id)
}

func newRun(p Plan, parallel int) State {
	return NewState("r1", Config{Plan: p, Agent: "command", Reviewer: "command", Parallel: parallel})
}

const groupsPlan = `
groups:
  - name: first
    parallel: true
    tasks:
      - {id: a, prompt: do a, files: [a.go]}
      - {id: b, prompt: do b, files: [b.go]}
      - {id: c, prompt: do c, files: [a.go]}
  - name: second
    parallel: true
    tasks:
      - {id: d, prompt: do d, files: [d.go], depends_on: [a]}
      - {id: e, prompt: do e, files: [e.go], depends_on: [b]}
`

func TestAG_P1_ParallelBatchNeverJoinsIntersectingFiles(t *testing.T) {
	s := newSim(t)
	st := s.run(newRun(mustPlan(t, groupsPlan), 3))
	if st.Terminal == nil || st.Terminal.Status != StatusComplete {
		t.Fatalf("terminal = %+v", st.Terminal)
	}
	if got := s.batches[0]; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("first batch = %v, want a and b at once (c shares a.go with a)", got)
	}
	for i, b := range s.batches {
		if slices.Contains(b, "c") && slices.Contains(b, "a") {
			t.Errorf("batch %d runs a and c at once: %v", i, b)
		}
	}
}

func TestAG_P1_BarrierWaitsForItsWholeGroup(t *testing.T) {
	s := newSim(t)
	st := s.run(newRun(mustPlan(t, groupsPlan), 3))
	// d depends only on a, but the first group's barrier holds it until
	// c, the group's last task, has ended.
	iC := slices.Index(s.log, "review c 1")
	iD := slices.Index(s.log, "dispatch d first")
	if iC < 0 || iD < 0 || iD < iC {
		t.Errorf("d started before the barrier of its earlier group: %q", s.log)
	}
	if task(st, "d").Phase != PhaseDone {
		t.Errorf("d = %+v", task(st, "d"))
	}
}

func TestAG_P1_NoBarrierLetsLaterGroupStart(t *testing.T) {
	p := mustPlan(t, strings.Replace(groupsPlan, "    parallel: true\n    tasks:\n      - {id: a", "    parallel: true\n    barrier: false\n    tasks:\n      - {id: a", 1))
	s := newSim(t)
	s.run(newRun(p, 2))
	if iD, iC := slices.Index(s.log, "dispatch d first"), slices.Index(s.log, "review c 1"); iD < 0 || iC < 0 || iD > iC {
		t.Errorf("without a barrier d should start once a is done, before c has ended: %q", s.log)
	}
}

func TestAG_P1_BlockedTaskSkipsDependentsOnly(t *testing.T) {
	s := newSim(t)
	s.impl = func(id string, d Dispatch) Report {
		if id == "a" {
			return Report{Implementer: TaskBlocked, Reason: "the API it needs does not exist", Attempts: []Attempt{{Status: TaskBlocked}}}
		}
		return Report{Implementer: TaskDone}
	}
	st := s.run(newRun(mustPlan(t, groupsPlan), 1))
	want := map[string]string{"a": TaskBlocked, "b": TaskDone, "c": TaskDone, "d": TaskSkipped, "e": TaskDone}
	for id, w := range want {
		if got := task(st, id); got.Status != w {
			t.Errorf("%s = %s (%s), want %s", id, got.Status, got.BlockReason, w)
		}
	}
	if r := task(st, "d").BlockReason; !strings.Contains(r, "depends on a, which is BLOCKED") {
		t.Errorf("d's reason = %q", r)
	}
	if st.Terminal.Status != StatusBlocked || st.Terminal.ExitCode != 3 {
		t.Errorf("terminal = %+v, want blocked exit 3", st.Terminal)
	}
}

func TestAG_P1_SequentialGroupRunsOneAtATime(t *testing.T) {
	p := mustPlan(t, `
groups:
  - name: seq
    tasks:
      - {id: a, prompt: do a, files: [a.go]}
      - {id: b, prompt: do b, files: [b.go]}
`)
	s := newSim(t)
	s.run(newRun(p, 4))
	for _, b := range s.batches {
		if len(b) > 1 {
			t.Fatalf("a sequential group ran %v at once", b)
		}
	}
}

func TestAG_P1_TaskWithoutFilesRunsAlone(t *testing.T) {
	p := mustPlan(t, `
groups:
  - parallel: true
    tasks:
      - {id: a, prompt: do a}
      - {id: b, prompt: do b, files: [b.go]}
`)
	s := newSim(t)
	s.run(newRun(p, 4))
	for _, b := range s.batches {
		if len(b) > 1 {
			t.Fatalf("a task without files ran beside another: %v", b)
		}
	}
}

const onePlan = `
models: [small, large]
groups:
  - tasks:
      - {id: a, prompt: do a, files: [a.go]}
`

// TestAG_T2_ImplementerStatuses: a dispatch ends DONE, DONE_WITH_CONCERNS
// or BLOCKED after its attempts (the protocol inside a dispatch is
// agent.Runner.Dispatch's); each end gets its orchestrator action.
func TestAG_T2_ImplementerStatuses(t *testing.T) {
	cases := []struct {
		name    string
		answer  Report
		status  string
		log     []string
		reason  string
		retries int
		models  []string
	}{
		{name: "done is reviewed", answer: Report{Implementer: TaskDone, Attempts: []Attempt{{Model: "small", Status: TaskDone}}},
			status: TaskDone, log: []string{"dispatch a first", "review a 1"}, models: []string{"small"}},
		{name: "concerns are recorded and reviewed", answer: Report{Implementer: TaskDoneWithConcerns, Concerns: []string{"file is getting long"}},
			status: TaskDoneWithConcerns, log: []string{"dispatch a first", "review a 1"}},
		{name: "done after more context and a stronger model", answer: Report{Implementer: TaskDone, Attempts: []Attempt{{Model: "small", Status: TaskNeedsContext}, {Model: "small", Context: true, Status: TaskNeedsContext}, {Model: "large", Context: true, Status: TaskDone}}},
			status: TaskDone, log: []string{"dispatch a first", "review a 1"}, retries: 2, models: []string{"small", "large"}},
		{name: "a critical concern blocks, unreviewed", answer: Report{Implementer: TaskBlocked, Concerns: []string{"minor thing", "Critical: drops user data on retry"}, Attempts: []Attempt{{Status: TaskBlocked}}},
			status: TaskBlocked, log: []string{"dispatch a first"}, reason: "the implementer marked a concern critical: Critical: drops user data"},
		{name: "the strongest model failing is blocked", answer: Report{Implementer: TaskBlocked, Reason: "no such API", Attempts: []Attempt{{Model: "small", Status: TaskBlocked}, {Model: "large", Status: TaskBlocked}}},
			status: TaskBlocked, log: []string{"dispatch a first"}, reason: "BLOCKED after 2 attempt(s), models small → large: no such API", retries: 1, models: []string{"small", "large"}},
		{name: "an agent that cannot run fails the task", answer: Report{Failure: "agent command could not run: exited 2"},
			status: TaskBlocked, log: []string{"dispatch a first"}, reason: "could not run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t)
			n := 0
			s.impl = func(string, Dispatch) Report { n++; return c.answer }
			st := s.run(newRun(mustPlan(t, onePlan), 1))
			a := task(st, "a")
			if a.Status != c.status || !slices.Equal(s.log, c.log) || !strings.Contains(a.BlockReason, c.reason) {
				t.Errorf("status %s, reason %q, log %q; want %s, %q, %q", a.Status, a.BlockReason, s.log, c.status, c.reason, c.log)
			}
			r := BuildResult(st, t0).Tasks[0]
			if r.Retries != c.retries || !slices.Equal(r.Models, c.models) {
				t.Errorf("retries %d models %v, want %d %v", r.Retries, r.Models, c.retries, c.models)
			}
			if n != 1 {
				t.Errorf("%d dispatches, want 1", n)
			}
		})
	}
}

func TestAG_T2_FailedAgentFailsTheRun(t *testing.T) {
	s := newSim(t)
	s.impl = func(string, Dispatch) Report { return Report{Failure: "agent command could not run"} }
	st := s.run(newRun(mustPlan(t, onePlan), 1))
	if st.Terminal.Status != StatusFailed || st.Terminal.ExitCode != 1 {
		t.Errorf("terminal = %+v, want failed exit 1 (AG-T4)", st.Terminal)
	}
}

func TestAG_T2_ConcernsAndOutsideFilesAreRecorded(t *testing.T) {
	s := newSim(t)
	s.impl = func(string, Dispatch) Report {
		return Report{Implementer: TaskDoneWithConcerns, Concerns: []string{"the file is getting long"}, Outside: []string{"other.go"}, Changed: []string{"a.go", "other.go"}}
	}
	st := s.run(newRun(mustPlan(t, onePlan), 1))
	a := task(st, "a")
	if a.Status != TaskDoneWithConcerns || len(a.Concerns) != 2 || !strings.Contains(a.Concerns[1], "other.go") {
		t.Errorf("task = %+v", a)
	}
	if !slices.Equal(a.Changed, []string{"a.go", "other.go"}) {
		t.Errorf("changed = %v", a.Changed)
	}
}

func TestPLAN_1_ReviewLoop(t *testing.T) {
	important := Review{Valid: true, Issues: []Issue{{Severity: "important", Summary: "no test for the empty input"}}}
	minor := Review{Valid: true, Issues: []Issue{{Severity: "minor", Summary: "name could be clearer"}}}
	approved := Review{Valid: true, Approved: true}
	cases := []struct {
		name    string
		reviews []Review
		status  string
		fixes   int
		reason  string
	}{
		{name: "approved at once", reviews: []Review{approved}, status: TaskDone},
		{name: "minor issues only do not block", reviews: []Review{minor}, status: TaskDone},
		{name: "fixed on the second iteration", reviews: []Review{important, approved}, status: TaskDone, fixes: 1},
		{name: "never approved is not approved after two fix iterations", reviews: []Review{important, important, important}, status: TaskNotApproved, fixes: 2},
		{name: "approved yet with an important issue is not approved", reviews: []Review{{Valid: true, Approved: true, Issues: important.Issues}, approved}, status: TaskDone, fixes: 1},
		{name: "a refusal without issues is not approved", reviews: []Review{{Valid: true, Summary: "wrong approach"}, approved}, status: TaskDone, fixes: 1},
		{name: "an invalid answer approves nothing", reviews: []Review{{Note: "the review fails its schema"}}, status: TaskBlocked, reason: "no valid review: the review fails its schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t)
			var fixes []Dispatch
			s.impl = func(_ string, d Dispatch) Report {
				if d.Kind == DispatchFix {
					fixes = append(fixes, d)
				}
				return Report{Implementer: TaskDone}
			}
			s.rev = func(_ string, n int) Review { return c.reviews[n-1] }
			st := s.run(newRun(mustPlan(t, onePlan), 1))
			a := task(st, "a")
			if a.Status != c.status || a.Fixes != c.fixes || !strings.Contains(a.BlockReason, c.reason) || len(a.Reviews) != len(c.reviews) {
				t.Fatalf("status %s fixes %d reviews %d reason %q; want %s %d %d %q", a.Status, a.Fixes, len(a.Reviews), a.BlockReason, c.status, c.fixes, len(c.reviews), c.reason)
			}
			for i, f := range fixes {
				if len(f.Issues) == 0 || !f.Issues[0].Blocking() {
					t.Errorf("fix %d carries no open issue: %+v", i+1, f)
				}
				if want := "c-" + a.Dispatches[0].Ticket; i == 0 && f.From != want {
					t.Errorf("fix 1 starts from %s, want the task's commit %s", f.From, want)
				}
			}
			if c.status == TaskBlocked && a.Head != a.Base && (!a.Undone || s.head != "c0") {
				t.Errorf("a blocked task's commits stay on the branch: head %s, task %+v", s.head, a)
			}
		})
	}
}

func TestPLAN_1_InterruptedDispatchIsHandedOutAnew(t *testing.T) {
	s := newSim(t)
	s.claimOnly[TicketID("r1", "a", 1)] = true
	st := s.run(newRun(mustPlan(t, onePlan), 1))
	a := task(st, "a")
	if a.Status != TaskDone || len(a.Dispatches) != 2 {
		t.Fatalf("task = %+v", a)
	}
	if d := a.Dispatches[0]; d.Outcome != "interrupted" {
		t.Errorf("first dispatch = %+v", d)
	}
	if d := a.Dispatches[1]; d.Kind != DispatchAgain || d.Ticket != TicketID("r1", "a", 2) || d.From != "c0" {
		t.Errorf("second dispatch = %+v", d)
	}
	if r := BuildResult(st, t0).Tasks[0]; r.Retries != 0 {
		t.Errorf("an interrupted dispatch counted as a retry: %d", r.Retries)
	}
}

func TestPLAN_1_FinishedTaskIsNotRepeated(t *testing.T) {
	// A state whose task a ended, resumed: Decide never dispatches a.
	p := mustPlan(t, groupsPlan)
	st := newRun(p, 1)
	st.Tasks[0].Phase, st.Tasks[0].Status, st.Tasks[0].Head = PhaseDone, TaskDone, "c1"
	_, acts, _ := Decide(st, Observation{Now: t0, Head: "c1"})
	for _, a := range acts {
		for _, j := range a.Jobs {
			if j.Task == "a" {
				t.Fatalf("a finished task is dispatched again: %+v", acts)
			}
		}
	}
}

func TestPLAN_1_StopBlocksWhatIsInProgress(t *testing.T) {
	p := mustPlan(t, groupsPlan)
	// Stopped before anything ran: nothing to put back.
	if _, acts, done := Decide(newRun(p, 1), Observation{Now: t0, Head: "c0", StopRequested: true}); !done || len(acts) != 0 {
		t.Fatalf("stop before any dispatch: done %v acts %+v", done, acts)
	}
	st, _, _ := Decide(newRun(p, 1), Observation{Now: t0, Head: "c0"})
	// A dispatch is out (its converge may be gone): the tree goes back
	// to HEAD, dropping its uncommitted change.
	st, acts, done := Decide(st, Observation{Now: t0, Head: "c0", StopRequested: true})
	if !done || st.Terminal.Status != StatusBlocked || len(acts) != 1 || acts[0].Kind != ActReset || acts[0].Head != "c0" {
		t.Fatalf("stop: done %v terminal %+v acts %+v", done, st.Terminal, acts)
	}
	if a := task(st, "a"); a.Status != TaskBlocked {
		t.Errorf("a = %+v", a)
	}
	if b := task(st, "b"); b.Status != TaskSkipped {
		t.Errorf("b = %+v", b)
	}
}

func TestPLAN_1_DecideIsPure(t *testing.T) {
	st := newRun(mustPlan(t, groupsPlan), 2)
	obs := Observation{Now: t0, Head: "c0"}
	a1, x1, _ := Decide(st, obs)
	a2, x2, _ := Decide(st, obs)
	if fmt.Sprint(a1, x1) != fmt.Sprint(a2, x2) {
		t.Error("Decide gave two answers to one input")
	}
	if st.Tasks[0].Phase != PhasePending || st.Seq != 0 {
		t.Error("Decide changed its input state")
	}
}

// TestAG_P1_FixStartsOnTopOfOtherTasks: with tasks committed after a
// task's own commit, its fix starts from the branch's HEAD, so nothing
// another task committed is reset away.
func TestAG_P1_FixStartsOnTopOfOtherTasks(t *testing.T) {
	p := mustPlan(t, `
groups:
  - parallel: true
    tasks:
      - {id: a, prompt: do a, files: [a.go]}
      - {id: b, prompt: do b, files: [b.go]}
`)
	s := newSim(t)
	var fix Dispatch
	s.impl = func(_ string, d Dispatch) Report {
		if d.Kind == DispatchFix {
			fix = d
		}
		return Report{Implementer: TaskDone}
	}
	s.rev = func(id string, n int) Review {
		if id == "a" && n == 1 {
			return Review{Valid: true, Issues: []Issue{{Severity: "important", Summary: "missing test"}}}
		}
		return Review{Valid: true, Approved: true}
	}
	st := s.run(newRun(p, 2))
	bHead := task(st, "b").Dispatches[0].Report.Head
	if fix.Ticket == "" || fix.From != bHead {
		t.Fatalf("a's fix starts from %q, want the branch's HEAD %q (b's commit)", fix.From, bHead)
	}
	if a := task(st, "a"); a.Base != "c0" || a.Status != TaskDone {
		t.Errorf("a = %+v", a)
	}
}
