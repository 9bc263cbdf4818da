package fakehub

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// repo is one repository; everything in it is guarded by Hub.mu.
type repo struct {
	owner, name   string
	id            int64
	dir           string // bare repository
	defaultBranch string
	testCommand   []string
	createdAt     time.Time

	prs        []*pr // by number order
	nextNumber int
	statuses   []*commitStatus
	checkRuns  []*checkRun
	labels     map[string]*label // known labels by lower-case name
	// copilotScript applies to PRs without their own script.
	copilotScript *CopilotScript
	// noCopilot: Copilot code review is not enabled here, so requests for
	// the bot are refused.
	noCopilot bool
	// requireUpToDate: see RepoOptions.RequireUpToDate.
	requireUpToDate bool
	// ci cancels the running CI job per PR number.
	ci map[int]context.CancelFunc

	// Repository-wide facts GitHub serves inside every PR answer (base.repo
	// and head.repo), so they move the PR's ETag (fidelity.go).
	pushedAt  time.Time // the last push to any branch
	updatedAt time.Time // the repository record's last change (a star)
	sizeKB    int       // the git objects' size, KB
	stars     int
	issues    []*issue          // plain issues; numbers shared with PRs
	lastRefs  map[string]string // branch tips as refsChanged last saw them
	// requiredApprovals is branch protection's review rule (RepoOptions):
	// only under it does a PR get a reviewDecision.
	requiredApprovals int
}

func (r *repo) fullName() string { return r.owner + "/" + r.name }
func (r *repo) nodeID() string   { return fmt.Sprintf("R_fh%d", r.id) }

type label struct {
	id    int64
	name  string
	color string
}

type pr struct {
	repo      *repo
	number    int
	id        int64
	title     string
	body      string
	author    *user
	state     string // OPEN, CLOSED, MERGED
	draft     bool
	headRef   string
	baseRef   string
	headSHA   string
	baseSHA   string // base tip as last read
	createdAt time.Time
	updatedAt time.Time
	closedAt  time.Time
	mergedAt  time.Time
	mergedBy  *user
	mergeSHA  string

	labels        []*label
	requested     []*user
	reviews       []*review
	threads       []*thread
	events        []*issueEvent
	issueComments []*issueComment
	heads         []string // every head the PR has had, oldest first

	copilotScript *CopilotScript
	copilotRound  int
	copilotBusy   bool

	// reads counts GraphQL requests that touched the PR: the lag fault's
	// clock. Atomic because queries advance it under the read lock.
	reads atomic.Int64

	// lazy is the background mergeability computation (fidelity.go),
	// guarded by Hub.lazyMu as reads advance it under the read lock.
	lazy lazyMerge
}

func (p *pr) nodeID() string { return fmt.Sprintf("PR_fh%d", p.id) }

type review struct {
	pr          *pr
	id          int64
	author      *user
	state       string // COMMENTED, APPROVED, CHANGES_REQUESTED
	body        string
	commitSHA   string
	submittedAt time.Time
	comments    int // inline comments submitted with the review

	// Lag fault: up to read lagUntil of the PR the review's threads are
	// absent, and its comment count reads 0 unless countCurrent.
	lagUntil     int64
	countCurrent bool
}

// lagging reports whether the review's comments are still invisible at the
// PR's read number read.
// A review never lagged has lagUntil 0, and a REST read before the PR's
// first GraphQL read is read 0: it is not lagging.
func (r *review) lagging(read int64) bool { return r.lagUntil > 0 && read <= r.lagUntil }

func (r *review) nodeID() string { return fmt.Sprintf("PRR_fh%d", r.id) }

// thread is anchored on a line range of the commit it was made on; its
// current position is derived from the diff to the PR's head.
type thread struct {
	pr        *pr
	id        int64
	path      string
	line      int // original line (on commitSHA)
	startLine int // 0 for a single line
	side      string
	commitSHA string
	// diffHunk is GitHub's diff_hunk of the thread's comments, fixed when
	// the thread opened (see commentHunk).
	diffHunk   string
	resolved   bool
	resolvedBy *user
	comments   []*reviewComment
	review     *review // the review that opened the thread
}

func (t *thread) nodeID() string { return fmt.Sprintf("PRRT_fh%d", t.id) }

type reviewComment struct {
	thread    *thread
	id        int64
	reviewID  int64
	author    *user
	body      string
	createdAt time.Time
	replyTo   int64
	commitSHA string // head when written
}

func (c *reviewComment) nodeID() string { return fmt.Sprintf("PRRC_fh%d", c.id) }

type issueEvent struct {
	id        int64
	event     string
	actor     *user
	createdAt time.Time
	// extra fields some events carry
	label             string
	requestedReviewer *user
	commitID          string
	// before is the head a head_ref_force_pushed event replaced.
	before string
}

type issueComment struct {
	id        int64
	author    *user
	body      string
	createdAt time.Time
	updatedAt time.Time
}

func (c *issueComment) nodeID() string { return fmt.Sprintf("IC_fh%d", c.id) }

type commitStatus struct {
	id          int64
	sha         string
	state       string // pending, success, failure, error
	context     string
	description string
	targetURL   string
	creator     *user
	createdAt   time.Time
	updatedAt   time.Time
}

type checkRun struct {
	id          int64
	sha         string
	name        string
	status      string // queued, in_progress, completed
	conclusion  string
	title       string
	summary     string
	text        string
	detailsURL  string
	annotations []*checkAnnotation
	app         *user
	startedAt   time.Time
	completedAt time.Time
}

func (c *checkRun) nodeID() string { return fmt.Sprintf("CR_fh%d", c.id) }

func (h *Hub) repoLocked(owner, name string) *repo {
	return h.repos[owner+"/"+name]
}

func (r *repo) pr(number int) *pr {
	for _, p := range r.prs {
		if p.number == number {
			return p
		}
	}
	return nil
}

// addEventLocked records an issue event on a PR.
func (h *Hub) addEventLocked(p *pr, ev *issueEvent) {
	ev.id = h.newIDLocked()
	if ev.createdAt.IsZero() {
		ev.createdAt = h.now()
	}
	p.events = append(p.events, ev)
}

// latestStatuses returns the newest status per context for sha.
func (r *repo) latestStatuses(sha string) []*commitStatus {
	return latestPer(r.statuses, func(s *commitStatus) (bool, string) { return s.sha == sha, s.context })
}

// latestCheckRuns returns the newest check run per name for sha, as the
// rollup shows them.
func (r *repo) latestCheckRuns(sha string) []*checkRun {
	return latestPer(r.checkRuns, func(c *checkRun) (bool, string) { return c.sha == sha, c.name })
}

// latestPer keeps, of the items that match, the newest one per key, in
// the order each key first appeared (items are oldest first).
func latestPer[T any](items []T, match func(T) (bool, string)) []T {
	var out []T
	seen := map[string]int{}
	for _, it := range items {
		ok, key := match(it)
		if !ok {
			continue
		}
		if i, dup := seen[key]; dup {
			out[i] = it
			continue
		}
		seen[key] = len(out)
		out = append(out, it)
	}
	return out
}

// rollupState combines check runs and statuses as GitHub's
// statusCheckRollup.state does; "" when there is nothing.
func (r *repo) rollupState(sha string) string {
	runs, sts := r.latestCheckRuns(sha), r.latestStatuses(sha)
	if len(runs)+len(sts) == 0 {
		return ""
	}
	failure, pending := false, false
	for _, c := range runs {
		if c.status != "completed" {
			pending = true
			continue
		}
		switch c.conclusion {
		case "success", "neutral", "skipped":
		default:
			failure = true
		}
	}
	for _, s := range sts {
		switch s.state {
		case "pending":
			pending = true
		case "failure", "error":
			failure = true
		}
	}
	switch {
	case failure:
		return "FAILURE"
	case pending:
		return "PENDING"
	}
	return "SUCCESS"
}
