package fakehub

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fidelity (REL-4): behaviour of GitHub's that changes what a client pays
// or must wait for.
//
//   - A PR's REST answer carries its repository twice (base.repo and
//     head.repo) with the repository-wide facts GitHub keeps there:
//     pushed_at (a push to any branch), updated_at, size, the open issue
//     count (issues and PRs), stars, watchers and forks. So the answer's
//     ETag moves when anything in the repository moves, not only the PR.
//   - Mergeability is computed lazily, by a background job GitHub starts
//     after a push or a PR's creation: until it has run, a read says
//     mergeable null and mergeable_state "unknown" (REST), mergeable and
//     mergeStateStatus UNKNOWN (GraphQL). The job has run once the hub's
//     clock is MergeabilityDelay past the change, or when a request after
//     the first one that found the PR unknown reads it.
//   - Copilot's pace, as a profile: on github.com it starts a requested
//     review about half a minute later and posts it about two minutes
//     after that.

// Copilot profiles (Options.CopilotProfile).
const (
	CopilotProfileFast = "fast"
	CopilotProfileReal = "real"
)

// The real profile's pace, by the hub's clock.
const (
	RealCopilotStartDelay  = 30 * time.Second
	RealCopilotReviewDelay = 2 * time.Minute
)

// DefaultMergeabilityDelay is how long GitHub's mergeability job takes
// after a change, by the hub's clock, unless a later read computes it
// first.
const DefaultMergeabilityDelay = 2 * time.Second

// clockNow is the hub's clock to the nanosecond (now truncates it to
// GitHub's seconds).
func (h *Hub) clockNow() time.Time {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	if !h.clock.frozen.IsZero() {
		return h.clock.frozen
	}
	return time.Now().Add(h.clock.shift)
}

// clockMoved is a channel closed the next time AdvanceClock moves the
// clock.
func (h *Hub) clockMoved() <-chan struct{} {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	if h.clock.moved == nil {
		h.clock.moved = make(chan struct{})
	}
	return h.clock.moved
}

// sleepUntil waits until the hub's clock reaches deadline, or until the
// real time it was short of it has passed, whichever comes first: a
// test's AdvanceClock hurries it, and a frozen clock still lets
// background work finish. It reports false when ctx ended first.
func (h *Hub) sleepUntil(ctx context.Context, deadline time.Time) bool {
	d := deadline.Sub(h.clockNow())
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		moved := h.clockMoved()
		if !h.clockNow().Before(deadline) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-moved:
		}
	}
}

// issue is a plain issue: it counts in open_issues_count and takes a
// number from the sequence PRs share.
type issue struct {
	number    int
	id        int64
	title     string
	author    *user
	open      bool
	createdAt time.Time
}

// CreateIssue opens a plain issue as octo-author (an issue, not a PR: it
// moves the repository's open issue count, as every PR answer shows).
func (h *Hub) CreateIssue(owner, repoName, title string) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return 0, fmt.Errorf("create issue: no repo %s/%s", owner, repoName)
	}
	is := &issue{number: rp.nextNumber, id: h.newIDLocked(), title: title, author: h.userByLogin(LoginAuthor), open: true, createdAt: h.now()}
	rp.nextNumber++
	rp.issues = append(rp.issues, is)
	return is.number, nil
}

// CloseIssue closes a plain issue.
func (h *Hub) CloseIssue(owner, repoName string, number int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return fmt.Errorf("close issue: no repo %s/%s", owner, repoName)
	}
	for _, is := range rp.issues {
		if is.number == number {
			is.open = false
			return nil
		}
	}
	return fmt.Errorf("close issue: no issue %s#%d", rp.fullName(), number)
}

// Star stars the repository (by someone): stargazers_count and
// watchers_count go up, and the repository's updated_at moves.
func (h *Hub) Star(owner, repoName string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return fmt.Errorf("star: no repo %s/%s", owner, repoName)
	}
	rp.stars++
	rp.updatedAt = h.now()
	return nil
}

// openIssuesLocked is GitHub's open_issues_count: open issues and open
// PRs.
func (rp *repo) openIssuesLocked() int {
	n := 0
	for _, is := range rp.issues {
		if is.open {
			n++
		}
	}
	for _, p := range rp.prs {
		if p.state == "OPEN" {
			n++
		}
	}
	return n
}

// pushed records a push to the repository: pushed_at and its size.
func (h *Hub) pushed(ctx context.Context, rp *repo) {
	size := repoSizeKB(ctx, rp.dir)
	h.mu.Lock()
	defer h.mu.Unlock()
	rp.pushedAt = h.now()
	if size >= 0 {
		rp.sizeKB = size
	}
}

// refsMoved records refs as the repository's branch tips and reports
// whether any moved (or was made or deleted) since it last saw them.
func (h *Hub) refsMoved(rp *repo, refs map[string]string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	moved := len(refs) != len(rp.lastRefs)
	for k, v := range refs {
		if rp.lastRefs[k] != v {
			moved = true
		}
	}
	rp.lastRefs = refs
	return moved
}

// repoSizeKB is the repository's size as GitHub counts it, in KB: its
// git objects, loose and packed; -1 when git cannot tell.
func repoSizeKB(ctx context.Context, dir string) int {
	out, err := runGit(ctx, dir, nil, nil, "count-objects", "-v")
	if err != nil {
		return -1
	}
	kb := 0
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if ok && (k == "size" || k == "size-pack") {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			kb += n
		}
	}
	return kb
}

// repoURLs are the URL templates every repository object of GitHub's
// carries.
func (h *Hub) repoURLs(rp *repo) map[string]any {
	api := h.APIURL() + "/repos/" + rp.fullName()
	m := map[string]any{"url": api, "html_url": h.BaseURL() + "/" + rp.fullName()}
	for k, v := range map[string]string{
		"forks": "/forks", "keys": "/keys{/key_id}", "collaborators": "/collaborators{/collaborator}", "teams": "/teams",
		"hooks": "/hooks", "issue_events": "/issues/events{/number}", "events": "/events", "assignees": "/assignees{/user}",
		"branches": "/branches{/branch}", "tags": "/tags", "blobs": "/git/blobs{/sha}", "git_tags": "/git/tags{/sha}",
		"git_refs": "/git/refs{/sha}", "trees": "/git/trees{/sha}", "statuses": "/statuses/{sha}", "languages": "/languages",
		"stargazers": "/stargazers", "contributors": "/contributors", "subscribers": "/subscribers", "subscription": "/subscription",
		"commits": "/commits{/sha}", "git_commits": "/git/commits{/sha}", "comments": "/comments{/number}",
		"issue_comment": "/issues/comments{/number}", "contents": "/contents/{+path}", "compare": "/compare/{base}...{head}",
		"merges": "/merges", "archive": "/{archive_format}{/ref}", "downloads": "/downloads", "issues": "/issues{/number}",
		"pulls": "/pulls{/number}", "milestones": "/milestones{/number}", "notifications": "/notifications{?since,all,participating}",
		"labels": "/labels{/name}", "releases": "/releases{/id}", "deployments": "/deployments",
	} {
		m[k+"_url"] = api + v
	}
	return m
}

// repoCountsLocked adds to j what GitHub's full repository object says of
// the whole repository (GET /repos/{o}/{r}, and every PR's base.repo and
// head.repo): what moves when anything in it moves.
func (h *Hub) repoCountsLocked(rp *repo, j map[string]any) {
	updated := rp.updatedAt
	if updated.IsZero() {
		updated = rp.createdAt
	}
	pushed := rp.pushedAt
	if pushed.IsZero() {
		pushed = rp.createdAt
	}
	open := rp.openIssuesLocked()
	for k, v := range map[string]any{
		"description": nil, "homepage": nil, "language": nil, "mirror_url": nil, "license": nil,
		"git_url": "git://" + h.Host() + "/" + rp.fullName() + ".git", "ssh_url": "git@" + h.Host() + ":" + rp.fullName() + ".git",
		"svn_url":    h.BaseURL() + "/" + rp.fullName(),
		"updated_at": ts(updated), "pushed_at": ts(pushed), "size": rp.sizeKB,
		"stargazers_count": rp.stars, "watchers_count": rp.stars, "watchers": rp.stars,
		"forks_count": 0, "forks": 0, "open_issues_count": open, "open_issues": open,
		"has_issues": true, "has_projects": true, "has_downloads": true, "has_wiki": true, "has_pages": false,
		"has_discussions": false, "archived": false, "disabled": false, "allow_forking": true, "is_template": false,
		"web_commit_signoff_required": false, "topics": []any{},
	} {
		j[k] = v
	}
}

// lazyMerge is one PR's background mergeability job (see above).
type lazyMerge struct {
	key       string    // base..head the job is for
	changedAt time.Time // when the PR's base or head last moved
	known     bool      // the job has run for key
	asker     any       // the request that first found key unknown
}

// mergeChangedLocked notes that p's base or head moved (h.mu held): the
// job starts again.
func (h *Hub) mergeChangedLocked(p *pr) {
	h.lazyMu.Lock()
	defer h.lazyMu.Unlock()
	p.lazy.changedAt = h.clockNow()
	p.lazy.known = false
	p.lazy.asker = nil
}

// requestOf names the request ctx belongs to: one GraphQL request or one
// REST request; nil when neither.
func requestOf(ctx context.Context) any {
	if ex := execOf(ctx); ex != nil {
		return ex
	}
	if c, ok := ctx.Value(restKey).(*restCtx); ok {
		return c
	}
	return nil
}

// mergeComputed reports whether p's mergeability for in is computed yet,
// advancing the job as GitHub's background job advances: a read of an
// unknown PR starts it, and a later request finds it done.
func (h *Hub) mergeComputed(ctx context.Context, p *pr, in mergeInput) bool {
	if h.opts.MergeabilityDelay < 0 || in.state != "OPEN" {
		return true
	}
	key := in.base + ".." + in.head
	req := requestOf(ctx)
	if req == nil {
		req = new(int) // a request of its own
	}
	now := h.clockNow()
	h.lazyMu.Lock()
	defer h.lazyMu.Unlock()
	l := &p.lazy
	if l.key != key {
		l.key, l.known, l.asker = key, false, nil
		if l.changedAt.IsZero() {
			l.changedAt = now
		}
	}
	switch {
	case l.known:
	case !now.Before(l.changedAt.Add(h.opts.MergeabilityDelay)):
		l.known = true
	case l.asker == nil || l.asker == req:
		l.asker = req
		return false
	default:
		l.known = true
	}
	return true
}

// testMergeCommit is the commit GitHub's mergeability job writes for an
// open PR that merges cleanly (REST's merge_commit_sha): its merge tree
// with the base and the head as parents, the same for the same pair.
func (h *Hub) testMergeCommit(ctx context.Context, dir, base, head, tree string) string {
	sha, err := memo(&h.git, &h.git.testMerges, dir+"\x00"+base+"\x00"+head, func() (string, error) {
		date := "1970-01-01T00:00:00Z"
		if ci, err := commitOne(ctx, dir, head); err == nil {
			date = ci.committed.UTC().Format(time.RFC3339)
		}
		env := append([]string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, gitIdentity...)
		out, err := runGit(ctx, dir, env, nil, "commit-tree", tree, "-p", base, "-p", head, "-m", "Merge "+head+" into "+base)
		return strings.TrimSpace(out), err
	})
	if err != nil {
		return ""
	}
	return sha
}

// reviewDecision is GitHub's reviewDecision: only under a branch
// protection rule requiring approving reviews does a PR get one. Each
// reviewer's latest approval or change request counts (a comment changes
// neither, a dismissal withdraws it): any change request wins, then
// enough approvals; REVIEW_REQUIRED otherwise. Null without the rule.
func reviewDecision(p *pr) *string {
	need := p.repo.requiredApprovals
	if need <= 0 {
		return nil
	}
	approvals, changes := latestReviews(p)
	d := "REVIEW_REQUIRED"
	switch {
	case changes:
		d = "CHANGES_REQUESTED"
	case approvals >= need:
		d = "APPROVED"
	}
	return &d
}

// latestReviews counts the reviewers whose latest approval or change
// request stands (a comment changes neither, a dismissal withdraws it):
// the approvals, and whether any asks for changes.
func latestReviews(p *pr) (approvals int, changes bool) {
	last := map[*user]string{}
	for _, rv := range p.reviews {
		switch rv.state {
		case "APPROVED", "CHANGES_REQUESTED":
			last[rv.author] = rv.state
		case "DISMISSED":
			delete(last, rv.author)
		}
	}
	for _, st := range last {
		if st == "CHANGES_REQUESTED" {
			changes = true
		} else {
			approvals++
		}
	}
	return approvals, changes
}
