// Package fakeforge is an in-memory forge.Forge: no git, no HTTP, safe for
// concurrent use. It passes the same contract suite (forgetest) as the
// GitHub client against the emulator, so engine and loop tests can run on
// it fast and trust what it does.
//
// A test builds a world with New and the scripting helpers (AddPR,
// AddReview, AddCopilotReview, AddThread, PushHead, SetCI, …), hands the
// *Forge to the code under test as its forge.Forge, and reads the result
// back with PR or Observe. As views the same world as another identity;
// Rejected views it with a credential the forge refuses; SetFault injects
// errors; OnRequestReviews lets a test script what a request starts.
package fakeforge

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
)

var (
	_ forge.Forge        = (*Forge)(nil)
	_ forge.CheckRunner  = (*Forge)(nil)
	_ forge.IssueEventer = (*Forge)(nil)
)

// Copilot's logins as the GitHub client reports them: reviews and thread
// comments by GraphQL login, issue events by the short name (PR-O2).
const (
	CopilotLogin = "copilot-pull-request-reviewer"
	CopilotShort = "Copilot"
)

// MaxBodyChars is the comment body limit, GitHub's (PR-G6).
const MaxBodyChars = 65536

// maxStatusDescription is GitHub's commit status description limit.
const maxStatusDescription = 140

// Options configure a world.
type Options struct {
	// Viewer is the login New's Forge acts as; default "converge".
	Viewer string
	// Host of PR URLs; default "forge.test".
	Host string
	// Now is the clock for everything the world records; default
	// time.Now in UTC.
	Now func() time.Time
	// NoCheckRuns makes CreateCheckRun refuse as GitHub does a user token:
	// KindAuth, wrapping errors.ErrUnsupported.
	NoCheckRuns bool
}

// Forge is one identity's view of a world. Views made with As and
// Rejected share the world.
type Forge struct {
	w        *world
	login    string
	rejected bool
}

type world struct {
	opts Options

	mu        sync.Mutex
	prs       map[string]*prState         // by key(owner, repo, number)
	repos     map[string]int              // owner/repo -> last PR number
	nodes     map[string]*prState         // PR and thread node ids -> their PR
	perms     map[string]forge.Permission // login (lower-case) -> permission
	nextID    int64
	calls     map[string]int
	fault     func(op string) error
	onRequest []func(ref forge.PRRef, users, bots []string)
	knownSHAs map[string]bool
}

type prState struct {
	pr       forge.PullRequest // Checks, Requests and ObservedAt are filled on read
	statuses []statusRec       // oldest first
	runs     []runRec          // oldest first
	events   []forge.Event
}

type statusRec struct {
	sha string
	st  forge.CommitStatus
}

type runRec struct {
	id  int64
	sha string
	cr  forge.CheckRun
}

// New returns the Forge of a new, empty world, acting as opts.Viewer (who
// has write permission).
func New(opts Options) *Forge {
	if opts.Viewer == "" {
		opts.Viewer = "converge"
	}
	if opts.Host == "" {
		opts.Host = "forge.test"
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Now().UTC() }
	}
	w := &world{
		opts: opts, prs: map[string]*prState{}, repos: map[string]int{}, nodes: map[string]*prState{},
		perms: map[string]forge.Permission{strings.ToLower(opts.Viewer): forge.PermWrite}, nextID: 1000,
		calls: map[string]int{}, knownSHAs: map[string]bool{},
	}
	return &Forge{w: w, login: opts.Viewer}
}

// As returns a view of the same world acting as login.
func (f *Forge) As(login string) *Forge { return &Forge{w: f.w, login: login} }

// Rejected returns a view whose credential the forge refuses: every call
// fails with KindAuth.
func (f *Forge) Rejected() *Forge { return &Forge{w: f.w, login: f.login, rejected: true} }

// Login is the login this view acts as.
func (f *Forge) Login() string { return f.login }

func key(owner, repo string, number int) string {
	return fmt.Sprintf("%s/%s#%d", strings.ToLower(owner), strings.ToLower(repo), number)
}

func (w *world) id() int64 {
	w.nextID++
	return w.nextID
}

// sha makes a commit id: 40 hex digits, unique in the world.
func (w *world) sha(seed string) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%d", seed, w.id())))
	s := hex.EncodeToString(sum[:])
	w.knownSHAs[s] = true
	return s
}

func (w *world) now() time.Time { return w.opts.Now() }

// Errors, with the kinds the GitHub client gives for the same failures.

func notFound(op, format string, a ...any) error {
	return &forge.Error{Kind: forge.KindNotFound, Op: op, Msg: fmt.Sprintf(format, a...)}
}

func invalid(op, format string, a ...any) error {
	return &forge.Error{Kind: forge.KindInvalid, Op: op, Msg: fmt.Sprintf(format, a...)}
}

// begin counts a call and applies the credential and any fault; the lock
// is not held, so a fault function may use the helpers.
func (f *Forge) begin(op string) error {
	f.w.mu.Lock()
	f.w.calls[op]++
	fault := f.w.fault
	f.w.mu.Unlock()
	if f.rejected {
		return &forge.Error{Kind: forge.KindAuth, Op: op, Msg: "token rejected by fakeforge: Bad credentials"}
	}
	if fault != nil {
		return fault(op)
	}
	return nil
}

// lookup finds a PR; the caller holds the lock.
func (w *world) lookup(op string, ref forge.PRRef) (*prState, error) {
	p := w.prs[key(ref.Owner, ref.Repo, ref.Number)]
	if p == nil {
		return nil, notFound(op, "%s not found", ref)
	}
	return p, nil
}

// truncate cuts body to the limit, ending it with a note that says so.
func truncate(body string) string {
	n := utf8.RuneCountInString(body)
	if n <= MaxBodyChars {
		return body
	}
	note := func(omitted int) string {
		return fmt.Sprintf("\n\n…\n\n_(truncated: %d characters omitted to fit the forge's %d-character limit)_", omitted, MaxBodyChars)
	}
	keep := MaxBodyChars - utf8.RuneCountInString(note(n))
	keep = MaxBodyChars - utf8.RuneCountInString(note(n-keep))
	r := []rune(body)
	return string(r[:keep]) + note(n-keep)
}

// lockPR makes the checks every call makes (credential, injected fault),
// takes the world's lock and finds ref's PR. On success the caller holds
// the lock until it calls unlock.
func (f *Forge) lockPR(op string, ref forge.PRRef) (*prState, func(), error) {
	if err := f.begin(op); err != nil {
		return nil, nil, err
	}
	f.w.mu.Lock()
	p, err := f.w.lookup(op, ref)
	if err != nil {
		f.w.mu.Unlock()
		return nil, nil, err
	}
	return p, f.w.mu.Unlock, nil
}

// The forge.Forge methods.

// Observe returns a copy of the whole PR with its head's check rollup.
func (f *Forge) Observe(ctx context.Context, ref forge.PRRef) (*forge.PullRequest, error) {
	const op = "observe pr"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	pr := p.snapshot()
	pr.ObservedAt = f.w.now()
	pr.Requests = 1
	return pr, nil
}

// snapshot deep-copies the PR and computes its rollup; the caller holds
// the lock.
func (p *prState) snapshot() *forge.PullRequest {
	pr := p.pr
	pr.Reviews = slices.Clone(p.pr.Reviews)
	pr.RequestedReviewers = slices.Clone(p.pr.RequestedReviewers)
	pr.Labels = slices.Clone(p.pr.Labels)
	pr.IssueComments = slices.Clone(p.pr.IssueComments)
	pr.Commits = slices.Clone(p.pr.Commits)
	for i := range pr.Commits {
		pr.Commits[i].Parents = slices.Clone(pr.Commits[i].Parents)
	}
	pr.ForcePushes = slices.Clone(p.pr.ForcePushes)
	pr.Threads = slices.Clone(p.pr.Threads)
	for i := range pr.Threads {
		pr.Threads[i].Comments = slices.Clone(pr.Threads[i].Comments)
	}
	pr.Checks = p.rollup(pr.HeadSHA)
	return &pr
}

// rollup is the newest check run per name and status per context on sha,
// and their combined state as GitHub's statusCheckRollup gives it.
func (p *prState) rollup(sha string) forge.CheckRollup {
	var ch forge.CheckRollup
	at := map[string]int{}
	put := func(k string, c forge.CheckContext) {
		if i, ok := at[k]; ok {
			ch.Contexts[i] = c
			return
		}
		at[k] = len(ch.Contexts)
		ch.Contexts = append(ch.Contexts, c)
	}
	for _, r := range p.runs {
		if r.sha == sha {
			put("run:"+r.cr.Name, forge.CheckContext{Name: r.cr.Name, Status: forge.CheckStatus(strings.ToUpper(r.cr.Status)), Conclusion: forge.CheckConclusion(strings.ToUpper(r.cr.Conclusion)),
				Title: r.cr.Title, Summary: r.cr.Summary, Text: r.cr.Text})
		}
	}
	for _, s := range p.statuses {
		if s.sha == sha {
			put("status:"+s.st.Context, forge.CheckContext{Name: s.st.Context, IsStatus: true, Conclusion: forge.CheckConclusion(strings.ToUpper(string(s.st.State))),
				Description: s.st.Description, URL: s.st.TargetURL})
		}
	}
	if len(ch.Contexts) == 0 {
		return ch
	}
	failing, pending := false, false
	for _, c := range ch.Contexts {
		switch {
		case c.IsStatus:
			pending = pending || c.Conclusion == "PENDING"
			failing = failing || c.Conclusion == "FAILURE" || c.Conclusion == "ERROR"
		case c.Status != "COMPLETED":
			pending = true
		default:
			failing = failing || !slices.Contains([]forge.CheckConclusion{"SUCCESS", "NEUTRAL", "SKIPPED"}, c.Conclusion)
		}
	}
	switch {
	case failing:
		ch.State = forge.CIFailure
	case pending:
		ch.State = forge.CIPending
	default:
		ch.State = forge.CISuccess
	}
	return ch
}

// RequestReviews adds the logins to the requested reviewers, keeping
// those already there (union), records a review_requested event for
// each, and then calls the OnRequestReviews hooks. The fake addresses
// the PR by pr.Ref, as a forge without node ids would.
func (f *Forge) RequestReviews(ctx context.Context, pr *forge.PullRequest, userLogins, botLogins []string) error {
	const op = "request reviews"
	if err := f.begin(op); err != nil {
		return err
	}
	if len(userLogins) == 0 && len(botLogins) == 0 {
		return nil
	}
	if pr == nil {
		return invalid(op, "no pull request to request reviews on")
	}
	f.w.mu.Lock()
	p, err := f.w.lookup(op, pr.Ref)
	if err != nil {
		f.w.mu.Unlock()
		return err
	}
	all := append(slices.Clone(userLogins), botLogins...)
	for _, l := range all {
		if strings.EqualFold(l, p.pr.Author) {
			f.w.mu.Unlock()
			return invalid(op, "Review cannot be requested from pull request author.")
		}
	}
	for _, l := range all {
		if !slices.Contains(p.pr.RequestedReviewers, l) {
			p.pr.RequestedReviewers = append(p.pr.RequestedReviewers, l)
		}
		p.addEvent(f.w, "review_requested", f.login)
	}
	ref := p.pr.Ref
	hooks := slices.Clone(f.w.onRequest)
	f.w.mu.Unlock()
	for _, h := range hooks {
		h(ref, slices.Clone(userLogins), slices.Clone(botLogins))
	}
	return nil
}

func (p *prState) addEvent(w *world, event, actor string) forge.Event {
	return p.addLabelEvent(w, event, actor, "")
}

func (p *prState) addLabelEvent(w *world, event, actor, label string) forge.Event {
	e := forge.Event{ID: w.id(), Event: event, Actor: actor, Label: label, CreatedAt: w.now()}
	p.events = append(p.events, e)
	return e
}

// threadLocked finds a thread of the PR by id; the caller holds the
// lock. A thread of another PR is not found, as on a forge that addresses
// threads within their PR (GitLab discussions).
func (w *world) threadLocked(op string, ref forge.PRRef, id string) (*prState, *forge.Thread, error) {
	p, th, err := w.threadByID(op, id)
	if err == nil && p != w.prs[key(ref.Owner, ref.Repo, ref.Number)] {
		return nil, nil, notFound(op, "Could not resolve to a node with the global id of '%s'", id)
	}
	return p, th, err
}

// threadByID finds a thread of any PR by id; the caller holds the lock.
func (w *world) threadByID(op, id string) (*prState, *forge.Thread, error) {
	if p := w.nodes[id]; p != nil {
		for i := range p.pr.Threads {
			if p.pr.Threads[i].ID == id {
				return p, &p.pr.Threads[i], nil
			}
		}
	}
	return nil, nil, notFound(op, "Could not resolve to a node with the global id of '%s'", id)
}

// ReplyToThread appends a reply by the viewer (cut to MaxBodyChars).
func (f *Forge) ReplyToThread(ctx context.Context, ref forge.PRRef, threadID, body string) (forge.Comment, error) {
	const op = "reply to thread"
	if err := f.begin(op); err != nil {
		return forge.Comment{}, err
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	p, th, err := f.w.threadLocked(op, ref, threadID)
	if err != nil {
		return forge.Comment{}, err
	}
	if strings.TrimSpace(body) == "" {
		return forge.Comment{}, invalid(op, "Body can't be blank")
	}
	c := f.w.comment(p, f.login, th.Path, truncate(body), f.w.reviewNodeID(f.w.id()))
	c.DiffHunk = threadHunk(th)
	th.Comments = append(th.Comments, c)
	return c, nil
}

// threadHunk is the diff hunk a reply in th carries: its first comment's,
// as on GitHub, where a reply sits on the same lines.
func threadHunk(th *forge.Thread) string {
	if len(th.Comments) == 0 {
		return ""
	}
	return th.Comments[0].DiffHunk
}

func (w *world) reviewNodeID(id int64) string { return fmt.Sprintf("PRR_ff%d", id) }

// comment makes a review comment on the PR's current head; the caller
// holds the lock.
func (w *world) comment(p *prState, author, path, body, reviewID string) forge.Comment {
	id := w.id()
	return forge.Comment{
		ID: fmt.Sprintf("PRRC_ff%d", id), DatabaseID: id, Author: author, Body: body, Path: path,
		URL: fmt.Sprintf("%s#discussion_r%d", p.pr.URL, id), CreatedAt: w.now(),
		ReviewID: reviewID, OriginalCommit: p.pr.HeadSHA,
	}
}

// ResolveThread marks a thread resolved; resolving it again is harmless.
func (f *Forge) ResolveThread(ctx context.Context, ref forge.PRRef, threadID string) error {
	return f.setResolved(ctx, "resolve thread", ref, threadID, true)
}

// UnresolveThread reopens a thread; reopening it again is harmless.
func (f *Forge) UnresolveThread(ctx context.Context, ref forge.PRRef, threadID string) error {
	return f.setResolved(ctx, "unresolve thread", ref, threadID, false)
}

func (f *Forge) setResolved(_ context.Context, op string, ref forge.PRRef, threadID string, resolved bool) error {
	if err := f.begin(op); err != nil {
		return err
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	_, th, err := f.w.threadLocked(op, ref, threadID)
	if err != nil {
		return err
	}
	th.IsResolved = resolved
	return nil
}

// IssueEvents lists the PR's events, oldest first.
func (f *Forge) IssueEvents(ctx context.Context, ref forge.PRRef) ([]forge.Event, error) {
	const op = "list issue events"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return slices.Clone(p.events), nil
}

// AddLabels adds labels not already there, each with a labeled event.
func (f *Forge) AddLabels(ctx context.Context, ref forge.PRRef, labels ...string) error {
	const op = "add labels"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return err
	}
	defer unlock()
	for _, l := range labels {
		if strings.TrimSpace(l) == "" || slices.ContainsFunc(p.pr.Labels, func(x string) bool { return strings.EqualFold(x, l) }) {
			continue
		}
		p.pr.Labels = append(p.pr.Labels, l)
		p.addLabelEvent(f.w, "labeled", f.login, l)
	}
	return nil
}

// RemoveLabel removes a label; one that is not there is not an error, as
// with the GitHub client.
func (f *Forge) RemoveLabel(ctx context.Context, ref forge.PRRef, label string) error {
	const op = "remove label"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return err
	}
	defer unlock()
	if i := slices.IndexFunc(p.pr.Labels, func(x string) bool { return strings.EqualFold(x, label) }); i >= 0 {
		p.pr.Labels = slices.Delete(p.pr.Labels, i, i+1)
		p.addLabelEvent(f.w, "unlabeled", f.login, label)
	}
	return nil
}

// CreateIssueComment posts a conversation comment by the viewer (cut to
// MaxBodyChars).
func (f *Forge) CreateIssueComment(ctx context.Context, ref forge.PRRef, body string) (forge.IssueComment, error) {
	const op = "create issue comment"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return forge.IssueComment{}, err
	}
	defer unlock()
	if strings.TrimSpace(body) == "" {
		return forge.IssueComment{}, invalid(op, "Validation Failed: body is missing")
	}
	return p.addIssueComment(f.w, f.login, truncate(body)), nil
}

func (p *prState) addIssueComment(w *world, author, body string) forge.IssueComment {
	id := w.id()
	ic := forge.IssueComment{ID: id, NodeID: fmt.Sprintf("IC_ff%d", id), Author: author, Body: body, CreatedAt: w.now()}
	p.pr.IssueComments = append(p.pr.IssueComments, ic)
	return ic
}

// ListIssueComments lists the PR's conversation comments, oldest first.
func (f *Forge) ListIssueComments(ctx context.Context, ref forge.PRRef) ([]forge.IssueComment, error) {
	const op = "list issue comments"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return slices.Clone(p.pr.IssueComments), nil
}

// SetCommitStatus records a status on sha, a commit the PR has had.
func (f *Forge) SetCommitStatus(ctx context.Context, ref forge.PRRef, sha string, st forge.CommitStatus) error {
	const op = "set commit status"
	p, unlock, err := f.lockPR(op, ref)
	if err != nil {
		return err
	}
	defer unlock()
	if !slices.Contains(statusStates, st.State) {
		return invalid(op, "state %q is not one of pending, success, failure, error", st.State)
	}
	if !f.w.knownSHAs[sha] {
		return invalid(op, "No commit found for SHA: %s", sha)
	}
	if st.Context == "" {
		st.Context = "default"
	}
	if utf8.RuneCountInString(st.Description) > maxStatusDescription {
		st.Description = string([]rune(st.Description)[:maxStatusDescription-1]) + "…"
	}
	p.statuses = append(p.statuses, statusRec{sha: sha, st: st})
	return nil
}

var (
	statusStates   = []forge.CommitStatusState{forge.StatusPending, forge.StatusSuccess, forge.StatusFailure, forge.StatusError}
	runStatuses    = []string{"queued", "in_progress", "completed"}
	runConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"}
)

// CreateCheckRun records a check run on a commit the PR has had, unless
// Options.NoCheckRuns.
func (f *Forge) CreateCheckRun(ctx context.Context, ref forge.PRRef, cr forge.CheckRun) (int64, error) {
	const op = "create check run"
	if err := f.begin(op); err != nil {
		return 0, err
	}
	if f.w.opts.NoCheckRuns {
		return 0, &forge.Error{Kind: forge.KindAuth, Op: op, Msg: "check runs need an App token", Err: errors.ErrUnsupported}
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	p, err := f.w.lookup(op, ref)
	if err != nil {
		return 0, err
	}
	if cr.Status == "" {
		cr.Status = "queued"
		if cr.Conclusion != "" {
			cr.Status = "completed"
		}
	}
	switch {
	case cr.Name == "":
		return 0, invalid(op, "name is missing")
	case !f.w.knownSHAs[cr.HeadSHA]:
		return 0, invalid(op, "No commit found for SHA: %s", cr.HeadSHA)
	case !slices.Contains(runStatuses, cr.Status):
		return 0, invalid(op, "status %q is not one of %v", cr.Status, runStatuses)
	case cr.Status == "completed" && !slices.Contains(runConclusions, cr.Conclusion):
		return 0, invalid(op, "a completed check run needs a conclusion, one of %v", runConclusions)
	case cr.Status != "completed" && cr.Conclusion != "":
		return 0, invalid(op, "conclusion given for a check run that is %s", cr.Status)
	}
	cr.Summary = truncate(cr.Summary)
	id := f.w.id()
	p.runs = append(p.runs, runRec{id: id, sha: cr.HeadSHA, cr: cr})
	return id, nil
}

// Viewer returns the login this view acts as.
func (f *Forge) Viewer(ctx context.Context) (string, error) {
	if err := f.begin("read viewer"); err != nil {
		return "", err
	}
	return f.login, nil
}

// Permission returns login's permission (SetPermission), "none" for
// anyone not given one.
func (f *Forge) Permission(ctx context.Context, ref forge.PRRef, login string) (forge.Permission, error) {
	const op = "read permission"
	if err := f.begin(op); err != nil {
		return "", err
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if _, ok := f.w.repos[strings.ToLower(ref.FullName())]; !ok {
		return "", notFound(op, "repository %s not found", ref.FullName())
	}
	if p, ok := f.w.perms[strings.ToLower(login)]; ok {
		return p, nil
	}
	return forge.PermNone, nil
}
