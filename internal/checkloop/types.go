// Package checkloop is the done-check loop (`converge loop`, SPEC §2): it
// runs a body agent on a local git repository, one fresh child per
// iteration, until a done-check that the loop itself runs says the frozen
// goal is met — or until it stalls, a bound runs out, the agent is
// blocked, or it fails.
//
// It is a loop kind on internal/engine: State, Observation, Action and
// ActResult are its types, Decide is the pure step (decide.go), and Loop's
// Observe and Act are the activities (loop.go), with their dependencies in
// Deps.
//
// Where the SPEC lives:
//
//	LOOP-1 inputs, frozen goal, packet   Config, Packet (packet.go)
//	LOOP-2 oracle classes                Oracle, Decide (final re-judgment), judge.go
//	LOOP-3 tickets, fresh children       Loop.iterate (loop.go), store.Ticket
//	LOOP-4 canonical records             canonical.go, command.go (the door)
//	LOOP-5 exits                         Decide (terminals), Terminal
//	LOOP-6 own claims, protected inputs  Decide (protected, UNVERIFIED), protect.go
//	LOOP-7 result                        Result (result.go)
//	LOOP-8 confirmed, census-checked     Decide (confirm, census), Census
package checkloop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/exitcode"
)

// Kind is the run kind of a done-check loop in the store.
const Kind = "loop"

// Oracle classes (LOOP-2).
const (
	// Mechanical: a command run by the loop; exit 0 means done.
	Mechanical = "mechanical"
	// Judged: a judge agent's schema-validated verdict, run by the loop,
	// confirmed by a fresh final re-judgment before complete.
	Judged = "judged"
)

// Status is how a loop run ended (LOOP-5).
type Status string

const (
	StatusComplete Status = "complete"
	StatusStalled  Status = "stalled"
	StatusLimited  Status = "limited"
	StatusBlocked  Status = "blocked"
	StatusFailed   Status = "failed"
)

// ExitCode is the status's IF-1 exit code.
func (s Status) ExitCode() exitcode.Code { return exitcode.For(exitcode.Loop, string(s)) }

// DefaultStallIterations is K of LOOP-5: a run with K iterations in a row
// that left the work tree and the done-check's output as they were is
// stalled.
const DefaultStallIterations = 2

// DefaultConfirm is LOOP-8's confirm: a mechanical done-check counts as
// passed only when it passed this many runs in a row on the same tree.
const DefaultConfirm = 2

// Oracle is the done-check (LOOP-1, LOOP-2).
type Oracle struct {
	Class string `json:"class"`
	// Command is the mechanical check, run as `sh -c COMMAND` in the
	// repository.
	Command string `json:"command,omitempty"`
	// Judge names the judge agent of a judged check.
	Judge string `json:"judge,omitempty"`
}

// Config is a run's frozen input (LOOP-1): stored with the state, so a
// resumed run goes on with what it started with.
type Config struct {
	// Goal is the goal text, verbatim; GoalSHA256 its digest, checked at
	// every step.
	Goal       string `json:"goal"`
	GoalSHA256 string `json:"goal_sha256"`
	Oracle     Oracle `json:"oracle"`
	// Agent names the body agent.
	Agent string `json:"agent"`
	// Protect are the protected oracle inputs (LOOP-6), as globs (see
	// MatchGlob): an iteration that changes a path they match is
	// rejected, its change undone.
	Protect []string `json:"protect"`
	// ProtectInfra protects, beside Protect, every path that is test
	// infrastructure by its name (verify.IsTestInfraName: makefiles,
	// runner configuration, test data, test helpers), new ones too: the
	// default protection, with no --protect given.
	ProtectInfra bool `json:"protect_infra,omitempty"`
	// Bounds; zero means none (MaxIterations is always set).
	MaxIterations int           `json:"max_iterations"`
	MaxWallClock  time.Duration `json:"max_wall_clock,omitempty"`
	MaxCostUSD    float64       `json:"max_cost_usd,omitempty"`
	// StallIterations is K (LOOP-5); zero means DefaultStallIterations.
	StallIterations int `json:"stall_iterations,omitempty"`
	// Confirm is how many runs in a row on one tree a mechanical check
	// must pass to count as passed (LOOP-8); zero means DefaultConfirm.
	Confirm int `json:"confirm,omitempty"`
	// AllowTestRemoval: the goal asks to remove tests, so a pass with
	// fewer tests run than at the start, or a test newly skipped, counts
	// (LOOP-8); the loss is still recorded. Off by default.
	AllowTestRemoval bool `json:"allow_test_removal,omitempty"`
	// AgentBudget time-boxes each agent run (AG-T1); CheckBudget each
	// mechanical check (AG-T5).
	AgentBudget time.Duration `json:"agent_budget,omitempty"`
	CheckBudget time.Duration `json:"check_budget,omitempty"`
	// Predecessor is the run this one follows (--predecessor), as it
	// ended.
	Predecessor *Predecessor `json:"predecessor,omitempty"`
}

// GoalDigest is the SHA-256 of a goal, hex.
func GoalDigest(goal string) string {
	h := sha256.Sum256([]byte(goal))
	return hex.EncodeToString(h[:])
}

func (c Config) confirmN() int {
	if c.Confirm > 0 {
		return c.Confirm
	}
	return DefaultConfirm
}

func (c Config) stallK() int {
	if c.StallIterations > 0 {
		return c.StallIterations
	}
	return DefaultStallIterations
}

// Predecessor is an earlier run this run follows: its end restated in
// this run's result, and its failed approaches carried in the digest
// (LOOP-5).
type Predecessor struct {
	Run        string        `json:"run"`
	Status     string        `json:"status"`
	ExitCode   exitcode.Code `json:"exit_code"`
	Iterations int           `json:"iterations"`
	Message    string        `json:"message,omitempty"`
	Digest     []string      `json:"digest,omitempty"`
}

// Stage is where an iteration stands.
type Stage string

const (
	// StageDispatched: the ticket was handed to a child; its outcome is
	// read from the ticket.
	StageDispatched Stage = "dispatched"
	// StageUndo: its change is being undone (rejected or interrupted).
	StageUndo Stage = "undo"
	// StageCheck: the loop runs the done-check on the tree it left.
	StageCheck Stage = "check"
	// StageCommit: an accepted iteration is being committed.
	StageCommit Stage = "commit"
	// StageClosed: nothing more to do for it.
	StageClosed Stage = "closed"
)

// Outcome is what became of an iteration's change.
type Outcome string

const (
	// OutcomeAccepted: it changed the work tree and touched no protected
	// input; the change is committed.
	OutcomeAccepted Outcome = "accepted"
	// OutcomeNoChange: it changed nothing.
	OutcomeNoChange Outcome = "no-change"
	// OutcomeUnverified: it changed a protected oracle input (LOOP-6);
	// the change was undone and never counts as progress.
	OutcomeUnverified Outcome = "UNVERIFIED"
	// OutcomeInterrupted: converge died while the child ran; its change
	// was undone and the ticket is never handed out again.
	OutcomeInterrupted Outcome = "interrupted"
	// OutcomeFailed: the agent could not run (AG-T4).
	OutcomeFailed Outcome = "failed"
	// OutcomeStopped: a stop request ended the run mid-iteration; the
	// change was undone.
	OutcomeStopped Outcome = "stopped"
	// OutcomeTimedOut: the agent was stopped at a time-box the wall clock
	// cut short; the change was undone and the run ends limited.
	OutcomeTimedOut Outcome = "timed-out"
)

// AgentReport is what a child run reported: its status record and what
// running it cost. It is stored in the iteration's ticket.
type AgentReport struct {
	Agent      string   `json:"agent"`
	Status     string   `json:"status"`
	Summary    string   `json:"summary,omitempty"`
	NextAction string   `json:"next_action,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Claimed    []string `json:"files_claimed,omitempty"` // files_changed as the agent told it
	Concerns   []string `json:"concerns,omitempty"`
	// Failure is set when the agent could not run (AG-T4), after its
	// retry: what happened and its last stderr lines.
	Failure string `json:"failure,omitempty"`
	// TimedOut: it was stopped at its time-box without a status record.
	TimedOut   bool          `json:"timed_out,omitempty"`
	Attempts   int           `json:"attempts,omitempty"`
	Extensions int           `json:"extensions,omitempty"`
	CostUSD    float64       `json:"cost_usd,omitempty"`
	Duration   time.Duration `json:"duration,omitempty"`
	// Usage is what its runs reported consuming, every attempt and
	// extension (PR-M5); CostUSD is its price as the cost bound counts it.
	Usage agent.Usage `json:"usage,omitzero"`
}

// Verdict is a judge's answer, valid by the verdict schema (judge.go).
type Verdict struct {
	Verdict string   `json:"verdict"` // "done" or "not-done"
	Reasons []string `json:"reasons"`
	Missing []string `json:"missing,omitempty"`
}

// Check is one run of the done-check by the loop.
type Check struct {
	Key string `json:"key"` // "check/NN" or "final/NN"
	// Tree is the work tree the check ran on (see Workspace.Snapshot).
	Tree     string `json:"tree"`
	Head     string `json:"head"`
	Passed   bool   `json:"passed"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Output is the tail of what the check printed (mechanical) or the
	// judge's answer line (judged).
	Output string `json:"output"`
	// Digest identifies the output for LOOP-5's "the same as before":
	// the normalized output (timings dropped), or the verdict.
	Digest  string   `json:"digest"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Judged: a judge's answer (Verdict nil: it gave no valid verdict,
	// which is not done).
	Judged bool   `json:"judged,omitempty"`
	Note   string `json:"note,omitempty"`
	// Reruns are the loop's reruns of a mechanical check that passed, on
	// the same tree, in order (LOOP-8): their keys are Key#2, Key#3, ….
	Reruns []Check `json:"reruns,omitempty"`
	// Confirmed: it passed Config.Confirm runs in a row on one tree; a
	// mechanical pass counts only then (LOOP-8).
	Confirmed bool `json:"confirmed,omitempty"`
	// Flaky: it passed and then failed on one tree (LOOP-8). Passed is
	// false, Unconfirmed says so, and the run that failed is the last
	// of Reruns.
	Flaky bool `json:"flaky,omitempty"`
	// Unconfirmed says why a pass did not count (flaky, or the tree
	// moved under the check as it ran); Passed is then false.
	Unconfirmed string `json:"unconfirmed,omitempty"`
	// Census is the test census of a mechanical run (LOOP-8, PR-V4):
	// the tests it ran, passed, failed and skipped, where the check's
	// command is one the census understands; Known false and Why
	// otherwise. Tests is each test's counts, kept for the baseline (the
	// tests a later pass is held to) and dropped once a check was
	// compared.
	Census *census.Census           `json:"census,omitempty"`
	Tests  map[string]census.Counts `json:"tests,omitempty"`
	// Lost is what a pass lost against the baseline's census (tests
	// that no longer run, or now skip), when the goal allows it.
	Lost     string        `json:"lost,omitempty"`
	CostUSD  float64       `json:"cost_usd,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// Usage is what a judge's runs reported consuming.
	Usage agent.Usage `json:"usage,omitzero"`
}

// Iteration is one ticket <run>.iter.NN (LOOP-3).
type Iteration struct {
	N      int    `json:"n"`
	Ticket string `json:"ticket"`
	Stage  Stage  `json:"stage"`
	// Outcome is set once the child's result was read.
	Outcome Outcome `json:"outcome,omitempty"`
	// HeadBefore and TreeBefore are the commit and work tree it started
	// from; CheckBefore the digest of the check before it.
	HeadBefore  string `json:"head_before"`
	TreeBefore  string `json:"tree_before"`
	CheckBefore string `json:"check_before"`
	// TreeAfter is the work tree the child left; Changed the paths it
	// changed; Protected those of them that are protected (LOOP-6).
	TreeAfter string       `json:"tree_after,omitempty"`
	Changed   []string     `json:"changed,omitempty"`
	Protected []string     `json:"protected,omitempty"`
	Agent     *AgentReport `json:"agent,omitempty"`
	// Check is the done-check the loop ran after it; Final, for a judged
	// loop whose check said done, the fresh final re-judgment.
	Check *Check `json:"check,omitempty"`
	Final *Check `json:"final,omitempty"`
	// TestsLost is why a pass on the tree the iteration left was
	// UNVERIFIED by the test census (LOOP-8): tests that ran at the start
	// no longer run, or now skip. Rejected is that pass; the change was
	// undone and Check is the check of the tree put back.
	TestsLost string `json:"tests_lost,omitempty"`
	Rejected  *Check `json:"rejected,omitempty"`
	// Commit is the commit of an accepted iteration.
	Commit string `json:"commit,omitempty"`
	// Progress: the work tree or the check's output changed, and the
	// change was not rejected (LOOP-5).
	Progress  bool      `json:"progress"`
	Undos     int       `json:"undos,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Usage is what the iteration's agent and judges reported consuming.
	Usage agent.Usage `json:"usage,omitzero"`
}

// Terminal is how the run ended.
type Terminal struct {
	Status   Status        `json:"status"`
	ExitCode exitcode.Code `json:"exit_code"`
	Message  string        `json:"message"`
	At       time.Time     `json:"at"`
}

// State is a run's persisted state.
type State struct {
	RunID     string    `json:"run_id"`
	Config    Config    `json:"config"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// StartHead is the commit the run started from.
	StartHead string `json:"start_head,omitempty"`
	// Baseline is the check before the first iteration; BaselineFinal its
	// final re-judgment when a judged check said done at once.
	Baseline      *Check      `json:"baseline,omitempty"`
	BaselineFinal *Check      `json:"baseline_final,omitempty"`
	Iterations    []Iteration `json:"iterations"`
	// CostUSD is what agents and judges reported they cost, as the cost
	// bound counts it; Usage their tokens and cost in full.
	CostUSD  float64     `json:"cost_usd,omitempty"`
	Usage    agent.Usage `json:"usage,omitzero"`
	Terminal *Terminal   `json:"terminal,omitempty"`
}

// NewState is the state a new run starts from.
func NewState(runID string, cfg Config) State {
	cfg.GoalSHA256 = GoalDigest(cfg.Goal)
	return State{RunID: runID, Config: cfg, Iterations: []Iteration{}}
}

// TicketID names iteration n of run (LOOP-3).
func TicketID(run string, n int) string {
	return fmt.Sprintf("%s.iter.%02d", run, n)
}

// Resumable reports whether a stored state can go on: it has not ended.
func Resumable(s State) bool { return s.Terminal == nil && s.RunID != "" }

// StatusOf is the run's status in the store: running, or its terminal.
func StatusOf(s State) string {
	if s.Terminal != nil {
		return string(s.Terminal.Status)
	}
	return "running"
}

// current is the last iteration, or nil.
func (s *State) current() *Iteration {
	if len(s.Iterations) == 0 {
		return nil
	}
	return &s.Iterations[len(s.Iterations)-1]
}

// lastClosed is the last closed iteration, or nil.
func (s *State) lastClosed() *Iteration {
	for i := len(s.Iterations) - 1; i >= 0; i-- {
		if s.Iterations[i].Stage == StageClosed {
			return &s.Iterations[i]
		}
	}
	return nil
}

// InFlight is the iteration whose child was dispatched and not yet read,
// or nil.
func (s State) InFlight() *Iteration {
	if c := s.current(); c != nil && c.Stage == StageDispatched {
		return c
	}
	return nil
}

// lastCheck is the latest done-check: the current iteration's, else the
// baseline.
func (s *State) lastCheck() *Check {
	for i := len(s.Iterations) - 1; i >= 0; i-- {
		if c := s.Iterations[i].Check; c != nil {
			return c
		}
	}
	return s.Baseline
}

func (s State) clone() State {
	n := s
	n.Iterations = make([]Iteration, len(s.Iterations))
	copy(n.Iterations, s.Iterations)
	return n
}

// Observation is what Observe read of the world.
type Observation struct {
	Now time.Time
	// Head is the commit HEAD points at; Tree identifies the work tree's
	// content, tracked and untracked (ignored files aside).
	Head string
	Tree string
	// Changed are the paths that differ between the in-flight iteration's
	// TreeBefore and Tree, sorted; TestAware those of them whose code,
	// not a test, now behaves differently under a test runner (LOOP-6).
	Changed   []string
	TestAware []string `json:",omitempty"`
	// Ticket is the in-flight iteration's ticket as the store holds it;
	// nil when none is in flight or it was never created.
	Ticket *TicketView
	// Checks and Commits are what the acts since the last observation
	// reported.
	Checks  []Check
	Commits []CommitDone
	// StopRequested: `converge stop`, or a signal.
	StopRequested bool
}

// TicketView is a ticket as Decide needs it.
type TicketView struct {
	ID     string
	Status string // store.Ticket* statuses
	Owner  string
	Report *AgentReport // the stored result of a finished ticket
}

// CommitDone is a committed iteration.
type CommitDone struct {
	Ticket string `json:"ticket"`
	SHA    string `json:"sha"`
}

// ActKind names an action.
type ActKind string

const (
	// ActIterate creates the ticket, claims it in the child's name and
	// runs the body agent with the packet.
	ActIterate ActKind = "iterate"
	// ActCheck runs the done-check (the command, or a fresh judge).
	ActCheck ActKind = "check"
	// ActUndo puts the work tree and HEAD back to where the iteration
	// started.
	ActUndo ActKind = "undo"
	// ActCommit commits an accepted iteration with its trailer.
	ActCommit ActKind = "commit"
)

// Action is one thing Decide asks Act to do.
type Action struct {
	Kind   ActKind
	Key    string // "check/NN", "final/NN" for checks; "check/NN#R" for rerun R (LOOP-8)
	N      int
	Ticket string
	// Packet is the iteration's context packet, canonical JSON (LOOP-1,
	// LOOP-4).
	Packet []byte
	// Budget is the agent's time-box; Cut says the wall clock cut it short
	// (then a child stopped at it is not retried).
	Budget time.Duration
	Cut    bool
	// Final: the fresh final re-judgment of a judged check.
	Final bool
	// Rerun is n ≥ 2 for the n-th run of a check that passed, on the same
	// tree (LOOP-8).
	Rerun int
	// Head is where ActUndo puts HEAD back to.
	Head string
	// Interrupt: ActUndo also closes the ticket as interrupted.
	Interrupt bool
	// Message is ActCommit's commit message.
	Message string
}

// Wait: the done-check loop never waits; every step acts or ends.
func (a Action) Wait() (time.Duration, bool) { return 0, false }

// ActResult is what one act reports to the next observation.
type ActResult struct {
	Check  *Check
	Commit *CommitDone
}
