package checkloop

import (
	"fmt"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// maxUndos is how often an undo is tried before the run fails: an undo
// is a reset to a commit the run made, so a second failure is not
// transient.
const maxUndos = 2

// checkKey and finalKey name the done-check after iteration n (0: the
// baseline) and its final re-judgment.
func checkKey(n int) string { return fmt.Sprintf("check/%02d", n) }
func finalKey(n int) string { return fmt.Sprintf("final/%02d", n) }

// Decide is the pure step of the done-check loop: no IO, no clock (time
// is obs.Now), no map iteration. It returns the next state, the actions
// to take, and whether the run ended (next.Terminal is set).
//
// A run checks the tree it starts on (the baseline), then iterates: it
// dispatches ticket NN to a fresh child with the context packet, reads
// the child's outcome from the ticket, rejects (undoes) a change to a
// protected oracle input as UNVERIFIED (LOOP-6), runs the done-check
// itself (LOOP-5: never the child's word), commits an accepted change,
// and ends at the first of: complete (the check passed; a judged check
// only once a fresh final re-judgment agrees, LOOP-2), failed, blocked,
// stalled (K iterations in a row left tree and check output unchanged),
// limited (a bound ran out; never promoted).
func Decide(st State, obs Observation) (State, []Action, bool) {
	next := st.clone()
	if next.Terminal != nil {
		return next, nil, true
	}
	if next.StartedAt.IsZero() {
		next.StartedAt, next.StartHead = obs.Now, obs.Head
	}
	if GoalDigest(next.Config.Goal) != next.Config.GoalSHA256 {
		return end(next, obs, StatusFailed, "the goal differs from the one the run started with; a run's goal is frozen (LOOP-1)", nil)
	}
	if obs.StopRequested {
		return stop(next, obs)
	}
	if next.Baseline == nil {
		c := findCheck(obs, checkKey(0))
		if c == nil {
			return next, []Action{{Kind: ActCheck, Key: checkKey(0)}}, false
		}
		next.Baseline = c
		next.spend(0, c.Usage, c.CostUSD)
	}
	if acts := confirm(&next, &next.Baseline, 0, obs); len(acts) > 0 {
		return next, acts, false
	}
	if b := next.Baseline; rerunsHaveTests(b) {
		// The baseline keeps its own per-test counts, the reference.
		cp := *stripTests(b)
		cp.Tests = b.Tests
		next.Baseline = &cp
	}
	if cur := next.current(); cur != nil && cur.Stage != StageClosed {
		acts := advance(&next, cur, obs)
		if next.Terminal != nil {
			return next, acts, true
		}
		if len(acts) > 0 {
			return next, acts, false
		}
	}
	return between(next, obs)
}

// advance moves the current iteration on by one stage.
func advance(next *State, cur *Iteration, obs Observation) []Action {
	switch cur.Stage {
	case StageDispatched:
		t := obs.Ticket
		if t == nil || t.ID != cur.Ticket || t.Status == store.TicketOpen {
			// Never claimed: handing it out now repeats nothing.
			return []Action{iterateAction(*next, *cur, obs)}
		}
		cur.TreeAfter, cur.Changed = obs.Tree, obs.Changed
		if len(cur.Changed) == 0 {
			// None is nil, as the state reads back from JSON (the
			// Temporal engine's Decide sees only the JSON copy).
			cur.Changed = nil
		}
		if t.Status != store.TicketDone {
			// Claimed by a child of a converge that is gone (killed
			// mid-iteration), or already closed as interrupted: its
			// ticket is never handed out again, its partial change is
			// undone.
			cur.Outcome = OutcomeInterrupted
			return startUndo(cur, true)
		}
		rep := t.Report
		if rep == nil {
			rep = &AgentReport{Failure: "the ticket holds no result"}
		}
		cur.Agent = rep
		next.spend(cur.N, rep.Usage, rep.CostUSD)
		if rep.Failure != "" {
			cur.Outcome = OutcomeFailed
			status, msg := StatusFailed, rep.Failure
			if w := next.Config.MaxWallClock; rep.TimedOut && w > 0 && obs.Now.Sub(next.StartedAt) >= w {
				// Stopped at the time-box the wall clock left it: the
				// bound ran out, the agent did not fail.
				cur.Outcome, status = OutcomeTimedOut, StatusLimited
				msg = fmt.Sprintf("max-wall-clock %s passed while %s ran (its unfinished change was undone) and the done-check still fails; a limit is not a success", w, shortTicket(cur.Ticket))
			}
			closeIteration(cur, obs.Now)
			var acts []Action
			if obs.Tree != cur.TreeBefore || obs.Head != cur.HeadBefore {
				acts = []Action{{Kind: ActUndo, N: cur.N, Ticket: cur.Ticket, Head: cur.HeadBefore}}
			}
			setEnd(next, obs, status, msg)
			return acts
		}
		if prot := append(protectedPaths(obs.Changed, next.Config), obs.TestAware...); len(prot) > 0 {
			// LOOP-6: the oracle's inputs are not the iteration's to
			// change, nor is code to learn that it is tested; whatever
			// else it did goes with it.
			cur.Outcome, cur.Protected = OutcomeUnverified, prot
			return startUndo(cur, false)
		}
		if obs.Tree == cur.TreeBefore {
			cur.Outcome = OutcomeNoChange
			if obs.Head != cur.HeadBefore {
				// Commits that change nothing are not kept either.
				return startUndo(cur, false)
			}
		} else {
			cur.Outcome = OutcomeAccepted
		}
		cur.Stage = StageCheck
		return []Action{checkAction(cur.N)}
	case StageUndo:
		if obs.Tree == cur.TreeBefore && obs.Head == cur.HeadBefore {
			cur.Stage = StageCheck
			return []Action{checkAction(cur.N)}
		}
		if cur.Undos >= maxUndos {
			closeIteration(cur, obs.Now)
			setEnd(next, obs, StatusFailed, fmt.Sprintf("could not undo the change of %s: the work tree is not back at %s", shortTicket(cur.Ticket), shortSHA(cur.HeadBefore)))
			return nil
		}
		return startUndo(cur, cur.Outcome == OutcomeInterrupted)
	case StageCheck:
		if cur.Check == nil {
			c := findCheck(obs, checkKey(cur.N))
			if c == nil {
				return []Action{checkAction(cur.N)}
			}
			cur.Check = c
			next.spend(cur.N, c.Usage, c.CostUSD)
		}
		if acts := confirm(next, &cur.Check, cur.N, obs); len(acts) > 0 {
			return acts
		}
		if lost := testsLost(*next, cur.Check); lost != "" {
			// LOOP-8: a pass with fewer tests run than at the start, or a
			// test newly skipped, proves nothing of the goal: the check
			// was defeated from outside the test files (an init that
			// exits 0, a flag that filters, a skip).
			if next.Config.AllowTestRemoval {
				cp := *cur.Check
				cp.Lost = lost
				cur.Check = &cp
			} else if cur.Outcome == OutcomeAccepted {
				cur.Outcome, cur.TestsLost, cur.Rejected, cur.Check = OutcomeUnverified, lost, stripTests(cur.Check), nil
				return startUndo(cur, false)
			} else {
				// Nothing of the iteration's to undo: the pass only does
				// not count.
				cp := *cur.Check
				cp.Passed, cp.Note = false, "UNVERIFIED by the test census: "+lost
				cur.Check = &cp
			}
		}
		cur.Check = stripTests(cur.Check)
		switch cur.Outcome {
		case OutcomeUnverified, OutcomeInterrupted:
			cur.Progress = false // never counted as progress (LOOP-6)
		default:
			cur.Progress = cur.Check.Tree != cur.TreeBefore || cur.Check.Digest != cur.CheckBefore
		}
		if cur.Outcome == OutcomeAccepted {
			cur.Stage = StageCommit
			return []Action{commitAction(*cur)}
		}
		closeIteration(cur, obs.Now)
		return nil
	case StageCommit:
		for _, d := range obs.Commits {
			if d.Ticket == cur.Ticket {
				cur.Commit = d.SHA
				closeIteration(cur, obs.Now)
				return nil
			}
		}
		return []Action{commitAction(*cur)}
	}
	return nil
}

// between decides, with every iteration closed, whether the run ends, and
// if not, dispatches the next iteration.
func between(next State, obs Observation) (State, []Action, bool) {
	cfg := next.Config
	cur := next.current()
	n := 0
	finalSlot := &next.BaselineFinal
	if cur != nil {
		n, finalSlot = cur.N, &cur.Final
	}
	last := next.lastCheck()
	if last.Unconfirmed != "" {
		// LOOP-8: a check that says both on one tree proves nothing, and
		// no iteration can make it trustworthy: a human must.
		return end(next, obs, StatusBlocked, unconfirmedMessage(cfg, last, n), nil)
	}
	if last.Passed && cfg.Oracle.Class != Judged && !last.Confirmed {
		// Never reached (confirm settles a pass first); fail closed.
		return end(next, obs, StatusFailed, fmt.Sprintf("the done-check passed %s but was never confirmed (LOOP-8)", last.Key), nil)
	}
	if last.Passed {
		if cfg.Oracle.Class != Judged {
			return end(next, obs, StatusComplete, fmt.Sprintf("the done-check `%s`, run by converge, passed after %d iteration(s)", cfg.Oracle.Command, n), nil)
		}
		f := *finalSlot
		if f == nil {
			if f = findCheck(obs, finalKey(n)); f == nil {
				// LOOP-2: a fresh judge, which saw nothing of the run,
				// must agree before complete.
				return next, []Action{{Kind: ActCheck, Key: finalKey(n), N: n, Final: true}}, false
			}
			*finalSlot = f
			next.spend(n, f.Usage, f.CostUSD)
		}
		if f.Passed {
			return end(next, obs, StatusComplete, fmt.Sprintf("the judge %s said done after %d iteration(s), and a fresh final re-judgment agreed", cfg.Oracle.Judge, n), nil)
		}
		// The re-judgment disagreed: not done; the run goes on.
	}
	if cur != nil && cur.Agent != nil && cur.Agent.Status == string(agent.StatusBlocked) {
		why := strings.TrimSpace(cur.Agent.Reason)
		if why == "" {
			why = strings.TrimSpace(cur.Agent.Summary)
		}
		if why == "" {
			why = "no reason given"
		}
		return end(next, obs, StatusBlocked, fmt.Sprintf("the agent is blocked at %s: %s", shortTicket(cur.Ticket), why), nil)
	}
	if k := cfg.stallK(); len(next.Iterations) >= k {
		stalled := true
		var ids []string
		for _, it := range next.Iterations[len(next.Iterations)-k:] {
			stalled = stalled && !it.Progress
			ids = append(ids, shortTicket(it.Ticket))
		}
		if stalled {
			return end(next, obs, StatusStalled, fmt.Sprintf("no progress in %d iterations in a row (%s): the work tree and the done-check's output stayed the same", k, strings.Join(ids, ", ")), nil)
		}
	}
	still := "the done-check still fails"
	if last.Passed {
		still = "the final re-judgment did not confirm done"
	}
	switch {
	case len(next.Iterations) >= cfg.MaxIterations:
		return end(next, obs, StatusLimited, fmt.Sprintf("max-iterations %d reached and %s; a limit is not a success", cfg.MaxIterations, still), nil)
	case cfg.MaxWallClock > 0 && obs.Now.Sub(next.StartedAt) >= cfg.MaxWallClock:
		return end(next, obs, StatusLimited, fmt.Sprintf("max-wall-clock %s passed and %s; a limit is not a success", cfg.MaxWallClock, still), nil)
	case cfg.MaxCostUSD > 0 && next.CostUSD >= cfg.MaxCostUSD:
		return end(next, obs, StatusLimited, fmt.Sprintf("max-cost $%.2f spent ($%.2f) and %s; a limit is not a success", cfg.MaxCostUSD, next.CostUSD, still), nil)
	}
	it := Iteration{
		N:           len(next.Iterations) + 1,
		Stage:       StageDispatched,
		HeadBefore:  obs.Head,
		TreeBefore:  obs.Tree,
		CheckBefore: last.Digest,
		StartedAt:   obs.Now,
	}
	it.Ticket = TicketID(next.RunID, it.N)
	next.Iterations = append(next.Iterations, it)
	return next, []Action{iterateAction(next, it, obs)}, false
}

// stop ends the run at a stop request: an iteration in flight is
// abandoned, its uncommitted change undone.
func stop(next State, obs Observation) (State, []Action, bool) {
	var acts []Action
	if cur := next.current(); cur != nil && cur.Stage != StageClosed {
		interrupt := cur.Stage == StageDispatched && obs.Ticket != nil && obs.Ticket.Status != store.TicketDone
		if obs.Tree != cur.TreeBefore || obs.Head != cur.HeadBefore || interrupt {
			acts = append(acts, Action{Kind: ActUndo, N: cur.N, Ticket: cur.Ticket, Head: cur.HeadBefore, Interrupt: interrupt})
		}
		if cur.Outcome == "" || cur.Outcome == OutcomeAccepted {
			cur.Outcome = OutcomeStopped
		}
		closeIteration(cur, obs.Now)
	}
	return end(next, obs, StatusBlocked, "stopped by a human (converge stop, or a signal); uncommitted work of the iteration in flight was undone", acts)
}

// confirm reruns a mechanical check that passed until it has passed
// Config.Confirm runs in a row on one tree (LOOP-8). It returns the rerun
// to ask for, or nil once the check is settled: confirmed, failed, or
// unconfirmed (Passed false): flaky when a rerun failed, or unsettled
// when the check kept changing the tree it ran on. The check is copied,
// never changed in place: Decide's input state shares it.
func confirm(next *State, slot **Check, n int, obs Observation) []Action {
	c := *slot
	if c == nil || next.Config.Oracle.Class == Judged || !c.Passed || c.Confirmed || c.Unconfirmed != "" {
		return nil
	}
	need := next.Config.confirmN()
	cp := *c
	cp.Reruns = append([]Check(nil), c.Reruns...)
	if r := findCheck(obs, rerunKey(c.Key, len(cp.Reruns)+2)); r != nil {
		cp.Reruns = append(cp.Reruns, *r)
		next.spend(n, r.Usage, r.CostUSD)
	}
	*slot = &cp
	runs := append([]Check{cp}, cp.Reruns...)
	last := runs[len(runs)-1]
	if !last.Passed {
		cp.Passed, cp.Flaky = false, true
		cp.Unconfirmed = fmt.Sprintf("flaky: it passed (run 1) and then failed (run %d, exit %d) on the same tree", len(runs), last.ExitCode)
		if last.Tree != cp.Tree {
			cp.Unconfirmed = fmt.Sprintf("flaky: it passed (run 1), changed the work tree as it ran, and then failed (run %d, exit %d)", len(runs), last.ExitCode)
		}
		return nil
	}
	streak := 1
	for i := len(runs) - 2; i >= 0 && runs[i].Passed && runs[i].Tree == last.Tree; i-- {
		streak++
	}
	if streak >= need {
		cp.Confirmed = true
		return nil
	}
	if len(runs) > need {
		// One extra run forgives a check that writes a file on its first
		// run; one that changes the tree on every run is never on the
		// same tree twice.
		cp.Passed = false
		cp.Unconfirmed = fmt.Sprintf("unconfirmed: it changed the work tree each time it ran, so %d runs never passed in a row on one tree", len(runs))
		return nil
	}
	return []Action{{Kind: ActCheck, Key: rerunKey(c.Key, len(runs)+1), N: n, Rerun: len(runs) + 1}}
}

// testsLost says what a settled pass lost against the baseline's test
// census (LOOP-8): "" when it lost nothing, when it did not pass, or
// when there is no baseline census to hold it to (said once, at the
// baseline). A pass whose own census could not be taken while the
// baseline's was has not kept its tests (fail closed). Every run of the
// pass is held to it.
func testsLost(st State, c *Check) string {
	b := st.Baseline
	if c == nil || !c.Passed || b == nil || b.Census == nil || !b.Census.Known || st.Config.Oracle.Class == Judged {
		return ""
	}
	base := *b.Census
	base.Tests = b.Tests
	for _, r := range append([]Check{*c}, c.Reruns...) {
		cand := census.Census{Why: "the check reported no census"}
		if r.Census != nil {
			cand = *r.Census
			cand.Tests = r.Tests
		}
		if d := census.Compare(base, cand); !d.Empty() {
			return d.String()
		}
	}
	return ""
}

// stripTests drops the per-test counts of a check that was compared: only
// the baseline's are kept.
func stripTests(c *Check) *Check {
	if c == nil || (c.Tests == nil && !rerunsHaveTests(c)) {
		return c
	}
	cp := *c
	cp.Tests = nil
	cp.Reruns = append([]Check(nil), c.Reruns...)
	for i := range cp.Reruns {
		cp.Reruns[i].Tests = nil
	}
	return &cp
}

func rerunsHaveTests(c *Check) bool {
	for _, r := range c.Reruns {
		if r.Tests != nil {
			return true
		}
	}
	return false
}

// rerunKey names run r (2, 3, …) of the check named key (LOOP-8).
func rerunKey(key string, r int) string { return fmt.Sprintf("%s#%d", key, r) }

// unconfirmedMessage is the terminal of a run whose check did not
// confirm its pass: both outputs, as the last lines each printed.
func unconfirmedMessage(cfg Config, c *Check, n int) string {
	where := "before iteration 1"
	if n > 0 {
		where = fmt.Sprintf("after %d iteration(s)", n)
	}
	what := "the done-check is flaky"
	if !c.Flaky {
		what = "the done-check is not confirmed"
	}
	how := strings.TrimPrefix(strings.TrimPrefix(c.Unconfirmed, "flaky: "), "unconfirmed: ")
	msg := fmt.Sprintf("%s: `%s` %s (%s, %s)", what, cfg.Oracle.Command, strings.TrimPrefix(how, "it "), c.Key, where)
	runs := append([]Check{*c}, c.Reruns...)
	for i, r := range runs {
		state := "passed"
		if r.ExitCode != 0 || r.TimedOut {
			state = fmt.Sprintf("failed (exit %d)", r.ExitCode)
		}
		out := []rune(text.OneLine(r.Output))
		if len(out) > 160 {
			out = append([]rune("…"), out[len(out)-160:]...)
		}
		if len(out) == 0 {
			out = []rune("no output")
		}
		msg += fmt.Sprintf("; run %d %s: %s", i+1, state, string(out))
	}
	if !c.Flaky {
		return msg + "; a pass counts only when it repeats on one tree (LOOP-8): make the check leave the work tree alone (or ignore what it writes), then run again"
	}
	return msg + "; a check that passes and fails on one tree never counts as done (LOOP-8): make it deterministic, then run again"
}

func iterateAction(st State, it Iteration, obs Observation) Action {
	// The packet is rendered from the closed iterations only: the same
	// for a re-dispatch as for the first.
	pk, err := MarshalCanonical(BuildPacket(st))
	if err != nil {
		// Strings always encode; this is a bug, and the child's door
		// refuses an empty packet.
		pk = nil
	}
	budget := st.Config.AgentBudget
	if budget <= 0 {
		budget = agent.DefaultBudget
	}
	cut := false
	if w := st.Config.MaxWallClock; w > 0 {
		if left := w - obs.Now.Sub(st.StartedAt); left < budget {
			budget, cut = max(left, time.Second), true
		}
	}
	return Action{Kind: ActIterate, N: it.N, Ticket: it.Ticket, Packet: pk, Budget: budget, Cut: cut}
}

func checkAction(n int) Action {
	return Action{Kind: ActCheck, Key: checkKey(n), N: n}
}

func commitAction(it Iteration) Action {
	msg := fmt.Sprintf("converge loop: %s", shortTicket(it.Ticket))
	if a := it.Agent; a != nil && strings.TrimSpace(a.Summary) != "" {
		msg += "\n\n" + strings.TrimSpace(a.Summary)
	}
	return Action{Kind: ActCommit, N: it.N, Ticket: it.Ticket, Message: msg}
}

func startUndo(cur *Iteration, interrupt bool) []Action {
	cur.Stage = StageUndo
	cur.Undos++
	return []Action{{Kind: ActUndo, N: cur.N, Ticket: cur.Ticket, Head: cur.HeadBefore, Interrupt: interrupt}}
}

func closeIteration(cur *Iteration, now time.Time) {
	cur.Stage = StageClosed
	cur.EndedAt = now
}

func findCheck(obs Observation, key string) *Check {
	for i := range obs.Checks {
		if obs.Checks[i].Key == key {
			c := obs.Checks[i]
			return &c
		}
	}
	return nil
}

func setEnd(next *State, obs Observation, s Status, msg string) {
	next.Terminal = &Terminal{Status: s, ExitCode: s.ExitCode(), Message: msg, At: obs.Now}
}

func end(next State, obs Observation, s Status, msg string, acts []Action) (State, []Action, bool) {
	setEnd(&next, obs, s, msg)
	return next, acts, true
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// spend counts what an agent or judge run of iteration n (0: the check
// before the first) cost: usd toward the cost bound (LOOP-1), its usage
// in the iteration's and the run's totals.
func (s *State) spend(n int, u agent.Usage, usd float64) {
	s.CostUSD += usd
	s.Usage.Add(u)
	if n > 0 && n <= len(s.Iterations) && s.Iterations[n-1].N == n {
		s.Iterations[n-1].Usage.Add(u)
	}
}
