package fakeforge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// Scripting helpers: they change the world directly, as other people,
// bots and CI would, never fail on a credential or fault, and panic on a
// PR or thread that does not exist (a bug in the test).

// PR describes a pull request to add. Zero fields take defaults.
type PR struct {
	Owner, Repo string // default acme/widget
	Number      int    // default: the repository's next number
	Title, Body string
	Author      string        // default: the world's viewer
	HeadRef     string        // default feature
	BaseRef     string        // default main
	State       forge.PRState // default OPEN
	Draft       bool
	Mergeable   forge.MergeableState // default MERGEABLE
	MergeState  forge.MergeState     // default CLEAN
	Labels      []string
	// Commits is how many commits the branch starts with; default 1.
	Commits int
	// CloneURL defaults to https://HOST/OWNER/REPO.git.
	CloneURL string
}

// AddPR adds an open pull request with its commits and returns its ref.
func (f *Forge) AddPR(spec PR) forge.PRRef {
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&spec.Owner, "acme")
	def(&spec.Repo, "widget")
	def(&spec.Author, w.opts.Viewer)
	def(&spec.HeadRef, "feature")
	def(&spec.BaseRef, "main")
	if spec.State == "" {
		spec.State = forge.StateOpen
	}
	if spec.Mergeable == "" {
		spec.Mergeable = forge.MergeableYes
	}
	if spec.MergeState == "" {
		spec.MergeState = forge.MergeClean
	}
	def(&spec.Title, "A change")
	def(&spec.CloneURL, fmt.Sprintf("https://%s/%s/%s.git", w.opts.Host, spec.Owner, spec.Repo))
	repo := strings.ToLower(spec.Owner + "/" + spec.Repo)
	if spec.Number == 0 {
		spec.Number = w.repos[repo] + 1
	}
	w.repos[repo] = max(w.repos[repo], spec.Number)
	if w.prs[key(spec.Owner, spec.Repo, spec.Number)] != nil {
		panic(fmt.Sprintf("fakeforge: %s#%d exists", repo, spec.Number))
	}
	ref := forge.PRRef{Host: w.opts.Host, Scheme: "https", Owner: spec.Owner, Repo: spec.Repo, Number: spec.Number}
	id := w.id()
	p := &prState{pr: forge.PullRequest{
		Ref: ref, ID: fmt.Sprintf("PR_ff%d", id), Number: spec.Number, URL: ref.String(),
		Title: spec.Title, Body: spec.Body, Author: spec.Author, State: spec.State, IsDraft: spec.Draft,
		HeadRef: spec.HeadRef, BaseRef: spec.BaseRef, BaseSHA: w.sha("base"), HeadRepo: spec.Owner + "/" + spec.Repo,
		Mergeable: spec.Mergeable, MergeState: spec.MergeState, Labels: slices.Clone(spec.Labels),
		CommitsComplete: true, CloneURL: spec.CloneURL,
	}}
	p.pr.HeadSHA = p.pr.BaseSHA
	for i := range max(spec.Commits, 1) {
		p.push(w, fmt.Sprintf("Commit %d", i+1))
	}
	w.prs[key(spec.Owner, spec.Repo, spec.Number)] = p
	w.nodes[p.pr.ID] = p
	return ref
}

// push adds a commit on the head; the caller holds the lock.
func (p *prState) push(w *world, message string) string {
	sha := w.sha(p.pr.Ref.String())
	p.pr.Commits = append(p.pr.Commits, forge.Commit{SHA: sha, Message: message, Parents: []string{p.pr.HeadSHA}, CommittedAt: w.now()})
	p.pr.HeadSHA = sha
	return sha
}

func (f *Forge) mustPR(ref forge.PRRef) *prState {
	p := f.w.prs[key(ref.Owner, ref.Repo, ref.Number)]
	if p == nil {
		panic(fmt.Sprintf("fakeforge: no pull request %s", ref))
	}
	return p
}

// with runs fn on the PR under the lock.
func (f *Forge) with(ref forge.PRRef, fn func(p *prState)) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	fn(f.mustPR(ref))
}

// PushHead adds a commit on the PR's branch and returns its SHA. Threads
// keep their lines (as when the push leaves them alone); use
// SetThreadOutdated for one it moved.
func (f *Forge) PushHead(ref forge.PRRef, message string) string {
	var sha string
	f.with(ref, func(p *prState) { sha = p.push(f.w, message) })
	return sha
}

// ForcePush replaces the branch's commits with new ones on the base (one
// per message, at least one), records head_ref_force_pushed by the PR's
// author, and returns the new head.
func (f *Forge) ForcePush(ref forge.PRRef, messages ...string) string {
	if len(messages) == 0 {
		messages = []string{"Rewritten"}
	}
	var sha string
	f.with(ref, func(p *prState) {
		before := p.pr.HeadSHA
		p.pr.Commits = nil
		p.pr.HeadSHA = p.pr.BaseSHA
		for _, m := range messages {
			sha = p.push(f.w, m)
		}
		p.forced(f.w, p.pr.Author, before, sha)
	})
	return sha
}

// ResetHead force-pushes the branch back to sha, a commit it had (a
// human's `git push --force` of an older head): the commits after it
// leave the branch, and the timeline records the force-push by actor.
func (f *Forge) ResetHead(ref forge.PRRef, actor, sha string) {
	f.with(ref, func(p *prState) {
		before := p.pr.HeadSHA
		for i, c := range p.pr.Commits {
			if c.SHA == sha {
				p.pr.Commits = p.pr.Commits[:i+1]
				break
			}
		}
		p.pr.HeadSHA = sha
		p.forced(f.w, actor, before, sha)
	})
}

// forced records a force-push of the head ref, as an issue event and on
// the timeline (PR-T1(4)).
func (p *prState) forced(w *world, actor, before, after string) {
	ev := p.addEvent(w, "head_ref_force_pushed", actor)
	p.pr.ForcePushes = append(p.pr.ForcePushes, forge.ForcePush{Actor: actor, Before: before, After: after, At: ev.CreatedAt})
}

// SetCommitsIncomplete says whether the commit list is only the branch's
// most recent commits (PR-T12).
func (f *Forge) SetCommitsIncomplete(ref forge.PRRef, incomplete bool) {
	f.with(ref, func(p *prState) { p.pr.CommitsComplete = !incomplete })
}

// SetCI sets a check run named name on the head: state SUCCESS, FAILURE,
// NEUTRAL, … completes it with that conclusion; PENDING (or "") leaves it
// in progress.
func (f *Forge) SetCI(ref forge.PRRef, name, state string) {
	f.with(ref, func(p *prState) {
		cr := forge.CheckRun{Name: name, HeadSHA: p.pr.HeadSHA, Status: "in_progress"}
		if s := strings.ToLower(state); s != "" && s != "pending" {
			cr.Status, cr.Conclusion = "completed", s
		}
		p.runs = append(p.runs, runRec{id: f.w.id(), sha: cr.HeadSHA, cr: cr})
	})
}

// SetStatus sets a commit status on the head (state pending, success,
// failure or error), as an outside CI would.
func (f *Forge) SetStatus(ref forge.PRRef, context, state string) {
	f.with(ref, func(p *prState) {
		p.statuses = append(p.statuses, statusRec{sha: p.pr.HeadSHA, st: forge.CommitStatus{State: forge.CommitStatusState(strings.ToLower(state)), Context: context}})
	})
}

// NewThread is one inline comment opening a thread.
type NewThread struct {
	Path      string
	Line      int
	StartLine int
	Body      string
	// DiffHunk is the diff hunk the comment carries (GitHub's diff_hunk:
	// a header, then the diff's lines up to the commented one), bounded as
	// a real backend bounds it (forge.ClipDiffHunk); "" for none.
	DiffHunk string
}

// Review is a review to add.
type Review struct {
	Author string
	State  forge.ReviewState // default COMMENTED
	Body   string
	// CommitSHA defaults to the head.
	CommitSHA string
	Threads   []NewThread
}

// AddReview submits a review with one thread per comment, at once (a
// settled review, PR-O2), removes its author from the requested
// reviewers, and returns the review and its threads as Observe shows them.
func (f *Forge) AddReview(ref forge.PRRef, r Review) (forge.Review, []forge.Thread) {
	return f.addReview(ref, r, true)
}

func (f *Forge) addReview(ref forge.PRRef, r Review, unrequest bool) (forge.Review, []forge.Thread) {
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	p := f.mustPR(ref)
	if r.State == "" {
		r.State = forge.ReviewCommented
	}
	if r.CommitSHA == "" {
		r.CommitSHA = p.pr.HeadSHA
	}
	id := w.id()
	rv := forge.Review{ID: w.reviewNodeID(id), DatabaseID: id, Author: r.Author, State: r.State, CommitSHA: r.CommitSHA,
		SubmittedAt: w.now(), Body: r.Body, CommentCount: len(r.Threads)}
	p.pr.Reviews = append(p.pr.Reviews, rv)
	var ths []forge.Thread
	for _, nt := range r.Threads {
		c := w.comment(p, r.Author, nt.Path, nt.Body, rv.ID)
		c.OriginalCommit = r.CommitSHA
		need := 1
		if nt.StartLine > 0 && nt.Line >= nt.StartLine {
			need = nt.Line - nt.StartLine + 1
		}
		c.DiffHunk = forge.ClipDiffHunk(nt.DiffHunk, need)
		th := forge.Thread{ID: fmt.Sprintf("PRRT_ff%d", w.id()), Path: nt.Path, Line: nt.Line, StartLine: nt.StartLine,
			OrigLine: nt.Line, OrigStart: nt.StartLine, Comments: []forge.Comment{c}}
		p.pr.Threads = append(p.pr.Threads, th)
		w.nodes[th.ID] = p
		ths = append(ths, th)
	}
	if unrequest {
		p.pr.RequestedReviewers = slices.DeleteFunc(p.pr.RequestedReviewers, func(l string) bool { return strings.EqualFold(l, r.Author) })
	}
	return rv, ths
}

// Finding is one inline comment of a Copilot review.
type Finding = NewThread

// AddCopilotReview adds a review by Copilot on the head, worded as Copilot
// words its reviews ("generated N comments", or "generated no new
// comments" without findings), one thread per finding. Copilot stays
// among the requested reviewers, as on the emulator.
func (f *Forge) AddCopilotReview(ref forge.PRRef, findings ...Finding) (forge.Review, []forge.Thread) {
	return f.addReview(ref, Review{Author: CopilotLogin, Body: CopilotBody(len(findings)), Threads: findings}, false)
}

// CopilotBody is a Copilot review body stating n comments.
func CopilotBody(n int) string {
	tail := fmt.Sprintf("generated %d comments.", n)
	switch n {
	case 0:
		tail = "generated no new comments."
	case 1:
		tail = "generated 1 comment."
	}
	return "## Pull Request Overview\n\nThis pull request was reviewed by fakeforge's Copilot.\n\n### Reviewed Changes\n\nCopilot reviewed 1 out of 1 changed files in this pull request and " + tail
}

// AddThread adds a thread by author outside any wider review (a human's
// single comment: on GitHub its own COMMENTED review with no body).
func (f *Forge) AddThread(ref forge.PRRef, author string, t NewThread) forge.Thread {
	_, ths := f.AddReview(ref, Review{Author: author, Threads: []NewThread{t}})
	return ths[0]
}

// AddReply appends a comment by author to a thread.
func (f *Forge) AddReply(threadID, author, body string) forge.Comment {
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	p, th, err := w.threadByID("add reply", threadID)
	if err != nil {
		panic("fakeforge: " + err.Error())
	}
	c := w.comment(p, author, th.Path, body, w.reviewNodeID(w.id()))
	c.DiffHunk = threadHunk(th)
	th.Comments = append(th.Comments, c)
	return c
}

// SetThreadOutdated marks a thread outdated (its line gone from the head:
// Line 0) or current again at line.
func (f *Forge) SetThreadOutdated(threadID string, outdated bool, line int) {
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	_, th, err := w.threadByID("outdate thread", threadID)
	if err != nil {
		panic("fakeforge: " + err.Error())
	}
	th.IsOutdated, th.Line = outdated, line
	if outdated {
		th.Line = 0
	}
}

// AddIssueComment posts a conversation comment by author.
func (f *Forge) AddIssueComment(ref forge.PRRef, author, body string) forge.IssueComment {
	var ic forge.IssueComment
	f.with(ref, func(p *prState) { ic = p.addIssueComment(f.w, author, body) })
	return ic
}

// AddEvent records an issue event, e.g. copilot_work_started by Copilot.
func (f *Forge) AddEvent(ref forge.PRRef, event, actor string) forge.Event {
	var e forge.Event
	f.with(ref, func(p *prState) { e = p.addEvent(f.w, event, actor) })
	return e
}

// LabelAs adds a label to the PR as actor did, with its labeled event.
func (f *Forge) LabelAs(ref forge.PRRef, actor, label string) {
	f.with(ref, func(p *prState) {
		p.pr.Labels = append(p.pr.Labels, label)
		p.addLabelEvent(f.w, "labeled", actor, label)
	})
}

// SetState sets the PR's state (OPEN, CLOSED, MERGED).
func (f *Forge) SetState(ref forge.PRRef, state forge.PRState) {
	f.with(ref, func(p *prState) { p.pr.State = state })
}

// SetMergeState sets what the forge says of merging.
func (f *Forge) SetMergeState(ref forge.PRRef, mergeable forge.MergeableState, mergeState forge.MergeState) {
	f.with(ref, func(p *prState) { p.pr.Mergeable, p.pr.MergeState = mergeable, mergeState })
}

// SetPermission gives login a permission on every repository of the world
// (admin, maintain, write, triage, read; none removes it).
func (f *Forge) SetPermission(login string, perm forge.Permission) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if perm == forge.PermNone {
		delete(f.w.perms, strings.ToLower(login))
		return
	}
	f.w.perms[strings.ToLower(login)] = perm
}

// PR returns a snapshot of the PR as Observe would, without counting a
// call or applying faults; nil when there is none.
func (f *Forge) PR(ref forge.PRRef) *forge.PullRequest {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	p := f.w.prs[key(ref.Owner, ref.Repo, ref.Number)]
	if p == nil {
		return nil
	}
	return p.snapshot()
}

// Calls counts calls of one operation, by its error Op name ("observe
// pr", "request reviews", "reply to thread", …), failed ones included.
func (f *Forge) Calls(op string) int {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	return f.w.calls[op]
}

// SetFault makes every call first ask fn (with the operation's name): a
// non-nil error fails the call with it, before it changes anything. Nil
// removes the fault.
func (f *Forge) SetFault(fn func(op string) error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.fault = fn
}

// OnRequestReviews adds a hook run after each successful RequestReviews
// naming someone, outside the lock: a test scripts there what a request
// starts (AddEvent copilot_work_started, later AddCopilotReview).
func (f *Forge) OnRequestReviews(fn func(ref forge.PRRef, users, bots []string)) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.onRequest = append(f.w.onRequest, fn)
}
