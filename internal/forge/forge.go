// Package forge holds the domain types converge reads from and writes to a
// code host (GitHub first), and the Forge interface every backend serves.
//
// Types here are what the loop reasons about, not any API's wire shapes:
// backends translate. Logins are kept exactly as the surface reported them;
// matching bot identities across surfaces is the caller's job (PR-O2).
package forge

import (
	"context"
	"strings"
	"time"
)

// PRState is a pull request's lifecycle state.
type PRState string

// PR states (GitHub's spelling; other backends translate).
const (
	StateOpen   PRState = "OPEN"
	StateClosed PRState = "CLOSED"
	StateMerged PRState = "MERGED"
)

// MergeState tells whether the PR can merge as it stands.
type MergeState string

// Merge states (GitHub's MergeStateStatus).
const (
	MergeClean    MergeState = "CLEAN"
	MergeDirty    MergeState = "DIRTY"
	MergeBehind   MergeState = "BEHIND"
	MergeBlocked  MergeState = "BLOCKED"
	MergeUnstable MergeState = "UNSTABLE"
	MergeUnknown  MergeState = "UNKNOWN"
	MergeHasHooks MergeState = "HAS_HOOKS"
	MergeDraft    MergeState = "DRAFT"
)

// MergeableState tells whether the PR's head merges into its base without
// conflicts (GitHub's MergeableState; PullRequest.Mergeable).
type MergeableState string

// Mergeable states; UNKNOWN while the forge has not computed it yet.
const (
	MergeableYes         MergeableState = "MERGEABLE"
	MergeableConflicting MergeableState = "CONFLICTING"
	MergeableUnknown     MergeableState = "UNKNOWN"
)

// ReviewState is a submitted review's state (Review.State).
type ReviewState string

// Review states (GitHub's PullRequestReviewState). A PENDING review is a
// draft only its author sees.
const (
	ReviewApproved         ReviewState = "APPROVED"
	ReviewChangesRequested ReviewState = "CHANGES_REQUESTED"
	ReviewCommented        ReviewState = "COMMENTED"
	ReviewDismissed        ReviewState = "DISMISSED"
	ReviewPending          ReviewState = "PENDING"
)

// Permission is a login's access to a repository.
type Permission string

// Permission levels, strongest first.
const (
	PermAdmin    Permission = "admin"
	PermMaintain Permission = "maintain"
	PermWrite    Permission = "write"
	PermTriage   Permission = "triage"
	PermRead     Permission = "read"
	PermNone     Permission = "none"
)

// CanWrite reports whether the level may push to the repository: admin,
// maintain or write (SEC-1), matched case-insensitively.
func (p Permission) CanWrite() bool {
	switch Permission(strings.ToLower(string(p))) {
	case PermAdmin, PermMaintain, PermWrite:
		return true
	}
	return false
}

// CIState is the combined state of CI on a commit (CheckRollup.State).
type CIState string

// CI rollup states; "" when the commit has no check or status.
const (
	CISuccess  CIState = "SUCCESS"
	CIFailure  CIState = "FAILURE"
	CIPending  CIState = "PENDING"
	CIError    CIState = "ERROR"
	CIExpected CIState = "EXPECTED"
)

// CheckStatus is a check run's progress (CheckContext.Status).
type CheckStatus string

// Check run statuses; "" for commit statuses.
const (
	CheckQueued     CheckStatus = "QUEUED"
	CheckInProgress CheckStatus = "IN_PROGRESS"
	CheckCompleted  CheckStatus = "COMPLETED"
)

// CheckConclusion is a finished check run's result, or a commit status's
// state (CheckContext.Conclusion): SUCCESS, FAILURE, NEUTRAL, SKIPPED,
// CANCELLED, TIMED_OUT, ACTION_REQUIRED, STALE; for statuses SUCCESS,
// FAILURE, ERROR, PENDING, EXPECTED.
type CheckConclusion string

// PullRequest is one whole observation of a pull request (PR-O1).
type PullRequest struct {
	Ref        PRRef
	ID         string // node id, used by mutations
	Number     int
	URL        string
	Title      string
	Body       string
	Author     string
	State      PRState
	IsDraft    bool
	HeadRef    string
	HeadSHA    string
	BaseRef    string
	BaseSHA    string
	HeadRepo   string // owner/name of the head repository
	CrossRepo  bool   // head lives in a fork
	Mergeable  MergeableState
	MergeState MergeState

	Checks             CheckRollup // on the head commit
	Reviews            []Review    // oldest first, from the full list (PR-O4)
	Threads            []Thread
	RequestedReviewers []string
	Labels             []string
	Commits            []Commit // the branch's most recent commits, oldest first
	// CommitsComplete: Commits holds every commit of the PR, so a SHA
	// absent from it is not in the head's history (PR-T12).
	CommitsComplete bool
	// IssueComments are the PR's top-level conversation comments, oldest
	// first (PR-T13; converge's own summary comments, PR-S4).
	IssueComments []IssueComment
	// CloneURL is the repository's git URL as the API reports it (SEC-6):
	// credentials go there and nowhere else.
	CloneURL string
	// ForcePushes are the head ref's force-pushes as the PR's timeline
	// shows them (the most recent few), oldest first: a review submitted
	// before the last of them never counts, even of a commit that became
	// the head again (PR-T1(4)). A plain push needs no entry: it always
	// makes a new commit the head, which no earlier review can be of.
	ForcePushes []ForcePush

	// ObservedAt is the forge's idea of "now" for this observation when the
	// backend can tell (the Date header), else the client's clock.
	ObservedAt time.Time
	// Requests counts API requests this observation cost.
	Requests int
	// Spend is what this observation cost on the forge's primary rate
	// limit, as the forge's answers said it (spend.go): a probe answered
	// 304 costs nothing, a whole read what the forge charged for it.
	Spend Spend
	// Unchanged: asked WithProbe, a conditional change probe proved
	// nothing it covers changed since the backend's last whole read, and
	// this is that read (with ObservedAt and Requests of now). What no
	// probe covers (on GitHub a thread's resolution) may be older: a loop
	// only waits on it, and acts or ends only on a whole read.
	Unchanged bool
}

// Review is one submitted review.
type Review struct {
	ID          string // node id
	DatabaseID  int64
	Author      string
	State       ReviewState
	CommitSHA   string
	SubmittedAt time.Time
	Body        string
	// CommentCount is the review's own inline comment count as the forge
	// reports it (GraphQL comments.totalCount); with the body's stated count
	// and the visible threads it tells a settled review from one whose
	// comments are not visible yet (PR-O2).
	CommentCount int
}

// Thread is a review thread with all its comments, oldest first.
type Thread struct {
	ID         string
	Path       string
	Line       int // 0 when the thread no longer maps to a line
	StartLine  int // 0 for single-line threads
	OrigLine   int
	OrigStart  int
	IsResolved bool
	IsOutdated bool
	Comments   []Comment
}

// Comment is one comment in a review thread.
type Comment struct {
	ID         string
	DatabaseID int64
	Author     string
	Body       string
	Path       string
	URL        string
	CreatedAt  time.Time
	// ReviewID is the node id of the review the comment was submitted
	// with ("" when unknown), so a review's threads can be counted (PR-O2).
	ReviewID string
	// OriginalCommit is the commit the comment was written against: a
	// suggestion may only replace the lines it saw there (issue 6, case 8).
	OriginalCommit string
	// DiffHunk is the part of the PR's diff the comment was written on
	// (GitHub's diff_hunk): a hunk header, then the diff's lines from the
	// hunk's start up to and including the commented line, at
	// OriginalCommit. A backend bounds it with ClipDiffHunk; "" when the
	// forge gave none. The classifier compares a ```suggestion with its
	// last lines (PR-S5).
	DiffHunk string
}

// ForcePush is one force-push of the PR's head ref (GitHub's
// HeadRefForcePushedEvent).
type ForcePush struct {
	Actor  string
	Before string // the head before ("" when the forge no longer has it)
	After  string // the head it was forced to
	At     time.Time
}

// LastForcePush is when the head ref was last force-pushed (zero when
// never, as far as the observation shows).
func (pr *PullRequest) LastForcePush() time.Time {
	var t time.Time
	for _, fp := range pr.ForcePushes {
		if fp.At.After(t) {
			t = fp.At
		}
	}
	return t
}

// CheckRollup summarises CI on one commit.
type CheckRollup struct {
	State    CIState // "" when none
	Contexts []CheckContext
}

// CheckContext is one check run or one commit status.
type CheckContext struct {
	Name       string
	IsStatus   bool            // a commit status, not a check run
	Status     CheckStatus     // check runs only
	Conclusion CheckConclusion // check runs: when completed; statuses: their state
	// What a failing check says about itself (PR-V5): a check run's
	// output (title, summary, text) and first annotations, a status's
	// description; URL is the details or target URL. Empty when the
	// forge gave none.
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	Description string
	URL         string
}

// Annotation is one line-level note of a check run (PR-V5).
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string // NOTICE, WARNING, FAILURE
	Title     string
	Message   string
}

// Commit is one commit on the PR's branch.
type Commit struct {
	SHA         string
	Message     string
	Parents     []string
	CommittedAt time.Time
}

// Event is one issue event (REST issues/{n}/events).
type Event struct {
	ID        int64
	Event     string // e.g. copilot_work_started, labeled
	Actor     string
	Label     string // the label of a labeled or unlabeled event
	CreatedAt time.Time
}

// IssueComment is a top-level PR conversation comment.
type IssueComment struct {
	ID        int64
	NodeID    string
	Author    string
	Body      string
	CreatedAt time.Time
}

// CommitStatusState is the state of a commit status to post
// (CommitStatus.State).
type CommitStatusState string

// Commit status states (GitHub's REST spelling, lower case); a forge
// refuses any other as invalid. Read back, a status's state is its
// CheckContext.Conclusion, in upper case.
const (
	StatusPending CommitStatusState = "pending"
	StatusSuccess CommitStatusState = "success"
	StatusFailure CommitStatusState = "failure"
	StatusError   CommitStatusState = "error"
)

// CommitStatus is a commit status to post (the `converge` verdict with a
// user token, PR-T10).
type CommitStatus struct {
	State       CommitStatusState
	Context     string
	Description string
	TargetURL   string
}

// CheckRun is a check run to create or update (needs an App token).
type CheckRun struct {
	Name       string
	HeadSHA    string
	Status     string // queued, in_progress, completed
	Conclusion string // success, failure, neutral, ... when completed
	Title      string
	Summary    string
	Text       string
}

// Forge is what the loops need from a code host. Every write is safe to
// repeat only where the caller keys it; the backend never retries a write
// that may have landed.
//
// Capabilities some forges lack are not here but in small optional
// interfaces (CheckRunner, IssueEventer, BaseComparer) that a caller
// detects with a type assertion. Unresolving a thread and listing issue comments stay in the
// core: GitHub and GitLab (discussions, notes) both have them.
type Forge interface {
	// Observe reads the whole PR in as few requests as the forge allows.
	Observe(ctx context.Context, ref PRRef) (*PullRequest, error)
	// RequestReviews requests reviews by login on pr, an observation by
	// this forge (a backend may address the PR by pr.Ref or by pr.ID),
	// keeping pending requests (union). Bots and users are named
	// separately because GitHub does.
	RequestReviews(ctx context.Context, pr *PullRequest, userLogins, botLogins []string) error
	// ReplyToThread adds a reply to a review thread of the PR and
	// returns it.
	ReplyToThread(ctx context.Context, ref PRRef, threadID, body string) (Comment, error)
	ResolveThread(ctx context.Context, ref PRRef, threadID string) error
	UnresolveThread(ctx context.Context, ref PRRef, threadID string) error
	AddLabels(ctx context.Context, ref PRRef, labels ...string) error
	RemoveLabel(ctx context.Context, ref PRRef, label string) error
	CreateIssueComment(ctx context.Context, ref PRRef, body string) (IssueComment, error)
	ListIssueComments(ctx context.Context, ref PRRef) ([]IssueComment, error)
	SetCommitStatus(ctx context.Context, ref PRRef, sha string, st CommitStatus) error
	// Viewer returns the login the client acts as: converge's identity.
	Viewer(ctx context.Context) (string, error)
	// Permission returns the login's permission on the repository.
	Permission(ctx context.Context, ref PRRef, login string) (Permission, error)
}

// CheckRunner is a forge that can create check runs (GitHub, with an App
// token). Detect it with a type assertion on a Forge.
type CheckRunner interface {
	CreateCheckRun(ctx context.Context, ref PRRef, cr CheckRun) (int64, error)
}

// BaseComparer is a forge that tells how far a PR's head is behind its
// base whatever the merge state says: GitHub says BEHIND only under a
// branch protection rule that requires branches to be up to date, so a
// loop that brings branches up to date (PR-S14) asks. Detect it with a
// type assertion on a Forge.
type BaseComparer interface {
	// CommitsBehind counts the commits reachable from base that head
	// lacks (both commit SHAs of the PR's repository).
	CommitsBehind(ctx context.Context, ref PRRef, base, head string) (int, error)
}

// IssueEventer is a forge that lists a PR's issue events, which is how a
// requested bot review is seen to start (PR-O1). Without it a loop does
// no event-based start detection.
type IssueEventer interface {
	// IssueEvents lists the PR's issue events, oldest first.
	IssueEvents(ctx context.Context, ref PRRef) ([]Event, error)
}

// ThreadReply is one reply of a batch (ThreadBatcher).
type ThreadReply struct {
	ThreadID string
	Body     string
}

// ThreadReplyResult is one reply's outcome: the comment posted, or why
// not. An Err may also mean "unknown" (the request failed in flight): only
// a returned comment proves the reply exists.
type ThreadReplyResult struct {
	Comment Comment
	Err     error
}

// ThreadBatcher is a forge that posts many thread replies, or resolves
// many threads, in few requests (GitHub: aliased mutations, a bounded
// number per request), answering per item in order. It orders nothing
// itself: the caller resolves a thread only after its reply is proven
// (PR-S12). Detect it with a type assertion on a Forge.
type ThreadBatcher interface {
	ReplyToThreads(ctx context.Context, ref PRRef, replies []ThreadReply) []ThreadReplyResult
	ResolveThreads(ctx context.Context, ref PRRef, threadIDs []string) []error
}

type probeKey struct{}

// WithProbe lets Observe answer from a conditional change probe: when it
// proves nothing changed, the backend's last whole read comes back marked
// PullRequest.Unchanged. Without it Observe always reads whole.
func WithProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, probeKey{}, true)
}

// ProbeAllowed reports whether ctx lets Observe answer from a probe.
func ProbeAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(probeKey{}).(bool)
	return v
}

// Verdict is converge's verdict on a head (PR-T10) as a forge that
// publishes it its own way (VerdictPublisher) gets it.
type Verdict struct {
	Name string // the check's name, "converge"
	SHA  string
	// State is the verdict as a commit status: pending while a loop runs
	// on the head, else success, failure or error.
	State CommitStatusState
	// Conclusion is the verdict as a finished check run (success,
	// failure, action_required); "" while pending.
	Conclusion string
	Title      string // one line: the terminal and its reason
	Summary    string // markdown: the proof and the rounds
	DetailsURL string // where a human looks (the PR)
}

// VerdictPublisher is a forge that publishes a verdict as more than a
// commit status: GitHub with an App token, as a check run branch
// protection can require (PR-T10). Publishing is idempotent: the head's
// own verdict is updated, never doubled. Detect it with a type assertion
// on a Forge; without it a loop posts a commit status.
type VerdictPublisher interface {
	PublishVerdict(ctx context.Context, ref PRRef, v Verdict) error
}
