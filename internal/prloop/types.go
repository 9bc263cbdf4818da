// Package prloop is the PR review loop: its persisted State, the pure
// Decide function that holds every rule of SPEC §1 that can be a rule, and
// the types the engine (runner) uses to observe and act.
//
// Decide is pure: no IO, no clock (time arrives in Observation.Now), no
// randomness, no dependence on map iteration order. The same Decide runs in
// the local engine and, later, inside a Temporal workflow.
package prloop

import (
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
)

// Phase is where the loop is within a round.
type Phase string

const (
	// PhaseStart is the first step of a run: record the starting head and
	// end at once when the PR is already two-stable (PR-S1).
	PhaseStart Phase = "start"
	// PhaseRequest is the top of a round: request the Copilot review.
	PhaseRequest Phase = "request"
	// PhaseAwaitReview waits for the requested review to start and land on
	// the current head (PR-S1, PR-S2), and for CI to settle.
	PhaseAwaitReview Phase = "await-review"
	// PhaseFix has dispatched a Fix action and waits for its FixResult.
	PhaseFix Phase = "fix"
	// PhaseReply replies to and resolves threads after the push (PR-S12).
	PhaseReply Phase = "reply"
	// PhaseVerify is the convergence check on a fresh observation (PR-T1).
	PhaseVerify Phase = "verify"
	// PhaseDone: a terminal was reached; Decide returns it again.
	PhaseDone Phase = "done"
)

// Reason is why a run ended: its terminal (PR-T1..T13), with its exit
// code (IF-1).
type Reason string

// Terminal reasons.
const (
	ReasonTwoStable           Reason = "two-stable"
	ReasonPRClosed            Reason = "pr-closed"
	ReasonHumanPush           Reason = "human-push"
	ReasonBaseMoved           Reason = "base-moved"
	ReasonNoIndependentReview Reason = "blocked-no-independent-review"
	ReasonConvergenceFailure  Reason = "convergence-failure"
	ReasonCapExhausted        Reason = "cap-exhausted"
	ReasonIdleTimeout         Reason = "idle-timeout"
	ReasonStoppedByHuman      Reason = "stopped-by-human"
	ReasonErrored             Reason = "errored"
	// ReasonHandedOff: everything converge can act on converged but
	// trusted threads it escalated or deferred are still open (PR-T11).
	ReasonHandedOff Reason = "handed-off"
	// ReasonDryRun: a --dry-run printed what the loop would do and did
	// none of it (PR-M1).
	ReasonDryRun Reason = "dry-run"
	// ReasonDisposed: a --dispose-only run replied to and resolved the
	// open threads once (PR-M2).
	ReasonDisposed Reason = "disposed"
	// ReasonAllConflicting: every structural finding of a round conflicted
	// with another and was deferred to a human (PR-S7); the run ends
	// awaiting human review, with note NoteAllConflicting (IF-1: exit 3).
	ReasonAllConflicting Reason = "all-conflicting"
	// ReasonTakenOver: another converge took the PR over (its lease on
	// the head is newer than this run's start); this run wrote nothing
	// more (PR-T14).
	ReasonTakenOver Reason = "taken-over"
)

// NoteAllConflicting is the terminal's note, and the round's, when every
// structural finding of the round conflicted (PR-S7).
const NoteAllConflicting = "all-conflicting-deferred-to-human"

// ExitCode maps a terminal reason to its IF-1 exit code.
func ExitCode(reason Reason) exitcode.Code {
	return exitcode.For(exitcode.PR, string(reason))
}

// Labels converge applies on the forge.
const (
	LabelReady          = "converge:ready-for-merge"
	LabelNeedsAttention = "converge:needs-attention"
	LabelStop           = "converge:stop" // a human's stop request (PR-G5)
	StatusContext       = "converge"      // PR-T10 commit status / check run name
	CommitTrailer       = "Converge-Round"
	// AddressedTrailer names, in the loop's commit, each thread the commit
	// addresses: the trace in git that lets a run that crashed between
	// pushing and replying reply "addressed" instead of fixing again.
	AddressedTrailer = "Converge-Addressed"
)

// Disposition is what converge did with a finding (PR-S12), chosen by one
// function.
type Disposition string

// Dispositions.
const (
	DispAddressed Disposition = "addressed"
	DispStale     Disposition = "stale"
	DispDeferred  Disposition = "deferred"
	DispEscalated Disposition = "escalated"
	// DispOutdated: after success, a thread still open whose lines have
	// changed since it was written is replied to and resolved once
	// (PR-S13).
	DispOutdated Disposition = "outdated"
	// DispSettled: a point Copilot or the local review raised again after
	// converge deferred or escalated it in an earlier thread; answered
	// from that decision, linking it, and resolved, never fixed again
	// (memory.go).
	DispSettled Disposition = "settled"
)

// Config holds every knob of the loop; DefaultConfig has the defaults of
// SPEC §1 in one place (PR-M4).
type Config struct {
	MaxIterations       int           // PR-T5: rounds; the (N+1)th never starts
	MaxWallClock        time.Duration // PR-T5
	DiffMultiplier      float64       // PR-T6: loop lines vs the PR's lines at start
	MaxStructuralRounds int           // PR-T6: k consecutive structural rounds
	IdleTimeout         time.Duration // PR-T3
	ReviewStartWindow   time.Duration // PR-S1: no start within this → accept an existing review of the head
	ReviewWaitMax       time.Duration // PR-S2: bounded wait for a started review to land
	CIWaitMax           time.Duration // bounded wait for CI to settle on the head
	// Reobserve bounds a wait that needs no event, only another read
	// (step.again); zero reads again at the engine's next poll.
	Reobserve  time.Duration
	ExpectsBot bool // false → single-iteration mode (PR-M3)
	// Bot is the forge's review bot (Copilot on GitHub, in package
	// review/copilot); nil means none: single-iteration mode.
	Bot            ReviewBot
	ExpectNoChecks bool     // PR-T1(2): the repo has no CI
	TrustedBots    []string // PR-O2 allowlist, matched lower-case
	// Self is converge's own login as the worker knows it (the token's
	// viewer, set at preflight): only Observe reads it, to fill
	// Observation.Self. Decide reads the observation's, never this, so a
	// replayed observation decides the same wherever it runs.
	Self string
	// self is Observation.Self as the pure functions read it: set by
	// observed at every pure entry point, never from outside.
	self string
	// PushVisibleWait bounds how long an observation may still show the
	// head before the loop's own push (the forge lags a push by seconds)
	// before that reads as a force-push (PR-T4). Zero: no grace.
	PushVisibleWait time.Duration
	// LocalReview: a review agent is configured, so every round runs the
	// local multi-angle review (PR-S4), the second arm of conjunct 4.
	LocalReview bool
	// UnsettledReads bounds how often a Copilot review whose count, own
	// comments and visible threads disagree is observed again before the
	// round takes it as no signal (PR-O2).
	UnsettledReads int
	// NoSignalRetries bounds the re-requests on one head whose Copilot
	// review gave no signal (PR-O3), before blocked-no-independent-review.
	NoSignalRetries int
	// RequestRetries bounds the retries of a review request that failed
	// transiently (PR-M3: a transient error is never a refusal).
	RequestRetries int
	// RecapInterval is PR-G2's cadence: the loop stops for a recap every
	// this many rounds, counted from the forge's history; 0: never.
	RecapInterval int
	// MaxCostUSD is PR-T5's cost bound: the agents' reported cost, in
	// USD, at which the run ends cap-exhausted; 0: no bound (costbound.go).
	MaxCostUSD float64
	// FixMinor sends minor forge findings to the fixers too (PR-S9), so
	// they are addressed and replied to like the rest; off, they are
	// deferred to a human.
	FixMinor bool
	// ClassifyJudge: a judge agent classifies the comments the heuristic
	// leaves borderline (PR-S5); without one they are structural.
	ClassifyJudge bool
	// SyncBase brings a branch that is BEHIND its base up to date with a
	// merge commit, in a round that has nothing else to commit (PR-S14).
	// A DIRTY branch ends base-moved whatever this says.
	SyncBase bool
	// ReviewMemory keeps a machine-written section of the repository's
	// review instructions listing the decisions converge settled, synced
	// into Copilot's instructions, written only in a round's own commit
	// (memory.go).
	ReviewMemory bool
}

// DefaultConfig returns the defaults of SPEC §1.
func DefaultConfig() Config {
	return Config{
		MaxIterations:       20,
		MaxWallClock:        4 * time.Hour,
		DiffMultiplier:      3,
		MaxStructuralRounds: 3,
		IdleTimeout:         30 * time.Minute,
		ReviewStartWindow:   2 * time.Minute,
		ReviewWaitMax:       20 * time.Minute,
		CIWaitMax:           30 * time.Minute,
		Reobserve:           5 * time.Second,
		PushVisibleWait:     2 * time.Minute,
		ExpectsBot:          true,
		UnsettledReads:      5,
		NoSignalRetries:     2,
		RequestRetries:      5,
		FixMinor:            true,
		RecapInterval:       10,
	}
}

// Verdict classifies a finding (PR-S5): structural changes behaviour,
// correctness, security, an API, tests or the build; minor does not.
type Verdict string

// Verdicts.
const (
	VerdictStructural Verdict = "structural"
	VerdictMinor      Verdict = "minor"
)

// Finding is one normalized review point (SPEC vocabulary).
type Finding struct {
	ID        string  `json:"id"` // the thread id for forge findings
	ThreadID  string  `json:"thread_id,omitempty"`
	Path      string  `json:"path"`
	StartLine int     `json:"start_line"`
	EndLine   int     `json:"end_line"`
	Summary   string  `json:"summary"` // first comment's body
	Verdict   Verdict `json:"verdict"`
	// Class says why the verdict: the classifier's rules that fired, or
	// the judge's verdict and reason (PR-S5).
	Class string `json:"class,omitempty"`
	// Borderline: the heuristic could not decide; a judge does, when one
	// is configured. Unclear: the judge gave no valid verdict this round,
	// so the finding is structural and the round counts toward PR-G4.
	Borderline bool   `json:"borderline,omitempty"`
	Unclear    bool   `json:"unclear,omitempty"`
	Source     string `json:"source"` // the review bot's Name (copilot) | human | bot | local
	Author     string `json:"author"`
	// Reopened: converge resolved this thread earlier and a human reopened
	// it; the thread's earlier replies are input to the fix (PR-S12).
	Reopened bool `json:"reopened,omitempty"`
	// Outdated threads: StartLine..EndLine is the current position (0 when
	// the forge has none); OrigStart..OrigEnd at OriginalCommit is what the
	// reviewer saw (a suggestion may replace only those lines).
	Outdated       bool   `json:"outdated,omitempty"`
	OrigStart      int    `json:"orig_start,omitempty"`
	OrigEnd        int    `json:"orig_end,omitempty"`
	OriginalCommit string `json:"original_commit,omitempty"`
	// CommentID is set for a top-level PR comment or a human review body
	// (PR-T13): no thread to resolve, answered with a top-level comment.
	CommentID string `json:"comment_id,omitempty"`
	// MergedFrom are the ids of the findings merged into this one (PR-S6):
	// the same point from another source or thread.
	MergedFrom []string `json:"merged_from,omitempty"`
	// Held is triage's hand-off before any fix: deferred (a conflict,
	// PR-S7) or escalated (an oscillation, PR-S8), with why. A held
	// finding is not fixed.
	Held       Disposition `json:"held,omitempty"`
	HeldReason string      `json:"held_reason,omitempty"`
	// Settled: the finding raises again a point converge deferred or
	// escalated in an earlier thread; Held is DispSettled (memory.go).
	Settled *SettledRef `json:"settled,omitempty"`
	// FixCaused is the round whose commit changed the lines this new
	// finding is on, FixCausedCommit that commit (fixcaused.go); 0: none.
	FixCaused       int    `json:"fix_caused,omitempty"`
	FixCausedCommit string `json:"fix_caused_commit,omitempty"`
}

// ThreadRecord remembers what converge did to a thread in this run.
type ThreadRecord struct {
	ThreadID    string      `json:"thread_id"`
	Round       int         `json:"round"`
	Disposition Disposition `json:"disposition"`
	HeadSHA     string      `json:"head_sha"`
	Reason      string      `json:"reason,omitempty"`
	Resolved    bool        `json:"resolved"` // converge emitted the resolve
	// ObservedResolved: a later observation showed the thread resolved, so
	// finding it open again means a human reopened it (never stale).
	ObservedResolved bool `json:"observed_resolved,omitempty"`
}

// RoundRecord is the ledger line of one round (PR-M5).
type RoundRecord struct {
	N          int       `json:"n"`
	HeadSHA    string    `json:"head_sha"` // head the round reviewed
	ReviewID   string    `json:"review_id,omitempty"`
	Findings   []Finding `json:"findings,omitempty"`
	CommitSHA  string    `json:"commit_sha,omitempty"`
	Structural bool      `json:"structural"`
	StartedAt  time.Time `json:"started_at"`
	// Hunks are what the round's commit changed (PR-S8).
	Hunks []Hunk `json:"hunks,omitempty"`
	// Notes record the round's decisions beyond its findings (PR-S7,
	// PR-S8).
	Notes []string `json:"notes,omitempty"`
	// Unclear: some finding's classification was unclear this round; the
	// round counts as structural for PR-T6 (PR-G4).
	Unclear bool `json:"unclear,omitempty"`
	// Usage is what the round's agents reported consuming: fixers, the
	// classifier's judge, the recap judge (PR-M5). Agents that report
	// nothing (suggest, most commands) add nothing.
	Usage agent.Usage `json:"usage,omitzero"`
	// Censuses are the test censuses of the round's fix (PR-V4).
	Censuses []TestCensus `json:"censuses,omitempty"`
}

// State is the loop's persisted state. It is plain data (JSON) so it can be
// stored before every risky step and replayed.
type State struct {
	Phase     Phase     `json:"phase"`
	Round     int       `json:"round"` // rounds started so far
	StartedAt time.Time `json:"started_at"`

	InitialHead      string `json:"initial_head"`
	LastLoopSHA      string `json:"last_loop_sha"` // PR-T4 / PR-S11
	InitialDiffLines int    `json:"initial_diff_lines"`
	LoopDiffLines    int    `json:"loop_diff_lines"`

	ConsecutiveStructural int  `json:"consecutive_structural"`
	SingleIteration       bool `json:"single_iteration"` // PR-M3, sticky
	// SingleIterationWhy records the decision (PR-S1: "recorded in the run").
	SingleIterationWhy string `json:"single_iteration_why,omitempty"`

	// Request is the current round's review request (PR-S1).
	Request ReviewRequest `json:"request"`

	Kept        []Finding `json:"kept,omitempty"` // this round's kept findings
	ReplyPasses int       `json:"reply_passes"`   // bounded retries of PhaseReply

	// HeadSeen is the head of the latest observation and HeadSeenAt when
	// it first appeared: the CI wait (and the UNKNOWN merge state) is
	// bounded from there.
	HeadSeen   string    `json:"head_seen,omitempty"`
	HeadSeenAt time.Time `json:"head_seen_at,omitzero"`
	// PushedAt is when the loop last reported a push (PushVisibleWait).
	PushedAt time.Time `json:"pushed_at,omitzero"`

	Threads []ThreadRecord `json:"threads,omitempty"` // dispositions so far

	Rounds []RoundRecord `json:"rounds,omitempty"`

	LastActivityAt time.Time `json:"last_activity_at,omitzero"` // PR-T3
	Terminal       *Terminal `json:"terminal,omitempty"`

	// PushedForgeAt is the forge's clock when the loop's last push was
	// seen: a review must be submitted after it to count (PR-T1(4)).
	PushedForgeAt time.Time `json:"pushed_forge_at,omitzero"`
	// UnsettledReview and UnsettledCount count the observations of one
	// Copilot review that was not settled yet (PR-O2).
	UnsettledReview string `json:"unsettled_review,omitempty"`
	UnsettledCount  int    `json:"unsettled_count,omitempty"`
	// NoSignalHead and NoSignalTries count the re-requests on a head whose
	// Copilot review gave no signal (PR-O3).
	NoSignalHead  string `json:"no_signal_head,omitempty"`
	NoSignalTries int    `json:"no_signal_tries,omitempty"`
	// Recaps are the recap gates held so far (PR-G2), one per count.
	Recaps []RecapRecord `json:"recaps,omitempty"`
	// RevertedRounds are the rounds a REVERT-AND-SHIP verdict reverted.
	RevertedRounds []int `json:"reverted_rounds,omitempty"`
	// LocalReviews are the local reviews of recent heads (PR-S4).
	LocalReviews []LocalReviewRecord `json:"local_reviews,omitempty"`
	// BaselineRed: the tests were red on the PR's head before any fix
	// (AG-T5); BaselineTail holds their first failing lines.
	BaselineRed  bool   `json:"baseline_red,omitempty"`
	BaselineTail string `json:"baseline_tail,omitempty"`
	// Classified are the judge's verdicts on borderline comments (PR-S5),
	// by comment and text; an unclear one holds for its round only.
	Classified []ClassRecord `json:"classified,omitempty"`
	// BaseSyncSkip names the (head, base) pair whose base sync made no
	// commit (a conflict, red tests), so it is not tried again on the
	// same pair; BaseSyncWhy says why (PR-S14).
	BaseSyncSkip string `json:"base_sync_skip,omitempty"`
	BaseSyncWhy  string `json:"base_sync_why,omitempty"`
	// PriorResolved are the replies (PriorResolvedKey) after which an
	// earlier run of this PR saw the thread resolved: a thread open again
	// under the same reply was reopened by a human.
	PriorResolved []string `json:"prior_resolved,omitempty"`
	// EmptyKey names the missing fact the latest rounds waited on while
	// changing nothing (no commit, no reply, resolve or answer), EmptyWhy
	// says it in words, EmptyRounds counts those rounds in a row and
	// EmptyRound is the last one counted: emptyRoundsMax in a row on the
	// same fact end the run naming it (emptyRound).
	EmptyKey    string `json:"empty_key,omitempty"`
	EmptyWhy    string `json:"empty_why,omitempty"`
	EmptyRounds int    `json:"empty_rounds,omitempty"`
	EmptyRound  int    `json:"empty_round,omitempty"`
	// PriorVerdictHead is the head an earlier run of the PR proved
	// two-stable, when that is the PR's newest verdict (PriorVerdictHead):
	// the verdict the PR may still show, which a new head breaks (PR-T14).
	PriorVerdictHead string `json:"prior_verdict_head,omitempty"`
	// Retractions are the verdicts this run withdrew (PR-T14), and the
	// two-stable terminals it voided because the head moved before they
	// were published.
	Retractions []Retraction `json:"retractions,omitempty"`
	// StoppedPhase is the phase a run stopped by a signal or `converge
	// stop` stood in: the same command resumes it there (Reopens).
	StoppedPhase Phase `json:"stopped_phase,omitempty"`
	// RunID is the run's id, its lease's name on the head's pending
	// verdict (lease.go); empty, no lease is written.
	RunID string `json:"run_id,omitempty"`
	// LeaseAtStart is another run's lease the head showed when this run
	// started (a take-over's): not a sign of being taken over.
	LeaseAtStart string `json:"lease_at_start,omitempty"`
}

// ReviewRequest is one round's request for the bot's review (PR-S1,
// PR-S2): when and on which head it was made, the marks that tell a review
// that started after it from one that existed before, and what came of it.
type ReviewRequest struct {
	At   time.Time `json:"at,omitzero"`
	Head string    `json:"head,omitempty"`
	// ForgeAt is At on the forge's clock (the observation's ObservedAt),
	// which review times are compared with.
	ForgeAt      time.Time `json:"forge_at,omitzero"`
	EventMark    int64     `json:"event_mark"`             // highest started-event id before the request
	EventMarkSet bool      `json:"event_mark_set"`         // events were read when the mark was taken
	SeenReviews  []string  `json:"seen_reviews,omitempty"` // the bot's review ids that existed before the request
	Started      bool      `json:"started"`
	Accepted     string    `json:"accepted,omitempty"` // the review this round counts
	// Attempts counts requests that failed transiently (PR-M3), and
	// requests made again because a crash kept the first from the forge
	// (REL-2).
	Attempts int `json:"attempts,omitempty"`
	// Unconfirmed: the round asked for the request, and no observation
	// since reported it made or showed it: a crash may have come between
	// saving the round and requesting (REL-2).
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// LocalReviewRecord is one local review of a head as the state keeps it.
type LocalReviewRecord struct {
	Head     string    `json:"head"`
	Round    int       `json:"round"`
	Degraded bool      `json:"degraded,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
	Summary  string    `json:"summary,omitempty"`
}

// structural counts the record's structural findings.
func (r LocalReviewRecord) structural() int {
	n := 0
	for _, f := range r.Findings {
		if f.Verdict != VerdictMinor {
			n++
		}
	}
	return n
}

// Observation is one fresh read of the world, plus the outcome of the
// previous act. The engine fills it; Decide never trusts an older picture.
type Observation struct {
	Now time.Time
	PR  *forge.PullRequest

	// BotStartedMax is the highest copilot_work_started event id seen
	// (0 when events were not read this step; see State.WantsEvents).
	BotStartedMax int64
	EventsRead    bool

	// Permissions maps a lower-case login to its repository permission
	// (admin, maintain, write, triage, read, none) for every author of an
	// unresolved thread (SEC-1). Missing means unknown: untrusted.
	Permissions map[string]forge.Permission

	// BaseDiffLines is added+deleted lines of base...head at run start.
	BaseDiffLines int
	// BaseBehind is how many commits of the base the head lacks, as the
	// forge's compare counts them (forge.BaseComparer): read only with
	// sync_base on and a merge state that does not tell already (GitHub
	// says BEHIND only under a protection rule), 0 otherwise (PR-S14).
	BaseBehind int

	// StopRequested: `converge stop` from outside the process (PR-G5).
	StopRequested bool
	// StopLabelBy is who put the converge:stop label on, when it is on
	// and the forge lists issue events ("" otherwise).
	StopLabelBy string

	// Result is the outcome of the previous step's actions, if any.
	Result *ActResult

	// Self is converge's own login (the token's viewer): its comments are
	// never findings, and only its markers are believed. Observe fills it;
	// Decide reads it here, not from Config.
	Self string `json:"self,omitempty"`

	// Classes is the heuristic's result for each thread comment triage
	// may read, worked out when the comment was first observed
	// (ClassifyObserved); nil or partial, Decide classifies the rest.
	// JSON does not carry it: Decide on the JSON copy (the Temporal
	// engine's) classifies afresh and decides the same.
	Classes Classes `json:"-"`
}

// ActionKind names what the engine must do.
type ActionKind string

const (
	ActRequestReview ActionKind = "request-review" // Copilot via requestReviewsByLogin, union
	ActWait          ActionKind = "wait"           // nothing to do until the world changes
	ActFix           ActionKind = "fix"            // agents → build/test → commit → push
	ActReply         ActionKind = "reply"
	ActResolve       ActionKind = "resolve"
	ActAddLabel      ActionKind = "add-label"
	ActRemoveLabel   ActionKind = "remove-label"
	ActSetStatus     ActionKind = "set-status"   // PR-T10 `converge` verdict on a commit
	ActLocalReview   ActionKind = "local-review" // PR-S4 multi-angle review of the head
	ActComment       ActionKind = "comment"      // a top-level PR comment (summary, PR-T13 replies)
	ActUnresolve     ActionKind = "unresolve"    // PR-T12: an "addressed" claim git no longer proves
	ActRecap         ActionKind = "recap"        // PR-G2: the recap judge's verdict on all rounds so far
	ActRevert        ActionKind = "revert"       // PR-G2: one revert commit of the drifted rounds
	ActCleanup       ActionKind = "cleanup"      // PR-S13: reply to and resolve one outdated thread after success
	ActSyncBase      ActionKind = "sync-base"    // PR-S14: merge the base into a BEHIND branch, test, push
	ActClassify      ActionKind = "classify"     // PR-S5: the judge's verdict on the round's borderline comments
)

// Action is one step for the engine. Key is deterministic (run-independent
// parts only: round, kind, target) so a repeated act is recognised.
type Action struct {
	Kind     ActionKind              `json:"kind"`
	Key      string                  `json:"key"`
	ThreadID string                  `json:"thread_id,omitempty"`
	Body     string                  `json:"body,omitempty"`
	Label    string                  `json:"label,omitempty"`
	SHA      string                  `json:"sha,omitempty"`
	State    forge.CommitStatusState `json:"state,omitempty"` // set-status
	Reason   string                  `json:"reason,omitempty"`
	Round    int                     `json:"round,omitempty"`
	Findings []Finding               `json:"findings,omitempty"` // fix
	// Recap is what a recap action shows the judge (PR-G2).
	Recap *recap.Input `json:"recap,omitempty"`
	// Reverts are the loop commits a revert action reverts, for the
	// rounds RevertRounds (PR-G2).
	Reverts      []string `json:"reverts,omitempty"`
	RevertRounds []int    `json:"revert_rounds,omitempty"`
	// Memory, on a fix with review_memory on, is what the round's commit
	// writes into the review instructions' settled section (memory.go).
	Memory *ReviewMemory `json:"memory,omitempty"`
	// Effort, on a local review, is how many local reviews in a row
	// before it found structural items: above 0 the review looks harder
	// (PR-S4, EffortReviewer).
	Effort int `json:"effort,omitempty"`
	// After, on a wait, is when Decide next has something to decide
	// whatever the forge shows (a window closes, a bound runs out): the
	// engine observes again no later than that, back-off or not.
	After time.Duration `json:"after,omitempty"`
}

// ActResult is what the engine reports back from acting.
type ActResult struct {
	RequestRefused bool       `json:"request_refused,omitempty"` // Copilot not available → PR-M3
	RefusedReason  string     `json:"refused_reason,omitempty"`
	Fix            *FixResult `json:"fix,omitempty"`
	// RequestFailed: a transient fault kept the review request from
	// landing; it is retried, never read as a refusal (PR-M3).
	RequestFailed bool `json:"request_failed,omitempty"`
	// Requested: the review request landed (ReviewRequest.Unconfirmed).
	Requested   bool               `json:"requested,omitempty"`
	LocalReview *LocalReviewResult `json:"local_review,omitempty"`
	// Recap is the recap judge's verdict (PR-G2); Revert the revert
	// commit a REVERT-AND-SHIP verdict made.
	Recap  *RecapResult `json:"recap,omitempty"`
	Revert *FixResult   `json:"revert,omitempty"`
	// Classify is the judge's answer on borderline comments (PR-S5).
	Classify *ClassifyResult `json:"classify,omitempty"`
}

// LocalReviewResult is one multi-angle local review of a head (PR-S4).
type LocalReviewResult struct {
	Head string `json:"head"`
	// Findings of every angle, Source "local"; an angle that could not be
	// parsed contributes one structural "review could not be parsed"
	// finding without a path.
	Findings []Finding `json:"findings,omitempty"`
	// Degraded: some angle's output could not be parsed; such a review is
	// never the independent review of conjunct 4.
	Degraded bool          `json:"degraded,omitempty"`
	Angles   []AngleResult `json:"angles"`
	// Summary is the markdown comment to post (PR-S4), ending in a hidden
	// marker naming the head and round.
	Summary string `json:"summary,omitempty"`
	Cached  bool   `json:"cached,omitempty"`
	// Usage is what the angles' runs reported consuming (PR-M5); zero for
	// a cached review.
	Usage agent.Usage `json:"usage,omitzero"`
}

// AngleResult is one angle's outcome in a local review.
type AngleResult struct {
	Name     string `json:"name"`
	Parsed   bool   `json:"parsed"`
	Findings int    `json:"findings"`
}

// FixResult is the outcome of one ActFix.
type FixResult struct {
	Round        int              `json:"round"`
	Addressed    []string         `json:"addressed,omitempty"` // finding ids fixed and pushed
	Blocked      []BlockedFinding `json:"blocked,omitempty"`
	TestsPassed  bool             `json:"tests_passed"`
	CommitSHA    string           `json:"commit_sha,omitempty"` // pushed head; "" when nothing was committed
	LinesChanged int              `json:"lines_changed"`        // added+deleted by the commit
	// Hunks are the commit's diff hunks (PR-S8), read right after it.
	Hunks []Hunk `json:"hunks,omitempty"`
	// BaselineRed: the tests were red on the PR's head before any fix
	// (AG-T5); BaselineTail holds their first failing lines.
	BaselineRed  bool   `json:"baseline_red,omitempty"`
	BaselineTail string `json:"baseline_tail,omitempty"`
	// Censuses are the test censuses of the Fix's build/test runs
	// (PR-V4): the baseline, the candidates, the commit pushed.
	Censuses []TestCensus `json:"censuses,omitempty"`
	// Usage is what the round's fixer runs reported consuming (PR-M5).
	Usage agent.Usage `json:"usage,omitzero"`
	// Notes are what the fixers said beside their fixes, for the round's
	// record (AG-T2, AG-E1): concerns of a DONE_WITH_CONCERNS, and a
	// fixer that needed more context or a stronger model.
	Notes []string `json:"notes,omitempty"`
	// Proven says, per addressed finding, what converge proved of its
	// fix (PR-V1): the lines the change touched, the verifier's reason.
	// Its reply quotes it.
	Proven map[string]string `json:"proven,omitempty"`
	// Sync marks the outcome of a base sync (PR-S14), not of fixers:
	// CommitSHA is the merge commit, and SyncWhy says why there is none.
	Sync    bool   `json:"sync,omitempty"`
	SyncWhy string `json:"sync_why,omitempty"`
}

// BlockedFinding is a finding the fixers could not address.
type BlockedFinding struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Terminal is how a run ended.
type Terminal struct {
	Reason   Reason        `json:"reason"`
	ExitCode exitcode.Code `json:"exit_code"`
	Message  string        `json:"message"`
	// Note qualifies the reason, e.g. NoteAllConflicting.
	Note  string `json:"note,omitempty"`
	Proof *Proof `json:"proof,omitempty"`
	// Disposal is what a --dispose-only run did (PR-M2).
	Disposal *Disposal `json:"disposal,omitempty"`
	// Usage is what the run's agents reported consuming, per round and in
	// total (PR-M5).
	Usage *UsageReport `json:"usage,omitempty"`
	// AgentFailure names the agent that could not run, when that ended
	// the run errored (AG-T4): the PR's comment beside needs-attention
	// says it.
	AgentFailure *AgentFailure `json:"agent_failure,omitempty"`
}

// AgentFailure is an agent that could not run, as an errored terminal
// records it: which agent, and why in its CLI's words, redacted (SEC-3).
type AgentFailure struct {
	Agent string `json:"agent"`
	// Kind is the CLI's own report's kind (auth, endpoint, cli); "" when
	// the CLI said nothing of its own (a crash, output without a record).
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

// Proof is printed and stored at success (PR-T9): proof, not assertion.
type Proof struct {
	PR             string    `json:"pr"`
	HeadSHA        string    `json:"head_sha"`
	ReviewedCommit string    `json:"reviewed_commit"`
	ReviewID       string    `json:"review_id,omitempty"`
	ReviewSource   string    `json:"review_source"` // the review bot's Name (copilot) | local | none
	ReviewedAt     time.Time `json:"reviewed_at"`
	// ObservedAt is when the observation the verdict was decided on
	// began, by the engine's clock: news after it is news the verdict did
	// not read (PR-T14).
	ObservedAt               time.Time `json:"observed_at,omitzero"`
	CIState                  string    `json:"ci_state"`
	OpenThreadsAwaitingReply int       `json:"open_threads_awaiting_reply"`
	EscalatedThreads         []string  `json:"escalated_threads"`
	HandOffs                 []string  `json:"hand_offs"` // deferred threads: handed to a human
	// UntrustedThreads are threads opened by authors without write
	// access: listed, never acted on (SEC-1), not hand-offs.
	UntrustedThreads []string         `json:"untrusted_threads"`
	RoundsRun        int              `json:"rounds_run"`
	RevertedRounds   []int            `json:"reverted_rounds"`
	MergeState       forge.MergeState `json:"merge_state"`
	Notes            []string         `json:"notes,omitempty"` // e.g. BEHIND (PR-T7)
	// TestCensus is the test census of the head (PR-V4), or why there
	// is none.
	TestCensus *TestCensus `json:"test_census,omitempty"`
	// Usage is what the run's agents reported consuming, per round and
	// in total (PR-M5).
	Usage *UsageReport `json:"usage,omitempty"`
	// FindingProofs say how each finding converge answered "Addressed"
	// was proven (PR-V7): by a test, the verifier, a suggestion applied
	// verbatim, or changed lines alone ("not proven").
	FindingProofs []FindingProof `json:"finding_proofs,omitempty"`
}

// FindingProof is how one addressed thread's fix was proven.
type FindingProof struct {
	Thread string `json:"thread"`
	Round  int    `json:"round"`
	Proof  string `json:"proof"`
}

// Review names the independent review the proof rests on: its source and,
// when it has one, its id ("copilot review PRR_1"; a local review has
// none).
func (p *Proof) Review() string {
	if p.ReviewID == "" {
		return p.ReviewSource + " review"
	}
	return p.ReviewSource + " review " + p.ReviewID
}
