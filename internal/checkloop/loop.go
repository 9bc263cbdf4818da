package checkloop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// DefaultCheckBudget time-boxes one mechanical done-check run (AG-T5).
const DefaultCheckBudget = 10 * time.Minute

// agentAttempts: an agent that could not run is tried once more, then the
// run ends failed (AG-T4).
const agentAttempts = 2

// checkOutputKept is how much of a check's output the state keeps.
const checkOutputKept = 8 << 10

// Tickets is the part of the store the loop's tickets live in (LOOP-3).
type Tickets interface {
	CreateTicket(ctx context.Context, t store.Ticket) (store.Ticket, bool, error)
	ClaimTicket(ctx context.Context, id, owner string, pid int) (holder string, ok bool, err error)
	FinishTicket(ctx context.Context, id, owner, status string, result []byte) error
	InterruptTicket(ctx context.Context, id string) error
	GetTicket(ctx context.Context, id string) (store.Ticket, error)
}

var _ Tickets = (*store.Store)(nil)

// Deps are what Observe and Act work with, in one struct (as an activity's
// dependencies are).
type Deps struct {
	Tickets   Tickets
	Workspace Workspace
	// Agent is the body; Judge the judge of a judged check (nil for a
	// mechanical one).
	Agent agent.Agent
	Judge agent.Agent
	// AgentEnv is the scrubbed environment of agents and judges (AG-B1);
	// CheckEnv the mechanical check's.
	AgentEnv []string
	CheckEnv []string
	Journal  engine.Journal[State]
	Reporter engine.Reporter
	// PID is this process's id: children are claimed in a name that
	// holds it.
	PID int
}

// Loop is the done-check loop of one run, as the engine drives it.
type Loop struct {
	Deps
	RunID string
	// cfg is the run's frozen config, from the state Run started with.
	cfg Config
}

var (
	_ engine.Loop[State, Observation, Action, ActResult] = (*Loop)(nil)
	_ engine.Action                                      = Action{}
)

// NewLoop binds the loop to one run.
func NewLoop(runID string, d Deps) *Loop { return &Loop{Deps: d, RunID: runID} }

// Run drives the run from st to its terminal. The error is a fault that
// ended the run (its failed state persisted), or ctx's when it was
// cancelled (the run stays resumable).
func (l *Loop) Run(ctx context.Context, st State, opt engine.Options) (State, error) {
	l.cfg = st.Config
	if opt.Reporter == nil {
		opt.Reporter = l.Reporter
	}
	final, err := engine.Run[State, Observation, Action, ActResult](ctx, l, l.Journal, st, opt)
	if t := final.Terminal; t != nil {
		l.report(engine.Event{Kind: "terminal", Round: len(final.Iterations), Message: string(t.Status) + ": " + t.Message, Data: t})
	}
	return final, err
}

// Decide is the pure step (engine.Loop).
func (l *Loop) Decide(st State, obs Observation) (State, []Action, bool) { return Decide(st, obs) }

// Observe reads the world (engine.Loop): HEAD and the work tree, the
// in-flight iteration's ticket and the paths it changed, and what the
// acts since the last step reported.
func (l *Loop) Observe(ctx context.Context, st State, in engine.Input[ActResult]) (Observation, error) {
	obs := Observation{Now: in.Now, StopRequested: in.StopRequested}
	for _, r := range in.Results {
		if r.Check != nil {
			obs.Checks = append(obs.Checks, *r.Check)
		}
		if r.Commit != nil {
			obs.Commits = append(obs.Commits, *r.Commit)
		}
	}
	var err error
	if obs.Head, obs.Tree, err = l.Workspace.Snapshot(ctx); err != nil {
		return Observation{}, err
	}
	cur := st.current()
	if cur == nil || cur.Stage != StageDispatched {
		return obs, nil
	}
	t, err := l.Tickets.GetTicket(ctx, cur.Ticket)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return Observation{}, err
	default:
		v := &TicketView{ID: t.ID, Status: t.Status, Owner: t.Owner}
		if t.Status == store.TicketDone && len(t.Result) > 0 {
			var rep AgentReport
			if err := json.Unmarshal(t.Result, &rep); err != nil {
				rep = AgentReport{Failure: "the ticket's result does not decode: " + err.Error()}
			}
			v.Report = &rep
		}
		obs.Ticket = v
	}
	if obs.Changed, err = l.Workspace.Changed(ctx, cur.TreeBefore, obs.Tree); err != nil {
		return Observation{}, err
	}
	if len(obs.Changed) > 0 {
		if obs.TestAware, err = l.Workspace.TestAware(ctx, cur.TreeBefore, obs.Tree); err != nil {
			return Observation{}, err
		}
	}
	return obs, nil
}

// Act performs one action (engine.Loop). Each is idempotent: a ticket is
// claimed once, a commit is recognised by its trailer, an undo and a
// check can run again.
func (l *Loop) Act(ctx context.Context, st State, obs Observation, a Action) (ActResult, error) {
	switch a.Kind {
	case ActIterate:
		return ActResult{}, l.iterate(ctx, st, a)
	case ActCheck:
		c, err := l.check(ctx, st, obs, a)
		if err != nil {
			return ActResult{}, err
		}
		return ActResult{Check: c}, nil
	case ActUndo:
		if a.Interrupt {
			if err := l.Tickets.InterruptTicket(ctx, a.Ticket); err != nil && !errors.Is(err, store.ErrNotFound) {
				return ActResult{}, err
			}
		}
		if err := l.Workspace.Undo(ctx, a.Head); err != nil {
			return ActResult{}, err
		}
		l.report(engine.Event{Kind: "undo", Round: a.N, Message: fmt.Sprintf("%s: work tree put back at %s", shortTicket(a.Ticket), text.ShortSHA(a.Head))})
		return ActResult{}, nil
	case ActCommit:
		base := ""
		if cur := st.current(); cur != nil {
			base = cur.HeadBefore
		}
		sha, err := l.Workspace.Commit(ctx, a.Ticket, a.Message, base)
		if err != nil {
			return ActResult{}, err
		}
		l.report(engine.Event{Kind: "commit", Round: a.N, Message: fmt.Sprintf("%s: committed %s (%s: %s)", shortTicket(a.Ticket), text.ShortSHA(sha), TrailerKey, a.Ticket)})
		return ActResult{Commit: &CommitDone{Ticket: a.Ticket, SHA: sha}}, nil
	}
	return ActResult{}, fmt.Errorf("unknown action %q", a.Kind)
}

// owner is the name of the child run that claims a ticket (LOOP-3).
func (l *Loop) owner(ticket string) string { return fmt.Sprintf("%s/child-%d", ticket, l.PID) }

// iterate creates the iteration's ticket, claims it in the child's name
// and runs one fresh child with only the packet (LOOP-3). A ticket
// someone already claimed is never run again: the next observation sees
// it and Decide closes it as interrupted.
func (l *Loop) iterate(ctx context.Context, st State, a Action) error {
	if _, _, err := l.Tickets.CreateTicket(ctx, store.Ticket{ID: a.Ticket, RunID: l.RunID, N: a.N}); err != nil {
		return err
	}
	owner := l.owner(a.Ticket)
	holder, ok, err := l.Tickets.ClaimTicket(ctx, a.Ticket, owner, l.PID)
	if err != nil {
		return err
	}
	if !ok {
		l.report(engine.Event{Kind: "note", Round: a.N, Message: fmt.Sprintf("%s is already claimed by %s; it is not run again", a.Ticket, holder)})
		return nil
	}
	l.report(engine.Event{Kind: "iteration", Round: a.N, Message: fmt.Sprintf("%s: ticket %s claimed by %s; agent %s starts fresh with the context packet", shortTicket(a.Ticket), a.Ticket, owner, l.Agent.Name())})
	base := ""
	if cur := st.current(); cur != nil {
		base = cur.HeadBefore
	}
	t := agent.Task{Kind: TaskKindIterate, RunID: a.Ticket, Round: a.N, Workdir: l.Workspace.Dir(), Budget: a.Budget, Env: l.AgentEnv, Instructions: string(a.Packet)}
	// Any backend gets the iteration's own prompt (the CLI agents read
	// only a prompt); the loop's command backend renders it again itself,
	// beside the canonical packet.
	var p Packet
	if err := json.Unmarshal(a.Packet, &p); err != nil {
		return fmt.Errorf("packet for %s: %w", a.Ticket, err)
	}
	t.Prompt = RenderIteratePrompt(t, p)
	rep, err := l.runChild(ctx, t, base, a.Cut)
	var fatal *agent.RunFailure
	if errors.As(err, &fatal) {
		// The agent cannot run at all (its credentials, its endpoint):
		// the ticket ends with the failure, then the run ends errored on
		// it, with the CLI's words and its exit code.
		err = nil
	}
	if err != nil {
		// Stopped from outside: the ticket stays claimed, and a resumed
		// run closes it as interrupted.
		return err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if err := l.Tickets.FinishTicket(ctx, a.Ticket, owner, store.TicketDone, b); err != nil {
		return err
	}
	if fatal != nil {
		return fatal
	}
	return nil
}

// runChild runs the body agent: extended while it ends partial with a
// concrete next action (AG-T1), retried once from a clean tree when it
// could not run (AG-T4). An agent that still cannot run is the report's
// Failure, not an error: the run ends failed on it. One whose CLI said
// another run cannot help (RunFailure.Retryable: its credentials, its
// endpoint) is not retried: it is the report's Failure and the error,
// which ends the run errored with the CLI's exit code.
func (l *Loop) runChild(ctx context.Context, t agent.Task, base string, cut bool) (AgentReport, error) {
	name := l.Agent.Name()
	rep := AgentReport{Agent: name}
	start := time.Now()
	defer func() { rep.Duration = time.Since(start) }()
	var (
		r    agent.Result
		fail *agent.RunFailure
	)
	for attempt := 1; attempt <= agentAttempts; attempt++ {
		rep.Attempts = attempt
		if attempt > 1 && base != "" {
			if err := l.Workspace.Undo(ctx, base); err != nil {
				return rep, err
			}
		}
		var err error
		r, err = l.Agent.Run(ctx, t)
		if ctx.Err() != nil {
			return rep, fmt.Errorf("agent %s: %w", name, ctx.Err())
		}
		rep.Usage.AddRun(runUsage(r))
		rep.CostUSD = rep.Usage.CostUSD
		if fail = agent.FailureOf(name, r, err); fail == nil {
			break
		}
		rep.TimedOut = err == nil && r.Record.Reason == agent.ReasonBudgetExceeded
		if rep.TimedOut && cut {
			// The wall clock, not the agent, ran out: no retry.
			break
		}
		l.report(engine.Event{Kind: "note", Round: t.Round, Message: fmt.Sprintf("agent %s could not run (attempt %d of %d): %s", name, attempt, agentAttempts, fail.What)})
		if !fail.Retryable() {
			rep.Failure, rep.Status = fail.Error(), string(agent.StatusBlocked)
			return rep, fail
		}
	}
	for fail == nil {
		next, ok := t.Extended(r.Record)
		if !ok {
			break
		}
		l.report(engine.Event{Kind: "note", Round: t.Round, Message: fmt.Sprintf("agent %s stopped partway (%s); extending by %s (extension %d of %d)", name, text.Clip(r.Record.NextAction, 120), next.Budget, next.Extension, agent.MaxExtensions)})
		t = next
		rep.Extensions = t.Extension
		var err error
		r, err = l.Agent.Run(ctx, t)
		if ctx.Err() != nil {
			return rep, fmt.Errorf("agent %s: %w", name, ctx.Err())
		}
		rep.Usage.AddRun(runUsage(r))
		rep.CostUSD = rep.Usage.CostUSD
		fail = agent.FailureOf(name, r, err)
		rep.TimedOut = fail != nil && err == nil && r.Record.Reason == agent.ReasonBudgetExceeded
		if fail != nil && !fail.Retryable() {
			rep.Failure, rep.Status = fail.Error(), string(agent.StatusBlocked)
			return rep, fail
		}
	}
	if fail != nil {
		rep.Failure = fail.Error()
		rep.Status = string(agent.StatusBlocked)
		return rep, nil
	}
	rec := r.Record
	rep.Status, rep.Summary, rep.NextAction, rep.Reason = string(rec.Status), rec.Summary, rec.NextAction, rec.Reason
	rep.Claimed, rep.Concerns = rec.FilesChanged, rec.Concerns
	l.report(engine.Event{Kind: "iteration", Round: t.Round, Message: fmt.Sprintf("%s: agent %s reported %s: %s (its word is not the check)", shortTicket(t.RunID), name, rec.Status, text.Clip(rec.Summary, 160))})
	return rep, nil
}

// check runs the done-check (LOOP-2): the mechanical command, or a fresh
// judge that gets only the judge packet. The loop runs it, never a child.
func (l *Loop) check(ctx context.Context, st State, obs Observation, a Action) (*Check, error) {
	c := &Check{Key: a.Key, Tree: obs.Tree, Head: obs.Head, Judged: st.Config.Oracle.Class == Judged}
	var err error
	if st.Config.Oracle.Class == Judged {
		err = l.judge(ctx, st, obs, a, c)
	} else {
		err = l.mechanical(ctx, st, c)
	}
	if err != nil {
		return nil, err
	}
	if cs := c.Census; cs != nil && a.Key == checkKey(0) && a.Rerun == 0 {
		if cs.Known && cs.Ran == 0 && cs.Skipped == 0 {
			// A tree that does not build runs no test: there is nothing
			// to hold a pass to, and that is said, not hidden.
			l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("test census at the start: %s; no test ran; a later pass must run at least one test to count (LOOP-8)", cs)})
		} else if cs.Known {
			l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("test census at the start: %s; a later pass with fewer tests run, or a test newly skipped, is UNVERIFIED (LOOP-8)", cs)})
		} else {
			// Said once: the census is unknown, and nothing pretends it is.
			l.report(engine.Event{Kind: "note", Message: fmt.Sprintf("the test census is unknown for `%s` (%s): a pass is not checked against the tests that ran at the start (LOOP-8)", st.Config.Oracle.Command, cs.Why)})
		}
	}
	what := "check"
	switch {
	case a.Final:
		what = "final re-judgment"
	case a.Rerun > 0:
		// LOOP-8: a pass counts only when it repeats on the same tree.
		what = fmt.Sprintf("check (run %d, to confirm)", a.Rerun)
	}
	who := "before iteration 1"
	if a.N > 0 {
		who = "after " + shortTicket(TicketID(l.RunID, a.N))
	}
	msg := fmt.Sprintf("%s %s: %s", what, who, checkWords(c))
	data := map[string]any{"key": c.Key, "passed": c.Passed, "exit_code": c.ExitCode}
	if cs := c.Census; cs != nil && cs.Known {
		msg += "; " + cs.String()
		data["census"] = cs
	}
	l.report(engine.Event{Kind: "check", Round: a.N, Message: msg, Data: data})
	return c, nil
}

// mechanical runs the check command, through the census (LOOP-8): a
// command the census understands (go test, pytest, jest, vitest, cargo
// test, …) runs with the flags that make it report its tests, and its
// output is what the plain command prints. Every run runs the tests:
// go's test cache would replay an earlier pass, of this run or any
// other, and a replay confirms nothing (GOFLAGS=-count=1).
func (l *Loop) mechanical(ctx context.Context, st State, c *Check) error {
	budget := st.Config.CheckBudget
	if budget <= 0 {
		budget = DefaultCheckBudget
	}
	env := withGoFlag(l.CheckEnv, "-count=1")
	r, err := census.Run(ctx, census.Spec{Dir: l.Workspace.Dir(), Argv: []string{"sh", "-c", st.Config.Oracle.Command}, Env: env, Budget: budget, MaxOutput: repo.DefaultMaxOutput})
	if err != nil {
		return fmt.Errorf("run the done-check: %w", err)
	}
	cs := r.Census
	c.Census, c.Tests = &cs, cs.Tests
	c.Census.Tests = nil
	c.ExitCode, c.TimedOut, c.Duration = r.ExitCode, r.TimedOut, r.Duration
	c.Passed = r.ExitCode == 0 && !r.TimedOut
	if r.TimedOut {
		c.Note = fmt.Sprintf("stopped at its %s time-box", budget)
	}
	if failing := failingTests(r.Census, r.Output); c.Passed && failing != "" {
		// A check that exits 0 while its own census or output shows a
		// failing test has not passed (LOOP-8): `go test ./... ; true`,
		// a TestMain that exits 0, a flaky fallback.
		c.Passed = false
		c.Note = "exit status 0, but a test failed: " + failing
	}
	c.Output = tail(r.Output, checkOutputKept)
	c.Digest = digest(fmt.Sprintf("exit %d timeout %v\n%s", r.ExitCode, r.TimedOut, NormalizeOutput(r.Output)))
	return nil
}

// judge runs a fresh judge (LOOP-2): retried once when it could not run
// (AG-T4); an answer that is not a valid verdict is "not done", never
// done (fail-closed).
func (l *Loop) judge(ctx context.Context, st State, obs Observation, a Action, c *Check) error {
	pk, err := MarshalCanonical(JudgePacket{Goal: st.Config.Goal, Base: st.StartHead, Head: obs.Head, Final: a.Final})
	if err != nil {
		return err
	}
	t := agent.Task{Kind: TaskKindJudge, RunID: l.RunID + "." + strings.ReplaceAll(a.Key, "/", "."), Round: a.N, Workdir: l.Workspace.Dir(), Budget: st.Config.AgentBudget, Env: l.AgentEnv, Instructions: string(pk)}
	t.Prompt = RenderJudgePrompt(t, JudgePacket{Goal: st.Config.Goal, Base: st.StartHead, Head: obs.Head, Final: a.Final})
	name := l.Judge.Name()
	var r agent.Result
	for attempt := 1; ; attempt++ {
		var err error
		start := time.Now()
		r, err = l.Judge.Run(ctx, t)
		c.Duration += time.Since(start)
		if ctx.Err() != nil {
			return fmt.Errorf("judge %s: %w", name, ctx.Err())
		}
		c.Usage.AddRun(runUsage(r))
		c.CostUSD = c.Usage.CostUSD
		fail := agent.FailureOf(name, r, err)
		if fail == nil {
			break
		}
		if attempt >= agentAttempts || !fail.Retryable() {
			return fail
		}
		l.report(engine.Event{Kind: "note", Round: a.N, Message: fmt.Sprintf("judge %s could not run (attempt %d of %d): %s", name, attempt, agentAttempts, fail.What)})
	}
	v, line, err := ParseVerdict(r.Output)
	c.Output = text.Clip(line, checkOutputKept)
	if err != nil {
		c.Note = err.Error()
		c.ExitCode = 1
		c.Digest = digest("invalid verdict")
		return nil
	}
	c.Verdict = &v
	c.Passed = v.Verdict == "done"
	if !c.Passed {
		c.ExitCode = 1
	}
	c.Digest = digest(v.Verdict + "\n" + strings.Join(v.Missing, "\n"))
	return nil
}

// Stepped reports what a step decided (engine.Loop).
func (l *Loop) Stepped(prev, next State, obs Observation) bool {
	if len(next.Iterations) == 0 || len(prev.Iterations) > len(next.Iterations) {
		return false
	}
	cur := next.Iterations[len(next.Iterations)-1]
	var before Iteration
	if len(prev.Iterations) == len(next.Iterations) {
		before = prev.Iterations[len(prev.Iterations)-1]
	}
	if cur.Outcome != before.Outcome && cur.Outcome != "" {
		msg := fmt.Sprintf("%s: %s", shortTicket(cur.Ticket), cur.Outcome)
		switch cur.Outcome {
		case OutcomeAccepted:
			msg += ": changed " + list(cur.Changed, 8)
		case OutcomeUnverified:
			if cur.TestsLost != "" {
				msg += ": the check passed, but " + cur.TestsLost + "; the change is undone and does not count (LOOP-8)"
				break
			}
			msg += ": changed protected " + list(cur.Protected, 8) + "; the change is undone and does not count (LOOP-6)"
		case OutcomeInterrupted:
			msg += ": its ticket was claimed by a converge that is gone; it is not run again, its change is undone"
		case OutcomeFailed:
			if cur.Agent != nil {
				msg += ": " + cur.Agent.Failure
			}
		}
		l.report(engine.Event{Kind: "iteration", Round: cur.N, Message: msg})
	}
	return false
}

// Fail ends the run failed on a fault (engine.Loop); an iteration's
// uncommitted change is undone, best effort.
func (l *Loop) Fail(st State, obs Observation, cause error) (State, []Action) {
	next := st.clone()
	next.Terminal = &Terminal{Status: StatusFailed, ExitCode: StatusFailed.ExitCode(), Message: cause.Error(), At: obs.Now}
	if agent.KindOf(cause) == agent.FailAuth {
		// An agent CLI's credentials failed: IF-1's exit 6, not 1.
		next.Terminal.ExitCode = exitcode.Auth
	}
	if next.Terminal.At.IsZero() {
		next.Terminal.At = lastSeen(st)
	}
	cur := next.current()
	if cur == nil || cur.Stage == StageClosed || obs.Tree == "" {
		return next, nil
	}
	if cur.Outcome == "" {
		cur.Outcome = OutcomeFailed
	}
	closeIteration(cur, next.Terminal.At)
	if obs.Tree == cur.TreeBefore && obs.Head == cur.HeadBefore {
		return next, nil
	}
	return next, []Action{{Kind: ActUndo, N: cur.N, Ticket: cur.Ticket, Head: cur.HeadBefore}}
}

func (l *Loop) report(e engine.Event) {
	if l.Reporter != nil {
		l.Reporter.Report(e)
	}
}

// withGoFlag adds flag to GOFLAGS in env (nil: this process's
// environment). Go ignores a GOFLAGS flag a command does not know.
func withGoFlag(env []string, flag string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	set := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			kv, set = "GOFLAGS="+strings.TrimSpace(v+" "+flag), true
		}
		out = append(out, kv)
	}
	if !set {
		out = append(out, "GOFLAGS="+flag)
	}
	return out
}

// noise is what differs between two runs of the same check on the same
// tree: timings, "(cached)", addresses, build directories.
var noise = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`), "<T>"},
	{regexp.MustCompile(`\(cached\)`), "<T>"},
	{regexp.MustCompile(`0x[0-9a-fA-F]+`), "0x?"},
	{regexp.MustCompile(`go-build\d+`), "go-build?"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

// NormalizeOutput drops from a check's output what changes between runs
// of the same check on the same tree, so "the check's output is the same
// as before" (LOOP-5) compares what matters.
func NormalizeOutput(s string) string {
	for _, n := range noise {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return strings.TrimSpace(s)
}

// runUsage is what one agent run consumed: what its CLI reported (AG-B1),
// its price else a "cost_usd" on its last line (a command agent's way to
// report it) — one count, never both.
func runUsage(r agent.Result) agent.Usage {
	u := r.Usage
	if !u.CostReported {
		u.CostUSD, u.CostReported = costOf(r.Output)
	}
	return u.Counted()
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// failingTests names the tests a check's run shows failing, by its census
// where the runner reported one, else by the runners' failure lines in
// its output; "" when none failed.
func failingTests(c census.Census, output string) string {
	const named = 5
	var ids []string
	if c.Known {
		if c.Failed == 0 {
			return ""
		}
		ids = c.Failing()
	} else {
		for _, f := range census.Failures(output) {
			ids = append(ids, f.Key)
		}
		if len(ids) == 0 {
			return ""
		}
	}
	switch {
	case len(ids) == 0:
		return fmt.Sprintf("%d failed", c.Failed)
	case len(ids) > named:
		return fmt.Sprintf("%s and %d more", strings.Join(ids[:named], ", "), len(ids)-named)
	}
	return strings.Join(ids, ", ")
}
