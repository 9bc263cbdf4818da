package fakehub

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"time"
)

// RepoOptions shape a seeded repository.
type RepoOptions struct {
	// TestCommand is run by the CI runner on every new PR head; no CI when
	// empty.
	TestCommand []string
	// DefaultBranch defaults to main.
	DefaultBranch string
	// NoCopilot: Copilot code review is not enabled on the repository;
	// requesting the bot is refused as GitHub refuses an unknown bot.
	NoCopilot bool
	// RequireUpToDate is branch protection's "require branches to be up
	// to date before merging" on every branch: only with it does a PR
	// that lacks commits of its base show mergeStateStatus BEHIND; without
	// it GitHub shows CLEAN (or whatever else holds).
	RequireUpToDate bool
	// RequiredApprovals is branch protection's review rule: a PR needs
	// that many approving reviews. Only under it does GitHub give a PR a
	// reviewDecision (REVIEW_REQUIRED until approved, APPROVED,
	// CHANGES_REQUESTED) and mergeStateStatus BLOCKED while not approved;
	// without it reviewDecision is null.
	RequiredApprovals int
}

// NewPR describes a pull request to seed.
type NewPR struct {
	Head   string // branch; created from Base when missing
	Base   string // default: the repository's default branch
	Title  string
	Body   string
	Author string // login; default octo-author
	Draft  bool
	// Files are committed on the head branch before the PR opens.
	Files   map[string]string
	Message string // commit message for Files
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// SetRequireUpToDate turns branch protection's "require branches to be
// up to date before merging" on or off for a repository's branches (see
// RepoOptions.RequireUpToDate).
func (h *Hub) SetRequireUpToDate(owner, repoName string, on bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return fmt.Errorf("set require up to date: no repo %s/%s", owner, repoName)
	}
	rp.requireUpToDate = on
	return nil
}

// CreateRepo makes a bare repository with files committed on the default
// branch.
func (h *Hub) CreateRepo(owner, name string, files map[string]string, opts RepoOptions) error {
	if !nameRE.MatchString(owner) || !nameRE.MatchString(name) {
		return fmt.Errorf("create repo: bad name %s/%s", owner, name)
	}
	if opts.DefaultBranch == "" {
		opts.DefaultBranch = "main"
	}
	ctx := h.Context()
	dir := filepath.Join(h.opts.StateDir, "repos", owner, name+".git")
	h.mu.Lock()
	if h.repoLocked(owner, name) != nil {
		h.mu.Unlock()
		return fmt.Errorf("create repo %s/%s: already exists", owner, name)
	}
	rp := &repo{owner: owner, name: name, id: h.newIDLocked(), dir: dir, defaultBranch: opts.DefaultBranch,
		testCommand: opts.TestCommand, createdAt: h.now(), nextNumber: 1, labels: map[string]*label{}, ci: map[int]context.CancelFunc{}, noCopilot: opts.NoCopilot, requireUpToDate: opts.RequireUpToDate,
		requiredApprovals: opts.RequiredApprovals}
	h.repos[owner+"/"+name] = rp
	h.nodes[rp.nodeID()] = rp
	h.mu.Unlock()
	if err := initBare(ctx, dir, opts.DefaultBranch); err != nil {
		return fmt.Errorf("create repo: %w", err)
	}
	if len(files) == 0 {
		files = map[string]string{"README.md": "# " + name + "\n"}
	}
	sha, err := commitFiles(ctx, dir, "", files, "Initial commit", h.now())
	if err != nil {
		return fmt.Errorf("create repo: %w", err)
	}
	if _, err := runGit(ctx, dir, nil, nil, "update-ref", "refs/heads/"+opts.DefaultBranch, sha); err != nil {
		return fmt.Errorf("create repo: %w", err)
	}
	h.pushed(ctx, rp)
	return nil
}

// SetRequiredApprovals sets branch protection's review rule on a
// repository (see RepoOptions.RequiredApprovals); 0 removes it.
func (h *Hub) SetRequiredApprovals(owner, repoName string, n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return fmt.Errorf("set required approvals: no repo %s/%s", owner, repoName)
	}
	rp.requiredApprovals = max(n, 0)
	return nil
}

// PushFiles commits files on branch (created from the default branch when
// missing) as a push by octo-author would, moving any PR on that branch.
func (h *Hub) PushFiles(owner, repoName, branch string, files map[string]string, message string) (string, error) {
	return h.pushFilesAs(owner, repoName, branch, files, message, h.userByLogin(LoginAuthor))
}

func (h *Hub) pushFilesAs(owner, repoName, branch string, files map[string]string, message string, by *user) (string, error) {
	ctx := h.Context()
	h.mu.Lock()
	rp := h.repoLocked(owner, repoName)
	h.mu.Unlock()
	if rp == nil {
		return "", fmt.Errorf("push: no repo %s/%s", owner, repoName)
	}
	sha, err := h.commitOnBranch(ctx, rp, branch, files, message)
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	refs, err := readRefs(ctx, rp.dir)
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	h.refsChanged(ctx, rp, refs, by)
	return sha, nil
}

func (h *Hub) commitOnBranch(ctx context.Context, rp *repo, branch string, files map[string]string, message string) (string, error) {
	if message == "" {
		message = "Update files"
	}
	parent, err := revParse(ctx, rp.dir, "refs/heads/"+branch)
	if err != nil || parent == "" {
		parent, err = revParse(ctx, rp.dir, "refs/heads/"+rp.defaultBranch)
		if err != nil {
			return "", err
		}
	}
	sha, err := commitFiles(ctx, rp.dir, parent, files, message, h.now())
	if err != nil {
		return "", err
	}
	if _, err := runGit(ctx, rp.dir, nil, nil, "update-ref", "refs/heads/"+branch, sha); err != nil {
		return "", err
	}
	h.pushed(ctx, rp)
	return sha, nil
}

// CreatePR opens a pull request, committing pr.Files on its head branch
// first, and starts CI on its head.
func (h *Hub) CreatePR(owner, repoName string, np NewPR) (int, error) {
	ctx := h.Context()
	h.mu.Lock()
	rp := h.repoLocked(owner, repoName)
	h.mu.Unlock()
	if rp == nil {
		return 0, fmt.Errorf("create pr: no repo %s/%s", owner, repoName)
	}
	if np.Base == "" {
		np.Base = rp.defaultBranch
	}
	if np.Author == "" {
		np.Author = LoginAuthor
	}
	author := h.userByLogin(np.Author)
	if author == nil {
		return 0, fmt.Errorf("create pr: unknown author %q", np.Author)
	}
	if np.Head == "" || np.Head == np.Base {
		return 0, fmt.Errorf("create pr: head branch must differ from base")
	}
	if len(np.Files) > 0 {
		msg := np.Message
		if msg == "" {
			msg = np.Title
		}
		if _, err := h.commitOnBranch(ctx, rp, np.Head, np.Files, msg); err != nil {
			return 0, fmt.Errorf("create pr: %w", err)
		}
	}
	head, err := revParse(ctx, rp.dir, "refs/heads/"+np.Head)
	if err != nil {
		return 0, fmt.Errorf("create pr: no head branch %s", np.Head)
	}
	base, err := revParse(ctx, rp.dir, "refs/heads/"+np.Base)
	if err != nil {
		return 0, fmt.Errorf("create pr: no base branch %s", np.Base)
	}
	h.mu.Lock()
	for _, p := range rp.prs {
		if p.state == "OPEN" && p.headRef == np.Head && p.baseRef == np.Base {
			h.mu.Unlock()
			return 0, fmt.Errorf("create pr: a pull request already exists for %s:%s", owner, np.Head)
		}
	}
	now := h.now()
	p := &pr{repo: rp, number: rp.nextNumber, id: h.newIDLocked(), title: np.Title, body: np.Body, author: author,
		state: "OPEN", draft: np.Draft, headRef: np.Head, baseRef: np.Base, headSHA: head, baseSHA: base,
		createdAt: now, updatedAt: now, heads: []string{head}}
	rp.nextNumber++
	rp.prs = append(rp.prs, p)
	h.nodes[p.nodeID()] = p
	h.mergeChangedLocked(p)
	h.publishLocked(Event{Kind: "pr_opened", Owner: owner, Repo: repoName, Number: p.number, SHA: head, Actor: author.restLogin})
	h.mu.Unlock()
	h.startCI(rp, p)
	return p.number, nil
}

// PRState is a snapshot of a PR for tests. It is the stored truth, read
// in one piece and untouched by the lag fault, so a test can check what a
// run claimed against what the forge holds.
type PRState struct {
	Number        int
	State         string
	HeadRef       string
	HeadSHA       string
	BaseRef       string
	BaseSHA       string
	Labels        []string
	Requested     []string // GraphQL logins
	Reviews       int
	Threads       int
	CopilotRounds int // script rounds consumed
	// Rollup is the head's combined CI state (SUCCESS, FAILURE, PENDING,
	// or "" when nothing reported).
	Rollup        string
	ReviewList    []ReviewState // oldest first
	ThreadList    []ThreadState // oldest first
	IssueComments int
}

// ReviewState is one stored review.
type ReviewState struct {
	ID          string // node id
	DatabaseID  int64
	Author      string // GraphQL login
	State       string // COMMENTED, APPROVED, CHANGES_REQUESTED, DISMISSED
	CommitSHA   string
	Body        string
	SubmittedAt time.Time
	Comments    int // inline comments submitted with it
}

// ThreadState is one stored review thread.
type ThreadState struct {
	ID       string
	Path     string
	ReviewID string // node id of the review that opened it
	Resolved bool
	Authors  []string // GraphQL logins of its comments, oldest first
	Bodies   []string
}

// PR returns a snapshot of a pull request.
func (h *Hub) PR(owner, repoName string, number int) (PRState, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return PRState{}, fmt.Errorf("no repo %s/%s", owner, repoName)
	}
	p := rp.pr(number)
	if p == nil {
		return PRState{}, fmt.Errorf("no pull request %s#%d", rp.fullName(), number)
	}
	st := PRState{Number: p.number, State: p.state, HeadRef: p.headRef, HeadSHA: p.headSHA, BaseRef: p.baseRef,
		BaseSHA: p.baseSHA, Reviews: len(p.reviews), Threads: len(p.threads), CopilotRounds: p.copilotRound,
		Rollup: rp.rollupState(p.headSHA), IssueComments: len(p.issueComments)}
	for _, l := range p.labels {
		st.Labels = append(st.Labels, l.name)
	}
	for _, u := range p.requested {
		st.Requested = append(st.Requested, u.login)
	}
	for _, rv := range p.reviews {
		st.ReviewList = append(st.ReviewList, ReviewState{ID: rv.nodeID(), DatabaseID: rv.id, Author: rv.author.login, State: rv.state,
			CommitSHA: rv.commitSHA, Body: rv.body, SubmittedAt: rv.submittedAt, Comments: rv.comments})
	}
	for _, t := range p.threads {
		ts := ThreadState{ID: t.nodeID(), Path: t.path, Resolved: t.resolved}
		if t.review != nil {
			ts.ReviewID = t.review.nodeID()
		}
		for _, c := range t.comments {
			ts.Authors = append(ts.Authors, c.author.login)
			ts.Bodies = append(ts.Bodies, c.body)
		}
		st.ThreadList = append(st.ThreadList, ts)
	}
	return st, nil
}
