package gitlab

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// maxCommitPages bounds the commit list read per observation (100 a page);
// past it CommitsComplete is false.
const maxCommitPages = 10

// Observe reads the whole merge request (PR-O1): the MR, its project,
// every page of discussions and notes, commits, versions, approvals,
// reviewers and the head's commit statuses, plus a repository compare per
// diff position not on the current head (cached: SHAs are immutable).
// Any request that fails fails the observation: a partial read is never
// returned.
func (c *Client) Observe(ctx context.Context, ref forge.PRRef) (*forge.PullRequest, error) {
	const op = "observe merge request"
	ctx, n := forgehttp.WithCounter(ctx)
	spent := &forge.Tally{} // what it cost, as GitLab said (spend.go)
	ctx = forge.WithMeter(ctx, spent)
	var mr mergeRequest
	res, err := c.do(ctx, http.MethodGet, mrPath(ref), nil, &mr)
	if err != nil {
		return nil, c.mapErr(op, err)
	}
	head := mr.SHA
	if mr.DiffRefs != nil && mr.DiffRefs.HeadSHA != "" {
		head = mr.DiffRefs.HeadSHA
	}
	// The rest is read in parallel (the host limiter bounds it); the first
	// read to fail cancels the others and fails the observation.
	var (
		proj        *project
		discussions []discussion
		notes       []note
		commits     []commit
		complete    bool
		versions    []version
		appr        approvals
		reviewers   []reviewerState
		statuses    []commitStatus
	)
	g, gctx := errgroup.WithContext(ctx)
	read := func(what string, f func() error) {
		g.Go(func() error {
			if err := f(); err != nil {
				return c.mapErr(op+": "+what, err)
			}
			return nil
		})
	}
	read("project", func() (err error) { proj, err = c.project(gctx, ref); return })
	read("discussions", func() (err error) {
		discussions, _, err = getAll[discussion](gctx, c, mrPath(ref)+"/discussions", 0)
		return
	})
	read("notes", func() (err error) {
		notes, _, err = getAll[note](gctx, c, mrPath(ref)+"/notes?sort=asc&order_by=created_at", 0)
		return
	})
	read("commits", func() (err error) {
		commits, complete, err = getAll[commit](gctx, c, mrPath(ref)+"/commits", maxCommitPages)
		return
	})
	read("versions", func() (err error) { versions, _, err = getAll[version](gctx, c, mrPath(ref)+"/versions", 0); return })
	read("approvals", func() (err error) { _, err = c.do(gctx, http.MethodGet, mrPath(ref)+"/approvals", nil, &appr); return })
	read("reviewers", func() (err error) {
		_, err = c.do(gctx, http.MethodGet, mrPath(ref)+"/reviewers", nil, &reviewers)
		return
	})
	if head != "" {
		read("commit statuses", func() (err error) {
			statuses, _, err = getAll[commitStatus](gctx, c, projectPath(ref)+"/repository/commits/"+head+"/statuses", 0)
			return
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	pr, err := c.toPullRequest(ref, &mr, proj)
	if err != nil {
		return nil, err
	}
	pr.Commits, pr.CommitsComplete = toCommits(commits), complete
	pr.ForcePushes = forcePushes(versions, pr.Commits)
	pr.Reviews = synthesizeReviews(notes, discussions, versions, appr)
	pr.IssueComments = issueComments(notes)
	for _, r := range reviewers {
		if pendingReview(r.State) && r.User.Username != "" {
			pr.RequestedReviewers = append(pr.RequestedReviewers, r.User.Username)
		}
	}
	pr.Checks = rollup(statuses)
	pr.Threads, err = c.threads(ctx, ref, discussions, head, pr.URL)
	if err != nil {
		return nil, c.mapErr(op+": thread positions", err)
	}
	pr.ObservedAt = c.now()
	if t, err := http.ParseTime(res.header.Get("Date")); err == nil {
		pr.ObservedAt = t
	}
	pr.Requests, pr.Spend = int(n.Load()), spent.Spend()
	c.mu.Lock()
	c.mrIDs[ref] = mr.ID
	c.mu.Unlock()
	c.log.Debug("gitlab: observed", "mr", ref.String(), "requests", pr.Requests, "threads", len(pr.Threads))
	return pr, nil
}

// project reads ref's project once per Client: its path and clone URL
// change only when it is moved, and a moved project's old path fails the
// merge request's read first.
func (c *Client) project(ctx context.Context, ref forge.PRRef) (*project, error) {
	key := ref.Host + "/" + ref.FullName()
	c.mu.Lock()
	p := c.projects[key]
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p = new(project)
	if _, err := c.do(ctx, http.MethodGet, projectPath(ref), nil, p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.projects[key] = p
	c.mu.Unlock()
	return p, nil
}

// mrGID is a merge request's GraphQL global id: converge's PullRequest.ID.
func mrGID(id int64) string { return "gid://gitlab/MergeRequest/" + strconv.FormatInt(id, 10) }

func (c *Client) toPullRequest(ref forge.PRRef, mr *mergeRequest, proj *project) (*forge.PullRequest, error) {
	state, ok := prState(mr.State)
	if !ok {
		return nil, c.fail(forge.KindOther, "observe merge request", fmt.Sprintf("merge request state %q unknown to converge", mr.State), nil)
	}
	pr := &forge.PullRequest{
		Ref: ref, ID: mrGID(mr.ID), Number: mr.IID, URL: mr.WebURL, Title: mr.Title, Body: mr.Description,
		Author: mr.Author.name(), State: state, IsDraft: mr.Draft || mr.WorkInProgress,
		HeadRef: mr.SourceBranch, HeadSHA: mr.SHA, BaseRef: mr.TargetBranch,
		CrossRepo: mr.SourceProjectID != 0 && mr.TargetProjectID != 0 && mr.SourceProjectID != mr.TargetProjectID,
		CloneURL:  proj.HTTPURLToRepo,
		Labels:    dedupe(mr.Labels),
	}
	if pr.URL == "" {
		pr.URL = ref.String()
	}
	if mr.DiffRefs != nil {
		pr.BaseSHA = mr.DiffRefs.BaseSHA
		if mr.DiffRefs.HeadSHA != "" {
			pr.HeadSHA = mr.DiffRefs.HeadSHA
		}
	}
	if !pr.CrossRepo {
		pr.HeadRepo = proj.PathWithNamespace
	}
	pr.Mergeable, pr.MergeState = mergeState(mr.DetailedMergeStatus, mr.HasConflicts, pr.IsDraft)
	return pr, nil
}

// prState maps GitLab's MR state. locked is a merge in progress, which
// may still fail: the MR stays open until GitLab says merged.
func prState(s string) (forge.PRState, bool) {
	switch s {
	case "opened", "locked":
		return forge.StateOpen, true
	case "closed":
		return forge.StateClosed, true
	case "merged":
		return forge.StateMerged, true
	}
	return "", false
}

// mergeState maps detailed_merge_status (with has_conflicts and draft,
// which win) to converge's mergeable and merge states. A value converge
// does not know is UNKNOWN, never CLEAN.
func mergeState(detailed string, conflicts, draft bool) (forge.MergeableState, forge.MergeState) {
	m := forge.MergeableYes
	var s forge.MergeState
	switch detailed {
	case "mergeable":
		s = forge.MergeClean
	case "conflict":
		m, s = forge.MergeableConflicting, forge.MergeDirty
	case "need_rebase":
		s = forge.MergeBehind
	case "draft_status":
		s = forge.MergeDraft
	case "checking", "unchecked", "preparing", "approvals_syncing", "":
		m, s = forge.MergeableUnknown, forge.MergeUnknown
	case "ci_must_pass", "ci_still_running", "not_approved", "discussions_not_resolved", "blocked_status",
		"not_open", "requested_changes", "jira_association_missing", "status_checks_must_pass",
		"security_policy_violations", "merge_request_blocked", "external_status_checks", "merge_time", "locked_paths", "locked_lfs_files":
		s = forge.MergeBlocked
	default:
		m, s = forge.MergeableUnknown, forge.MergeUnknown
	}
	if conflicts {
		m, s = forge.MergeableConflicting, forge.MergeDirty
	}
	if draft {
		s = forge.MergeDraft
	}
	return m, s
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// toCommits turns GitLab's newest-first list into converge's oldest-first.
func toCommits(cs []commit) []forge.Commit {
	out := make([]forge.Commit, 0, len(cs))
	for i := len(cs) - 1; i >= 0; i-- {
		out = append(out, forge.Commit{SHA: cs[i].ID, Message: cs[i].Message, Parents: cs[i].ParentIDs, CommittedAt: cs[i].CommittedDate})
	}
	return out
}

// forcePushes derives force-pushes from the MR's versions (one per push
// to the source branch): a version whose predecessor's head is not among
// the MR's current commits replaced history, so it was force-pushed.
// GitLab's versions do not say who pushed: Actor is "". With an
// incomplete commit list a plain push may read as a force-push, which
// only makes earlier reviews count for less (fail-closed, PR-T1(4)).
func forcePushes(versions []version, commits []forge.Commit) []forge.ForcePush {
	have := map[string]bool{}
	for _, c := range commits {
		have[c.SHA] = true
	}
	vs := slices.Clone(versions)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].ID < vs[j].ID })
	var out []forge.ForcePush
	for i := 1; i < len(vs); i++ {
		before := vs[i-1].HeadCommitSHA
		if before == "" || have[before] || before == vs[i].HeadCommitSHA {
			continue
		}
		out = append(out, forge.ForcePush{Before: before, After: vs[i].HeadCommitSHA, At: vs[i].CreatedAt})
	}
	return out
}

// headAt is the head of the MR version current at t ("" before the first).
func headAt(versions []version, t time.Time) string {
	best, bestAt := "", time.Time{}
	for _, v := range versions {
		if !v.CreatedAt.After(t) && (best == "" || !v.CreatedAt.Before(bestAt)) {
			best, bestAt = v.HeadCommitSHA, v.CreatedAt
		}
	}
	return best
}

// System note texts converge reads (GitLab's own wording).
const (
	sysApproved         = "approved this merge request"
	sysUnapproved       = "unapproved this merge request"
	sysRequestedChanges = "requested changes"
	sysReviewRequested  = "requested review from "
)

func noteGID(n *note) string {
	typ := n.typ()
	if typ == "" {
		typ = "Note"
	}
	return "gid://gitlab/" + typ + "/" + strconv.FormatInt(n.ID, 10)
}

// diffReviewID is the synthesised review of author's diff discussions on
// one head.
func diffReviewID(author, head string) string { return "diffnotes:" + author + ":" + head }

// synthesizeReviews builds converge's reviews from GitLab's pieces
// (GitLab has no review object), oldest first:
//
//   - a system note "approved this merge request" by U at t is an APPROVED
//     review by U of the head of the MR version current at t;
//     "requested changes" is CHANGES_REQUESTED likewise. Review.ID is the
//     note's global id. "unapproved this merge request" is no review of
//     its own: it turns U's approval before it DISMISSED, as a dismissal
//     does on GitHub. (Duo withdraws its approval as a new review starts;
//     read as a review, that withdrawal was Duo's answer to the request
//     that started it, and every re-request of Duo ended without a signal.)
//   - U's discussions opened by a DiffNote are grouped by the note's
//     position.head_sha: one COMMENTED review per (U, head) with ID
//     "diffnotes:U:head", CommentCount the number of those discussions,
//     SubmittedAt the newest first note's time, DatabaseID the oldest
//     first note's id, Body "".
//
// Fail-closed: an APPROVED review stands only while its author is in the
// approvals' approved_by; otherwise it reads DISMISSED.
func synthesizeReviews(notes []note, discussions []discussion, versions []version, appr approvals) []forge.Review {
	approvedNow := map[string]bool{}
	for _, a := range appr.ApprovedBy {
		approvedNow[a.User.Username] = true
	}
	var out []forge.Review
	lastApproval := map[string]int{}
	for i := range notes {
		n := &notes[i]
		if !n.System {
			continue
		}
		var st forge.ReviewState
		switch strings.TrimSpace(n.Body) {
		case sysApproved:
			st = forge.ReviewApproved
		case sysRequestedChanges:
			st = forge.ReviewChangesRequested
		case sysUnapproved:
			if i, ok := lastApproval[n.Author.name()]; ok {
				out[i].State = forge.ReviewDismissed
				delete(lastApproval, n.Author.name())
			}
			continue
		default:
			continue
		}
		author := n.Author.name()
		out = append(out, forge.Review{ID: noteGID(n), DatabaseID: n.ID, Author: author, State: st,
			CommitSHA: headAt(versions, n.CreatedAt), SubmittedAt: n.CreatedAt})
		if st == forge.ReviewApproved {
			lastApproval[author] = len(out) - 1
		}
	}
	for author, i := range lastApproval {
		if !approvedNow[author] {
			out[i].State = forge.ReviewDismissed
		}
	}
	groups := map[string]*forge.Review{}
	var order []string
	for _, d := range discussions {
		if len(d.Notes) == 0 {
			continue
		}
		first := &d.Notes[0]
		if first.System || first.typ() != "DiffNote" || first.Position == nil {
			continue
		}
		id := diffReviewID(first.Author.name(), first.Position.HeadSHA)
		g := groups[id]
		if g == nil {
			g = &forge.Review{ID: id, DatabaseID: first.ID, Author: first.Author.name(), State: forge.ReviewCommented,
				CommitSHA: first.Position.HeadSHA, SubmittedAt: first.CreatedAt}
			groups[id] = g
			order = append(order, id)
		}
		g.CommentCount++
		if first.CreatedAt.After(g.SubmittedAt) {
			g.SubmittedAt = first.CreatedAt
		}
		if first.ID < g.DatabaseID {
			g.DatabaseID = first.ID
		}
	}
	for _, id := range order {
		out = append(out, *groups[id])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SubmittedAt.Before(out[j].SubmittedAt) })
	return out
}

// issueComments are the top-level notes: not system notes, not in a
// thread (type null), oldest first.
func issueComments(notes []note) []forge.IssueComment {
	var out []forge.IssueComment
	for i := range notes {
		n := &notes[i]
		if n.System || n.typ() != "" {
			continue
		}
		out = append(out, toIssueComment(n))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

func toIssueComment(n *note) forge.IssueComment {
	return forge.IssueComment{ID: n.ID, NodeID: noteGID(n), Author: n.Author.name(), Body: n.Body, CreatedAt: n.CreatedAt}
}

// pendingReview: a reviewer GitLab still waits on. A state converge does
// not know counts as pending, so the request is not repeated.
func pendingReview(state string) bool {
	switch state {
	case "reviewed", "requested_changes", "approved", "unapproved":
		return false
	}
	return true
}

// rollup is CI on the head from its commit statuses, pipeline jobs and
// external statuses alike (GitLab lists both), the newest per name.
//
// Each is a commit status (IsStatus) in converge's status words:
//
//	success                                  SUCCESS
//	failed                                   FAILURE
//	canceled                                 ERROR
//	created, waiting_for_resource, preparing,
//	pending, running, scheduled              PENDING
//	manual (a job that blocks until played)  PENDING
//	anything else                            ERROR (fail-closed)
//
// except outcomes GitLab itself does not block a pipeline on, which are
// finished check runs that pass: a failed job allowed to fail (NEUTRAL),
// a skipped job, a manual job allowed to fail (both SKIPPED).
func rollup(statuses []commitStatus) forge.CheckRollup {
	newest := map[string]commitStatus{}
	var names []string
	for _, s := range statuses {
		old, ok := newest[s.Name]
		if !ok {
			names = append(names, s.Name)
		}
		if !ok || s.ID > old.ID {
			newest[s.Name] = s
		}
	}
	var r forge.CheckRollup
	failing, pending := false, false
	for _, name := range names {
		s := newest[name]
		cx := forge.CheckContext{Name: s.Name, IsStatus: true}
		if s.Description != nil {
			cx.Description = *s.Description
		}
		if s.TargetURL != nil {
			cx.URL = *s.TargetURL
		}
		switch {
		case s.Status == "failed" && s.AllowFailure:
			cx.IsStatus, cx.Status, cx.Conclusion = false, forge.CheckCompleted, "NEUTRAL"
		case s.Status == "skipped", s.Status == "manual" && s.AllowFailure:
			cx.IsStatus, cx.Status, cx.Conclusion = false, forge.CheckCompleted, "SKIPPED"
		default:
			cx.Conclusion = statusConclusion(s.Status)
		}
		switch cx.Conclusion {
		case "PENDING":
			pending = true
		case "FAILURE", "ERROR":
			failing = true
		}
		r.Contexts = append(r.Contexts, cx)
	}
	switch {
	case len(r.Contexts) == 0:
	case failing:
		r.State = forge.CIFailure
	case pending:
		r.State = forge.CIPending
	default:
		r.State = forge.CISuccess
	}
	return r
}

func statusConclusion(s string) forge.CheckConclusion {
	switch s {
	case "success":
		return "SUCCESS"
	case "failed":
		return "FAILURE"
	case "canceled":
		return "ERROR"
	case "created", "waiting_for_resource", "preparing", "pending", "running", "scheduled", "manual":
		return "PENDING"
	}
	return "ERROR"
}

// threads are the MR's resolvable discussions (PR-O2): diff and non-diff
// threads, not individual notes. Thread.ID is the discussion id.
func (c *Client) threads(ctx context.Context, ref forge.PRRef, ds []discussion, head, webURL string) ([]forge.Thread, error) {
	var out []forge.Thread
	for _, d := range ds {
		if d.IndividualNote || len(d.Notes) == 0 || d.Notes[0].System || !d.Notes[0].Resolvable {
			continue
		}
		first := &d.Notes[0]
		th := forge.Thread{ID: d.ID, IsResolved: first.Resolved}
		reviewID := ""
		hunk := ""
		if p := first.Position; p != nil {
			th.Path = p.path()
			th.OrigLine = deref(p.NewLine)
			if p.LineRange != nil {
				if s, e := deref(p.LineRange.Start.NewLine), deref(p.LineRange.End.NewLine); s > 0 && e > s {
					th.OrigStart = s
				}
			}
			line, outdated, err := c.mapLine(ctx, ref, p, head)
			if err != nil {
				return nil, err
			}
			th.IsOutdated = outdated
			if !outdated {
				th.Line = line
				if th.OrigStart > 0 {
					th.StartLine = th.OrigStart + line - th.OrigLine
				}
			}
			if first.typ() == "DiffNote" {
				reviewID = diffReviewID(first.Author.name(), p.HeadSHA)
			}
			need := 1
			if th.OrigStart > 0 {
				need = th.OrigLine - th.OrigStart + 1
			}
			if hunk, err = c.diffHunk(ctx, ref, p, need); err != nil {
				return nil, err
			}
		}
		// Every note resolves with its discussion; the first speaks for it.
		for i := range d.Notes {
			n := &d.Notes[i]
			if n.System {
				continue
			}
			cm := toComment(n, webURL)
			if i == 0 {
				cm.ReviewID = reviewID
				cm.DiffHunk = hunk
			}
			th.Comments = append(th.Comments, cm)
		}
		out = append(out, th)
	}
	return out, nil
}

func toComment(n *note, webURL string) forge.Comment {
	cm := forge.Comment{ID: noteGID(n), DatabaseID: n.ID, Author: n.Author.name(), Body: n.Body,
		URL: webURL + "#note_" + strconv.FormatInt(n.ID, 10), CreatedAt: n.CreatedAt}
	if n.Position != nil {
		cm.Path = n.Position.path()
		cm.OriginalCommit = n.Position.HeadSHA
	}
	return cm
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
