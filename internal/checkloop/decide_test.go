package checkloop

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/store"
)

// sim is a world for Decide alone: a repository whose trees are names,
// children that are functions, a check that is a function of the tree.
// It plays Observe and Act so the tables below read as runs.
type sim struct {
	t  *testing.T
	st State

	now        time.Time
	head, tree string
	heads      map[string]string // commit → tree
	changed    []string          // paths the tree differs in from the in-flight iteration's start

	tickets map[string]*TicketView
	checks  []Check
	commits []CommitDone
	stop    bool

	// child is iteration n's work: the tree it leaves, the paths it
	// changed, its report. nil report: the child was killed mid-way (the
	// ticket stays claimed).
	child func(n int, tree string) (after string, changed []string, rep *AgentReport)
	// check says whether tree passes, and prints out.
	check func(key, tree string) (passed bool, out string, verdict *Verdict)
	// tests, when set, is the test census of a check on tree (LOOP-8).
	tests func(tree string) census.Census

	acts []Action // every action asked, in order
}

func newSim(t *testing.T, cfg Config) *sim {
	s := &sim{
		t: t, st: NewState("r1", cfg),
		now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), head: "c0", tree: "t0",
		heads: map[string]string{"c0": "t0"}, tickets: map[string]*TicketView{},
	}
	s.check = func(key, tree string) (bool, string, *Verdict) { return false, "FAIL " + tree, nil }
	return s
}

func mechanical() Config {
	return Config{Goal: "make the tests pass", Oracle: Oracle{Class: Mechanical, Command: "go test ./..."}, Agent: "command",
		Protect: []string{"*_test.go", "/check.sh"}, MaxIterations: 5}
}

func judged() Config {
	c := mechanical()
	c.Oracle = Oracle{Class: Judged, Judge: "command: ./judge.sh"}
	return c
}

func (s *sim) observe() Observation {
	obs := Observation{Now: s.now, Head: s.head, Tree: s.tree, Checks: s.checks, Commits: s.commits, StopRequested: s.stop}
	s.checks, s.commits = nil, nil
	if cur := s.st.InFlight(); cur != nil {
		obs.Ticket = s.tickets[cur.Ticket]
		obs.Changed = s.changed
	}
	return obs
}

// step runs one Decide and plays its actions; it reports done.
func (s *sim) step() bool {
	s.t.Helper()
	obs := s.observe()
	before := mustJSON(s.t, s.st)
	next, acts, done := Decide(s.st, obs)
	if after := mustJSON(s.t, s.st); after != before {
		s.t.Fatalf("Decide changed its input state:\n%s\n%s", before, after)
	}
	// Pure: the same input decides the same.
	next2, acts2, done2 := Decide(s.st, obs)
	if !reflect.DeepEqual(next, next2) || !reflect.DeepEqual(acts, acts2) || done != done2 {
		s.t.Fatalf("Decide is not deterministic")
	}
	if done != (next.Terminal != nil) {
		s.t.Fatalf("done=%v but terminal %+v", done, next.Terminal)
	}
	s.st = next
	for _, a := range acts {
		s.acts = append(s.acts, a)
		s.act(a)
	}
	s.now = s.now.Add(time.Minute)
	return done
}

func (s *sim) act(a Action) {
	switch a.Kind {
	case ActIterate:
		if CheckCanonical(a.Packet) != nil {
			s.t.Fatalf("packet of %s is not canonical: %s", a.Ticket, a.Packet)
		}
		if t := s.tickets[a.Ticket]; t != nil && t.Status != store.TicketOpen {
			return // claimed once: never run again
		}
		after, changed, rep := s.child(a.N, s.tree)
		s.tree, s.changed = after, changed
		if rep == nil {
			s.tickets[a.Ticket] = &TicketView{ID: a.Ticket, Status: store.TicketClaimed, Owner: "old"}
			return
		}
		s.tickets[a.Ticket] = &TicketView{ID: a.Ticket, Status: store.TicketDone, Owner: "child", Report: rep}
	case ActCheck:
		tree := s.tree // what the check ran on, whatever it left
		passed, out, v := s.check(a.Key, tree)
		code := 1
		if passed {
			code = 0
		}
		c := Check{Key: a.Key, Tree: tree, Head: s.head, Passed: passed, ExitCode: code, Output: out, Digest: digest(out), Verdict: v}
		if s.tests != nil {
			cs := s.tests(tree)
			c.Census, c.Tests = &cs, cs.Tests
			c.Census.Tests = nil
		}
		s.checks = append(s.checks, c)
	case ActUndo:
		if a.Interrupt {
			if t := s.tickets[a.Ticket]; t != nil && t.Status == store.TicketClaimed {
				t.Status = store.TicketInterrupted
			}
		}
		s.head, s.tree, s.changed = a.Head, s.heads[a.Head], nil
	case ActCommit:
		sha := fmt.Sprintf("c%d", a.N)
		s.heads[sha] = s.tree
		s.head = sha
		s.commits = append(s.commits, CommitDone{Ticket: a.Ticket, SHA: sha})
	}
}

// run steps until the run ends (or fails the test after many steps).
func (s *sim) run() *Terminal {
	s.t.Helper()
	for i := 0; i < 200; i++ {
		if s.step() {
			return s.st.Terminal
		}
	}
	s.t.Fatalf("no terminal after 200 steps: %+v", s.st)
	return nil
}

func (s *sim) kinds() string {
	var ks []string
	for _, a := range s.acts {
		k := string(a.Kind)
		if a.Final {
			k += "(final)"
		}
		ks = append(ks, k)
	}
	return strings.Join(ks, " ")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func done(summary string) *AgentReport {
	return &AgentReport{Agent: "command", Status: "complete", Summary: summary}
}

// fixOnePerIteration: the tree passes once `fixes` iterations changed it.
func fixOnePerIteration(s *sim, fixes int) {
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		return fmt.Sprintf("t%d", n), []string{"calc.go"}, done("fixed one")
	}
	s.check = func(key, tree string) (bool, string, *Verdict) {
		var n int
		fmt.Sscanf(tree, "t%d", &n)
		if n >= fixes {
			return true, "ok", nil
		}
		return false, fmt.Sprintf("FAIL: %d tests fail", fixes-n), nil
	}
}

// TestLOOP_5_CompleteAfterTheLoopsOwnCheckPasses: three failing tests, one
// fixed per iteration: complete after 3, each accepted iteration
// committed, exit 0.
func TestLOOP_5_CompleteAfterTheLoopsOwnCheckPasses(t *testing.T) {
	s := newSim(t, mechanical())
	fixOnePerIteration(s, 3)
	term := s.run()
	if term.Status != StatusComplete || term.ExitCode != 0 || len(s.st.Iterations) != 3 {
		t.Fatalf("want complete after 3 iterations, got %+v after %d", term, len(s.st.Iterations))
	}
	if got, want := s.kinds(), "check iterate check commit iterate check commit iterate check check commit"; got != want {
		t.Fatalf("actions %q, want %q", got, want)
	}
	for _, it := range s.st.Iterations {
		if it.Outcome != OutcomeAccepted || !it.Progress || it.Commit == "" || it.Stage != StageClosed {
			t.Fatalf("iteration %+v", it)
		}
	}
	// A run already at its goal does no iteration at all.
	s = newSim(t, mechanical())
	fixOnePerIteration(s, 0)
	if term := s.run(); term.Status != StatusComplete || len(s.st.Iterations) != 0 {
		t.Fatalf("a passing baseline: %+v, %d iterations", term, len(s.st.Iterations))
	}
}

// TestLOOP_6_AnIterationsOwnClaimNeverCounts: an agent that says it is
// done ("ALL TESTS PASS") while the check fails never ends complete: its
// record is kept, the check decides, and changing nothing stalls.
func TestLOOP_6_AnIterationsOwnClaimNeverCounts(t *testing.T) {
	s := newSim(t, mechanical())
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		return tree, nil, done("ALL TESTS PASS")
	}
	term := s.run()
	if term.Status != StatusStalled || term.ExitCode != 5 {
		t.Fatalf("want stalled (exit 5), got %+v", term)
	}
	if n := len(s.st.Iterations); n != DefaultStallIterations {
		t.Fatalf("stalled after %d iterations, want K=%d", n, DefaultStallIterations)
	}
	for _, it := range s.st.Iterations {
		if it.Outcome != OutcomeNoChange || it.Progress || it.Agent.Summary != "ALL TESTS PASS" || it.Check == nil || it.Check.Passed {
			t.Fatalf("iteration %+v", it)
		}
	}
}

// TestLOOP_6_ProtectedChangeIsUndoneAndUnverified: an iteration that
// deletes or edits the failing tests (or the check's own script) is
// rejected: undone, recorded UNVERIFIED, never progress, never committed
// — even though the check would pass on its tree.
func TestLOOP_6_ProtectedChangeIsUndoneAndUnverified(t *testing.T) {
	for _, changed := range [][]string{
		{"calc_test.go"},                // deleted or edited the tests
		{"calc.go", "pkg/more_test.go"}, // a real fix along with a test edit
		{"check.sh"},                    // the file the check names
	} {
		t.Run(strings.Join(changed, "+"), func(t *testing.T) {
			s := newSim(t, mechanical())
			s.child = func(n int, tree string) (string, []string, *AgentReport) {
				return "cheat", changed, done("removed the failing tests")
			}
			s.check = func(key, tree string) (bool, string, *Verdict) {
				return tree == "cheat", "out " + tree, nil
			}
			term := s.run()
			if term.Status == StatusComplete {
				t.Fatalf("a run whose only passing tree edits protected files ended complete")
			}
			if term.Status != StatusStalled {
				t.Fatalf("want stalled, got %+v", term)
			}
			for _, it := range s.st.Iterations {
				if it.Outcome != OutcomeUnverified || it.Progress || it.Commit != "" || len(it.Protected) == 0 {
					t.Fatalf("iteration %+v", it)
				}
				if it.Check == nil || it.Check.Tree != "t0" {
					t.Fatalf("the check after a rejected iteration ran on %+v, want the undone tree t0", it.Check)
				}
			}
			if got := s.kinds(); strings.Contains(got, "commit") || !strings.Contains(got, "iterate undo check") {
				t.Fatalf("actions %q: want undo before the check, no commit", got)
			}
			if s.tree != "t0" || s.head != "c0" {
				t.Fatalf("the work tree is %s at %s, want the start", s.tree, s.head)
			}
			if d := Digest(s.st); len(d) == 0 || !strings.Contains(d[0], "UNVERIFIED") {
				t.Fatalf("digest %q does not carry the rejected approach", d)
			}
		})
	}
}

// TestLOOP_5_StalledNeedsKIterationsWithoutProgress: an iteration whose
// change or check output moved resets the count; K in a row stall.
func TestLOOP_5_StalledNeedsKIterationsWithoutProgress(t *testing.T) {
	cfg := mechanical()
	cfg.StallIterations = 3
	cfg.MaxIterations = 10
	s := newSim(t, cfg)
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		if n == 2 {
			return "t2", []string{"calc.go"}, done("a change")
		}
		return tree, nil, done("nothing")
	}
	s.check = func(key, tree string) (bool, string, *Verdict) { return false, "FAIL", nil }
	term := s.run()
	if term.Status != StatusStalled || len(s.st.Iterations) != 5 {
		t.Fatalf("want stalled after iterations 3, 4, 5 (2 made progress), got %+v after %d", term, len(s.st.Iterations))
	}
	if !strings.Contains(term.Message, "iter.03, iter.04, iter.05") {
		t.Fatalf("message %q does not name the stalled iterations", term.Message)
	}
}

// TestLOOP_5_LimitedByEachBoundAndNeverPromoted: each bound ends the run
// limited (exit 4); a limited run stays limited whatever comes after.
func TestLOOP_5_LimitedByEachBoundAndNeverPromoted(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want int // iterations run
	}{
		{"iterations", func(c *Config) { c.MaxIterations = 2 }, 2},
		{"wall clock", func(c *Config) { c.MaxIterations = 50; c.MaxWallClock = 10 * time.Minute }, 2},
		{"cost", func(c *Config) { c.MaxIterations = 50; c.MaxCostUSD = 1 }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mechanical()
			tc.set(&cfg)
			s := newSim(t, cfg)
			fixOnePerIteration(s, 3)
			child := s.child
			s.child = func(n int, tree string) (string, []string, *AgentReport) {
				after, ch, rep := child(n, tree)
				rep.CostUSD = 0.5
				s.now = s.now.Add(3 * time.Minute) // an iteration takes 5 minutes in all
				return after, ch, rep
			}
			term := s.run()
			if term.Status != StatusLimited || term.ExitCode != 4 || len(s.st.Iterations) != tc.want {
				t.Fatalf("want limited (exit 4) after %d, got %+v after %d", tc.want, term, len(s.st.Iterations))
			}
			if !strings.Contains(term.Message, "not a success") {
				t.Fatalf("message %q", term.Message)
			}
			// Never promoted: even a check that passes now changes nothing.
			obs := s.observe()
			obs.Checks = []Check{{Key: checkKey(2), Passed: true}, {Key: checkKey(3), Passed: true}}
			next, acts, done := Decide(s.st, obs)
			if !done || len(acts) != 0 || next.Terminal.Status != StatusLimited {
				t.Fatalf("a limited run moved on: %+v %v", next.Terminal, acts)
			}
		})
	}
	// An agent stopped at a time-box the wall clock cut short ends the run
	// limited, not failed; its unfinished change is undone.
	cfg := mechanical()
	cfg.MaxWallClock = 10 * time.Minute
	s := newSim(t, cfg)
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		s.now = s.now.Add(10 * time.Minute)
		return "half", []string{"calc.go"}, &AgentReport{Status: "blocked", TimedOut: true, Failure: "agent command could not run: stopped at the 9m0s budget without a status record"}
	}
	term := s.run()
	if term.Status != StatusLimited || !strings.Contains(term.Message, "max-wall-clock 10m0s passed while iter.01 ran") {
		t.Fatalf("want limited by the wall clock, got %+v", term)
	}
	if it := s.st.Iterations[0]; it.Outcome != OutcomeTimedOut || s.tree != "t0" {
		t.Fatalf("iteration %+v, tree %s", it, s.tree)
	}

	// The budget of an agent is cut to what the wall clock leaves.
	cfg = mechanical()
	cfg.MaxWallClock, cfg.AgentBudget = 150*time.Second, 10*time.Minute
	s = newSim(t, cfg)
	fixOnePerIteration(s, 5)
	for s.st.InFlight() == nil {
		s.step()
	}
	if a := s.acts[len(s.acts)-1]; a.Kind != ActIterate || a.Budget != 90*time.Second || !a.Cut {
		t.Fatalf("first iteration's budget %s, want the 90s the wall clock leaves", a.Budget)
	}
}

// TestLOOP_5_BlockedAndFailed: a valid blocked record ends blocked (exit 3)
// with its reason; an agent that could not run ends failed (exit 1), its
// leftovers undone.
func TestLOOP_5_BlockedAndFailed(t *testing.T) {
	s := newSim(t, mechanical())
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		return tree, nil, &AgentReport{Status: "blocked", Reason: "needs the staging database"}
	}
	if term := s.run(); term.Status != StatusBlocked || term.ExitCode != 3 || !strings.Contains(term.Message, "staging database") {
		t.Fatalf("want blocked with the reason, got %+v", term)
	}

	s = newSim(t, mechanical())
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		return "half", []string{"calc.go"}, &AgentReport{Status: "blocked", Failure: "agent command could not run: exited 2 without a status record"}
	}
	term := s.run()
	if term.Status != StatusFailed || term.ExitCode != 1 || !strings.Contains(term.Message, "could not run") {
		t.Fatalf("want failed naming the agent, got %+v", term)
	}
	if got := s.kinds(); got != "check iterate undo" || s.tree != "t0" {
		t.Fatalf("actions %q, tree %s: want the leftovers undone", got, s.tree)
	}
	if it := s.st.Iterations[0]; it.Outcome != OutcomeFailed || it.Stage != StageClosed {
		t.Fatalf("iteration %+v", it)
	}
}

// TestLOOP_3_AClaimedTicketIsNeverRepeated: after a crash mid-iteration
// the claimed ticket is closed as interrupted and its change undone; the
// run goes on with the next ticket. A ticket never claimed is handed out.
func TestLOOP_3_AClaimedTicketIsNeverRepeated(t *testing.T) {
	s := newSim(t, mechanical())
	fixOnePerIteration(s, 2)
	fix := s.child
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		if n == 1 {
			return "partial", []string{"calc.go"}, nil // killed mid-way
		}
		return fix(n-1, tree)
	}
	term := s.run()
	if term.Status != StatusComplete {
		t.Fatalf("want complete, got %+v", term)
	}
	its := s.st.Iterations
	if len(its) != 3 || its[0].Outcome != OutcomeInterrupted || its[0].Progress || its[0].Ticket != "r1.iter.01" || its[1].Ticket != "r1.iter.02" {
		t.Fatalf("iterations %+v", its)
	}
	if s.tickets["r1.iter.01"].Status != store.TicketInterrupted {
		t.Fatalf("ticket 1 is %s, want interrupted", s.tickets["r1.iter.01"].Status)
	}
	iterated := map[string]int{}
	for _, a := range s.acts {
		if a.Kind == ActIterate {
			iterated[a.Ticket]++
		}
		if a.Kind == ActUndo && a.Ticket == "r1.iter.01" && !a.Interrupt {
			t.Fatalf("the undo of an interrupted ticket does not close it: %+v", a)
		}
	}
	for id, n := range iterated {
		if n != 1 {
			t.Fatalf("ticket %s dispatched %d times", id, n)
		}
	}

	// A dispatched ticket the store never saw (a crash before the claim)
	// is handed out again: it was never claimed.
	s = newSim(t, mechanical())
	fixOnePerIteration(s, 1)
	for s.st.InFlight() == nil {
		s.step()
	}
	delete(s.tickets, "r1.iter.01")
	s.tree, s.changed = "t0", nil
	next, acts, _ := Decide(s.st, s.observe())
	if len(acts) != 1 || acts[0].Kind != ActIterate || acts[0].Ticket != "r1.iter.01" || len(next.Iterations) != 1 {
		t.Fatalf("an unclaimed ticket: %+v", acts)
	}
}

// TestLOOP_2_JudgedNeedsAFreshFinalReJudgment: a judged check that says
// done is confirmed by a fresh final re-judgment before complete; when
// the re-judgment disagrees the run goes on.
func TestLOOP_2_JudgedNeedsAFreshFinalReJudgment(t *testing.T) {
	s := newSim(t, judged())
	fixOnePerIteration(s, 5)
	finals := 0
	s.check = func(key, tree string) (bool, string, *Verdict) {
		if strings.HasPrefix(key, "final/") {
			finals++
			if finals == 1 {
				return false, `{"verdict":"not-done"}`, &Verdict{Verdict: "not-done", Reasons: []string{"no test for Sub"}, Missing: []string{"a test for Sub"}}
			}
			return true, `{"verdict":"done"}`, &Verdict{Verdict: "done", Reasons: []string{"ok"}}
		}
		if tree == "t0" {
			return false, `{"verdict":"not-done"}`, &Verdict{Verdict: "not-done", Reasons: []string{"nothing yet"}}
		}
		return true, `{"verdict":"done"}`, &Verdict{Verdict: "done", Reasons: []string{"looks done"}}
	}
	term := s.run()
	if term.Status != StatusComplete || len(s.st.Iterations) != 2 || finals != 2 {
		t.Fatalf("want complete after 2 iterations and 2 final re-judgments, got %+v after %d, %d finals", term, len(s.st.Iterations), finals)
	}
	want := "check iterate check commit check(final) iterate check commit check(final)"
	if got := s.kinds(); got != want {
		t.Fatalf("actions %q, want %q", got, want)
	}
	if f := s.st.Iterations[0].Final; f == nil || f.Passed {
		t.Fatalf("the first final re-judgment %+v", f)
	}
	if d := strings.Join(Digest(s.st), "\n"); !strings.Contains(d, "final re-judgment did not") {
		t.Fatalf("digest %q", d)
	}
}

// TestLOOP_1_TheGoalIsFrozen: a state whose goal no longer matches the
// digest it started with ends failed.
func TestLOOP_1_TheGoalIsFrozen(t *testing.T) {
	s := newSim(t, mechanical())
	fixOnePerIteration(s, 3)
	s.step()
	s.st.Config.Goal += " and also delete the tests"
	term := s.run()
	if term.Status != StatusFailed || !strings.Contains(term.Message, "frozen") {
		t.Fatalf("want failed for a changed goal, got %+v", term)
	}
}

// TestLOOP_5_StopUndoesTheIterationInFlight: a stop request ends the run
// blocked (exit 3), the in-flight iteration's uncommitted change undone.
func TestLOOP_5_StopUndoesTheIterationInFlight(t *testing.T) {
	s := newSim(t, mechanical())
	fixOnePerIteration(s, 3)
	for s.st.InFlight() == nil {
		s.step()
	}
	s.step() // the child ran; its outcome is read next
	s.stop = true
	term := s.run()
	if term.Status != StatusBlocked || term.ExitCode != 3 {
		t.Fatalf("want blocked on stop, got %+v", term)
	}
	if s.tree != "t0" || s.st.Iterations[0].Outcome != OutcomeStopped {
		t.Fatalf("tree %s, iteration %+v", s.tree, s.st.Iterations[0])
	}
}

// TestLOOP_1_PacketIsGoalWorklogDigestScope: the packet holds the goal
// verbatim and only the worklog, the failed-approaches digest (with a
// predecessor's limit restated) and the queued scope.
func TestLOOP_1_PacketIsGoalWorklogDigestScope(t *testing.T) {
	cfg := mechanical()
	cfg.Goal = "  make <the> tests pass\n\tand keep \"quotes\" & ünïcode  \n"
	cfg.Predecessor = &Predecessor{Run: "r0", Status: "limited", ExitCode: 4, Iterations: 2, Message: "max-iterations 2 reached", Digest: []string{"iter.02 changed nothing"}}
	s := newSim(t, cfg)
	s.child = func(n int, tree string) (string, []string, *AgentReport) {
		r := done("tried")
		r.NextAction = "fix Mul"
		return tree, nil, r
	}
	for len(s.st.Iterations) < 2 {
		s.step()
	}
	var pk []byte
	for _, a := range s.acts {
		if a.Kind == ActIterate {
			pk = a.Packet
		}
	}
	var m map[string]json.RawMessage
	if err := DecodeRecord(pk, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range []string{"failed_approaches", "goal", "queued_scope", "worklog"} {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	if len(m) != 4 || len(keys) != 4 {
		t.Fatalf("packet keys %v, want exactly goal, worklog, failed_approaches, queued_scope", m)
	}
	var p Packet
	if err := json.Unmarshal(pk, &p); err != nil {
		t.Fatal(err)
	}
	if p.Goal != cfg.Goal {
		t.Fatalf("goal %q, want it verbatim %q", p.Goal, cfg.Goal)
	}
	if len(p.FailedApproaches) < 3 || !strings.Contains(p.FailedApproaches[0], "r0 ended limited") || !strings.Contains(p.FailedApproaches[0], "not a success") || p.FailedApproaches[1] != "from r0: iter.02 changed nothing" {
		t.Fatalf("digest %q", p.FailedApproaches)
	}
	if len(p.QueuedScope) != 1 || p.QueuedScope[0] != "fix Mul" {
		t.Fatalf("queued scope %q", p.QueuedScope)
	}
	if !strings.Contains(p.Worklog, "iter.01: changed nothing") || !strings.Contains(p.Worklog, "FAIL t0") {
		t.Fatalf("worklog %q", p.Worklog)
	}
}

// TestLOOP_8_APassCountsOnlyWhenConfirmed: a passing mechanical check is
// rerun on the same tree until it passed `confirm` runs in a row; a rerun
// that fails makes it flaky: never complete, the run ends blocked with
// both outputs, at the baseline as after an iteration.
func TestLOOP_8_APassCountsOnlyWhenConfirmed(t *testing.T) {
	// flakyEvery: the check passes on every other run, whatever the tree.
	flakyEvery := func(s *sim, firstPasses bool) *int {
		runs := 0
		s.check = func(key, tree string) (bool, string, *Verdict) {
			runs++
			if (runs%2 == 1) == firstPasses {
				return true, fmt.Sprintf("ok run %d", runs), nil
			}
			return false, fmt.Sprintf("--- FAIL: TestAdd run %d", runs), nil
		}
		return &runs
	}
	t.Run("flaky at the baseline", func(t *testing.T) {
		s := newSim(t, mechanical())
		flakyEvery(s, true)
		term := s.run()
		if term.Status != StatusBlocked || term.ExitCode != 3 || len(s.st.Iterations) != 0 {
			t.Fatalf("want blocked (exit 3) with no iteration, got %+v after %d", term, len(s.st.Iterations))
		}
		for _, want := range []string{"the done-check is flaky", "run 1 passed: ok run 1", "run 2 failed (exit 1): --- FAIL: TestAdd run 2", "check/00"} {
			if !strings.Contains(term.Message, want) {
				t.Errorf("terminal %q lacks %q", term.Message, want)
			}
		}
		b := s.st.Baseline
		if b.Passed || !b.Flaky || b.Confirmed || len(b.Reruns) != 1 || b.Reruns[0].Key != "check/00#2" {
			t.Fatalf("baseline %+v", b)
		}
		if got := s.kinds(); got != "check check" {
			t.Fatalf("actions %q", got)
		}
	})
	t.Run("flaky after an iteration that changed nothing", func(t *testing.T) {
		s := newSim(t, mechanical())
		flakyEvery(s, false) // the baseline fails, the next run passes, the rerun fails
		s.child = func(n int, tree string) (string, []string, *AgentReport) { return tree, nil, done("ALL TESTS PASS") }
		term := s.run()
		if term.Status != StatusBlocked || len(s.st.Iterations) != 1 {
			t.Fatalf("want blocked after 1 iteration, got %+v after %d", term, len(s.st.Iterations))
		}
		it := s.st.Iterations[0]
		if it.Check == nil || it.Check.Passed || !it.Check.Flaky || !strings.Contains(term.Message, "after 1 iteration") {
			t.Fatalf("iteration %+v, terminal %q", it, term.Message)
		}
	})
	t.Run("a resumed run asks for the rerun it had not seen", func(t *testing.T) {
		s := newSim(t, mechanical())
		fixOnePerIteration(s, 0)
		s.step() // the baseline's first run
		s.step() // it passed: the rerun is asked, and its result lost (converge killed)
		s.checks = nil
		_, acts, done := Decide(s.st, s.observe())
		if done || len(acts) != 1 || acts[0].Kind != ActCheck || acts[0].Key != "check/00#2" || acts[0].Rerun != 2 {
			t.Fatalf("after a restart: %+v (done %v), want the rerun check/00#2 again", acts, done)
		}
	})
	t.Run("confirm 3", func(t *testing.T) {
		cfg := mechanical()
		cfg.Confirm = 3
		s := newSim(t, cfg)
		fixOnePerIteration(s, 1)
		if term := s.run(); term.Status != StatusComplete {
			t.Fatalf("want complete, got %+v", term)
		}
		if got, want := s.kinds(), "check iterate check check check commit"; got != want {
			t.Fatalf("actions %q, want %q", got, want)
		}
		if c := s.st.Iterations[0].Check; !c.Confirmed || len(c.Reruns) != 2 || c.Reruns[1].Key != "check/01#3" {
			t.Fatalf("check %+v", c)
		}
	})
	t.Run("confirm 1 is the old single run", func(t *testing.T) {
		cfg := mechanical()
		cfg.Confirm = 1
		s := newSim(t, cfg)
		fixOnePerIteration(s, 0)
		if term := s.run(); term.Status != StatusComplete || s.kinds() != "check" {
			t.Fatalf("got %+v, actions %q", term, s.kinds())
		}
	})
	t.Run("a check that changes the tree every run is never confirmed", func(t *testing.T) {
		s := newSim(t, mechanical())
		runs := 0
		s.check = func(key, tree string) (bool, string, *Verdict) {
			runs++
			s.tree = fmt.Sprintf("%s+log%d", tree, runs) // it writes into the repository
			return true, "ok", nil
		}
		term := s.run()
		if term.Status != StatusBlocked || !strings.Contains(term.Message, "the done-check is not confirmed: `go test ./...` changed the work tree each time it ran") || !strings.Contains(term.Message, "make the check leave the work tree alone") {
			t.Fatalf("want blocked, unconfirmed, got %+v", term)
		}
		if got := s.kinds(); got != "check check check" {
			t.Fatalf("actions %q: want the run and two reruns", got)
		}
	})
	t.Run("a check that writes a file once is confirmed on the next two runs", func(t *testing.T) {
		s := newSim(t, mechanical())
		s.check = func(key, tree string) (bool, string, *Verdict) {
			if !strings.HasSuffix(tree, "+out") {
				s.tree = tree + "+out"
			}
			return true, "ok", nil
		}
		if term := s.run(); term.Status != StatusComplete || s.kinds() != "check check check" {
			t.Fatalf("got %+v, actions %q", term, s.kinds())
		}
	})
}

// goCensus is a known go census of tests, each "p" (passed), "f"
// (failed) or "s" (skipped).
func goCensus(tests map[string]string) census.Census {
	c := census.Census{Known: true, Ecosystem: census.Go, Tests: map[string]census.Counts{}}
	for id, o := range tests {
		switch o {
		case "p":
			c.Tests[id] = census.Counts{Passed: 1}
			c.Passed++
		case "f":
			c.Tests[id] = census.Counts{Failed: 1}
			c.Failed++
		case "s":
			c.Tests[id] = census.Counts{Skipped: 1}
			c.Skipped++
		}
	}
	c.Ran = c.Passed + c.Failed
	return c
}

// TestLOOP_8_APassWithFewerTestsIsUnverified: the test census holds a
// pass to the tests that ran at the start. A pass on which a test no
// longer runs (an init that exits 0) or now skips (a flag that skips) is
// UNVERIFIED: undone, never committed, never complete; a real fix that
// keeps every test passes. --allow-test-removal lets the loss count. With
// no census at the start there is nothing to hold a pass to.
func TestLOOP_8_APassWithFewerTestsIsUnverified(t *testing.T) {
	start := map[string]string{"calc.TestAdd": "f", "calc.TestMul": "f"}
	for _, tc := range []struct {
		name  string
		after map[string]string // the census on the tree the cheat leaves
		lost  string
	}{
		{"init exits 0", map[string]string{}, "no test ran, and a pass that runs no test proves nothing; tests that ran before no longer run: calc.TestAdd, calc.TestMul"},
		{"a test newly skipped", map[string]string{"calc.TestAdd": "p", "calc.TestMul": "s"}, "tests that ran before now skip: calc.TestMul"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, mechanical())
			s.child = func(n int, tree string) (string, []string, *AgentReport) {
				return "cheat", []string{"zz_init.go"}, done("all green")
			}
			s.check = func(key, tree string) (bool, string, *Verdict) { return tree == "cheat", "out " + tree, nil }
			s.tests = func(tree string) census.Census {
				if tree == "cheat" {
					return goCensus(tc.after)
				}
				return goCensus(start)
			}
			term := s.run()
			if term.Status != StatusStalled {
				t.Fatalf("want stalled, got %+v", term)
			}
			for _, it := range s.st.Iterations {
				if it.Outcome != OutcomeUnverified || it.Progress || it.Commit != "" || it.TestsLost != tc.lost {
					t.Fatalf("iteration %+v", it)
				}
				if it.Rejected == nil || !it.Rejected.Passed || it.Rejected.Tree != "cheat" || it.Rejected.Tests != nil {
					t.Fatalf("rejected pass %+v", it.Rejected)
				}
				if it.Check == nil || it.Check.Tree != "t0" || it.Check.Passed {
					t.Fatalf("the check after the undo %+v", it.Check)
				}
			}
			if got := s.kinds(); strings.Contains(got, "commit") || !strings.Contains(got, "iterate check check undo check") {
				t.Fatalf("actions %q: want the pass confirmed, then undone and checked again, no commit", got)
			}
			if s.tree != "t0" || s.head != "c0" {
				t.Fatalf("the work tree is %s at %s, want the start", s.tree, s.head)
			}
			if len(s.st.Baseline.Tests) != 2 {
				t.Fatalf("the baseline lost its per-test counts: %+v", s.st.Baseline)
			}
			if d := Digest(s.st); len(d) == 0 || !strings.Contains(d[0], tc.lost) {
				t.Fatalf("digest %q does not carry why", d)
			}

			// The goal asks to remove tests: the pass counts, the loss is recorded.
			cfg := mechanical()
			cfg.AllowTestRemoval = true
			s2 := newSim(t, cfg)
			s2.child, s2.check, s2.tests = s.child, s.check, s.tests
			if term := s2.run(); term.Status != StatusComplete || s2.st.Iterations[0].Check.Lost != tc.lost {
				t.Fatalf("with AllowTestRemoval: %+v, check %+v", term, s2.st.Iterations[0].Check)
			}
		})
	}
	t.Run("a real fix keeps every test", func(t *testing.T) {
		s := newSim(t, mechanical())
		fixOnePerIteration(s, 1)
		s.tests = func(tree string) census.Census {
			if tree == "t0" {
				return goCensus(start)
			}
			return goCensus(map[string]string{"calc.TestAdd": "p", "calc.TestMul": "p", "calc.TestNew": "p"})
		}
		if term := s.run(); term.Status != StatusComplete || s.st.Iterations[0].Commit == "" {
			t.Fatalf("want complete with the fix committed, got %+v", term)
		}
		if c := s.st.Iterations[0].Check; c.Tests != nil || c.Census == nil || c.Census.Ran != 3 {
			t.Fatalf("check %+v: keep the counts, drop the per-test map", c)
		}
	})
	t.Run("no census at the start holds nothing", func(t *testing.T) {
		s := newSim(t, mechanical())
		fixOnePerIteration(s, 1)
		s.tests = func(tree string) census.Census {
			if tree == "t0" {
				return census.Census{Why: "no census for sh"}
			}
			return goCensus(nil)
		}
		if term := s.run(); term.Status != StatusComplete {
			t.Fatalf("want complete, got %+v", term)
		}
	})
	t.Run("a pass whose census could not be taken has not kept its tests", func(t *testing.T) {
		s := newSim(t, mechanical())
		fixOnePerIteration(s, 1)
		s.tests = func(tree string) census.Census {
			if tree == "t0" {
				return goCensus(start)
			}
			return census.Census{Ecosystem: census.Go, Why: "go test printed no -json events"}
		}
		term := s.run()
		if term.Status == StatusComplete || s.st.Iterations[0].Outcome != OutcomeUnverified || !strings.Contains(s.st.Iterations[0].TestsLost, "no -json events") {
			t.Fatalf("got %+v, iteration %+v", term, s.st.Iterations[0])
		}
	})
}
