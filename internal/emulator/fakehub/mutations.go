package fakehub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	graphqlgo "github.com/graph-gophers/graphql-go"
)

// GraphQL mutations, and the domain operations REST shares with them.

func (r *rootResolver) RequestReviewsByLogin(ctx context.Context, args struct {
	Input struct {
		BotLogins        *[]string
		ClientMutationId *string
		PullRequestId    graphqlgo.ID
		TeamSlugs        *[]string
		Union            *bool
		UserLogins       *[]string
	}
}) (*requestReviewsPayload, error) {
	h := r.h
	in := args.Input
	u := ctxUser(ctx)
	p, _ := h.nodes[string(in.PullRequestId)].(*pr)
	if p == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", in.PullRequestId)
	}
	if !u.canWrite() && u != p.author {
		return nil, forbiddenf("%s does not have the correct permissions to execute `RequestReviewsByLogin`", u.login)
	}
	var want []*user
	if in.UserLogins != nil {
		for _, l := range *in.UserLogins {
			ru := h.userByLogin(l)
			if ru == nil || ru.typ == "Bot" {
				return nil, notFoundf("Could not resolve to a User with the login of '%s'.", l)
			}
			want = append(want, ru)
		}
	}
	if in.BotLogins != nil {
		for _, l := range *in.BotLogins {
			ru := h.userByLogin(strings.TrimSuffix(l, "[bot]"))
			// A repository without Copilot code review does not know the
			// bot: the definite refusal of PR-M3.
			if ru == nil || ru.typ != "Bot" || ru != h.copilot() || p.repo.noCopilot {
				return nil, notFoundf("Could not resolve to a Bot with the login of '%s'.", l)
			}
			want = append(want, ru)
		}
	}
	if in.TeamSlugs != nil && len(*in.TeamSlugs) > 0 {
		return nil, notFoundf("Could not resolve to a Team with the slug of '%s'.", (*in.TeamSlugs)[0])
	}
	union := in.Union != nil && *in.Union
	if err := h.requestReviewersLocked(u, p, want, union); err != nil {
		return nil, err
	}
	return &requestReviewsPayload{h: h, p: p, u: u, cmid: in.ClientMutationId}, nil
}

type requestReviewsPayload struct {
	h    *Hub
	p    *pr
	u    *user
	cmid *string
}

func (p *requestReviewsPayload) Actor() *actorRes          { return actorOf(p.h, p.u) }
func (p *requestReviewsPayload) ClientMutationId() *string { return p.cmid }
func (p *requestReviewsPayload) PullRequest() *prRes       { return &prRes{h: p.h, p: p.p} }

// requestReviewers adds (union) or sets the requested reviewers; a request
// for Copilot starts its scripted review.
func (h *Hub) requestReviewers(by *user, p *pr, want []*user, union bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requestReviewersLocked(by, p, want, union)
}

func (h *Hub) requestReviewersLocked(by *user, p *pr, want []*user, union bool) error {
	if p.state != "OPEN" {
		return unprocessablef("Pull request is closed")
	}
	for _, w := range want {
		if w == p.author {
			return unprocessablef("Review cannot be requested from pull request author.")
		}
	}
	if !union {
		var keep []*user
		for _, old := range p.requested {
			if containsUser(want, old) {
				keep = append(keep, old)
			}
		}
		p.requested = keep
	}
	for _, w := range want {
		already := containsUser(p.requested, w)
		if !already {
			p.requested = append(p.requested, w)
		}
		h.addEventLocked(p, &issueEvent{event: "review_requested", actor: by, requestedReviewer: w})
		h.publishLocked(Event{Kind: "review_requested", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: by.restLogin, Detail: w.surfaceLogin()})
		if w == h.copilot() && !p.copilotBusy {
			h.startCopilotLocked(p)
		}
	}
	p.updatedAt = h.now()
	return nil
}

func containsUser(us []*user, u *user) bool {
	for _, x := range us {
		if x == u {
			return true
		}
	}
	return false
}

// removeRequestedLocked drops u from the requested reviewers.
func removeRequestedLocked(p *pr, u *user) {
	out := p.requested[:0]
	for _, x := range p.requested {
		if x != u {
			out = append(out, x)
		}
	}
	p.requested = out
}

func (r *rootResolver) AddPullRequestReviewThreadReply(ctx context.Context, args struct {
	Input struct {
		Body                      string
		ClientMutationId          *string
		PullRequestReviewId       *graphqlgo.ID
		PullRequestReviewThreadId graphqlgo.ID
	}
}) (*replyPayload, error) {
	h := r.h
	in := args.Input
	t, _ := h.nodes[string(in.PullRequestReviewThreadId)].(*thread)
	if t == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", in.PullRequestReviewThreadId)
	}
	if strings.TrimSpace(in.Body) == "" {
		return nil, unprocessablef("Body can't be blank")
	}
	c := h.replyToThreadLocked(ctxUser(ctx), t, in.Body)
	return &replyPayload{h: h, c: c, cmid: in.ClientMutationId}, nil
}

type replyPayload struct {
	h    *Hub
	c    *reviewComment
	cmid *string
}

func (p *replyPayload) ClientMutationId() *string { return p.cmid }
func (p *replyPayload) Comment() *commentRes      { return &commentRes{h: p.h, c: p.c} }

// replyToThread appends a comment to a thread.
func (h *Hub) replyToThread(by *user, t *thread, body string) *reviewComment {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.replyToThreadLocked(by, t, body)
}

func (h *Hub) replyToThreadLocked(by *user, t *thread, body string) *reviewComment {
	first := t.comments[0]
	c := &reviewComment{thread: t, id: h.newIDLocked(), author: by, body: body, createdAt: h.now(), replyTo: first.id, commitSHA: t.pr.headSHA}
	// A reply outside a review still belongs to a (single-comment) review
	// on GitHub.
	c.reviewID = h.newIDLocked()
	t.comments = append(t.comments, c)
	h.nodes[c.nodeID()] = c
	t.pr.updatedAt = h.now()
	h.publishLocked(Event{Kind: "comment", Owner: t.pr.repo.owner, Repo: t.pr.repo.name, Number: t.pr.number, Actor: by.restLogin})
	return c
}

type resolveInput struct {
	Input struct {
		ClientMutationId *string
		ThreadId         graphqlgo.ID
	}
}

func (r *rootResolver) ResolveReviewThread(ctx context.Context, args resolveInput) (*resolvePayload, error) {
	return r.setResolved(ctx, args, true)
}

func (r *rootResolver) UnresolveReviewThread(ctx context.Context, args resolveInput) (*resolvePayload, error) {
	return r.setResolved(ctx, args, false)
}

func (r *rootResolver) setResolved(ctx context.Context, args resolveInput, resolved bool) (*resolvePayload, error) {
	h := r.h
	u := ctxUser(ctx)
	t, _ := h.nodes[string(args.Input.ThreadId)].(*thread)
	if t == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", args.Input.ThreadId)
	}
	if !u.canWrite() && u != t.pr.author {
		op := "ResolveReviewThread"
		if !resolved {
			op = "UnresolveReviewThread"
		}
		return nil, forbiddenf("%s does not have the correct permissions to execute `%s`", u.login, op)
	}
	t.resolved = resolved
	t.resolvedBy = nil
	if resolved {
		t.resolvedBy = u
	}
	kind := "thread_resolved"
	if !resolved {
		kind = "thread_unresolved"
	}
	h.publishLocked(Event{Kind: kind, Owner: t.pr.repo.owner, Repo: t.pr.repo.name, Number: t.pr.number, Actor: u.restLogin, Detail: t.nodeID()})
	return &resolvePayload{h: h, t: t, cmid: args.Input.ClientMutationId}, nil
}

type resolvePayload struct {
	h    *Hub
	t    *thread
	cmid *string
}

func (p *resolvePayload) ClientMutationId() *string { return p.cmid }
func (p *resolvePayload) Thread() *threadRes        { return &threadRes{h: p.h, t: p.t} }

// NewComment is one inline comment of a review.
type NewComment struct {
	Path      string
	Line      int
	StartLine int
	Side      string // RIGHT (default) or LEFT
	Body      string
}

// createReview submits a review on the PR's current head (or commit), each
// comment opening a thread.
func (h *Hub) createReview(ctx context.Context, by *user, p *pr, event, body, commit string, comments []NewComment) (*review, error) {
	state, commit, hunks, err := h.checkReview(ctx, by, p, event, body, commit, comments)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addReviewLocked(by, p, state, body, commit, comments, hunks), nil
}

// checkReview validates a review against git, outside the lock, and
// returns its state, its commit and each comment's diff hunk.
func (h *Hub) checkReview(ctx context.Context, by *user, p *pr, event, body, commit string, comments []NewComment) (string, string, []string, error) {
	state, err := reviewStateOf(by, p, event, body)
	if err != nil {
		return "", "", nil, err
	}
	h.mu.RLock()
	if commit == "" {
		commit = p.headSHA
	}
	dir, base := p.repo.dir, p.baseSHA
	h.mu.RUnlock()
	hunks := make([]string, 0, len(comments))
	for _, c := range comments {
		if c.Path == "" || c.Line <= 0 {
			return "", "", nil, fmt.Errorf("comment needs path and line")
		}
		content, ok := fileAt(ctx, dir, commit, c.Path)
		if !ok {
			return "", "", nil, fmt.Errorf("path %s is not in the diff", c.Path)
		}
		n := strings.Count(content, "\n")
		if !strings.HasSuffix(content, "\n") {
			n++
		}
		if c.Line > n || (c.StartLine != 0 && (c.StartLine > c.Line || c.StartLine < 1)) {
			return "", "", nil, fmt.Errorf("line %d of %s could not be resolved", c.Line, c.Path)
		}
		hunk, err := h.commentHunk(ctx, dir, base, commit, c.Path, c.Side, c.Line)
		if err != nil {
			return "", "", nil, err
		}
		hunks = append(hunks, hunk)
	}
	return state, commit, hunks, nil
}

// reviewStateOf is the state a review submitted with event gets, or why
// GitHub refuses it.
func reviewStateOf(by *user, p *pr, event, body string) (string, error) {
	state := map[string]string{"COMMENT": "COMMENTED", "APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "": "COMMENTED"}[strings.ToUpper(event)]
	if state == "" {
		return "", fmt.Errorf("event %q is not one of COMMENT, APPROVE, REQUEST_CHANGES", event)
	}
	if (state == "APPROVED" || state == "CHANGES_REQUESTED") && by == p.author {
		return "", fmt.Errorf("can not %s your own pull request", strings.ToLower(strings.ReplaceAll(event, "_", " ")))
	}
	if state == "CHANGES_REQUESTED" && body == "" {
		return "", fmt.Errorf("body is required when requesting changes")
	}
	return state, nil
}

// addReviewLocked adds a checked review with all its threads in one change,
// so no reader sees the review without them (PR-O2).
func (h *Hub) addReviewLocked(by *user, p *pr, state, body, commit string, comments []NewComment, hunks []string) *review {
	now := h.now()
	rv := &review{pr: p, id: h.newIDLocked(), author: by, state: state, body: body, commitSHA: commit, submittedAt: now, comments: len(comments)}
	h.drawLagLocked(p, rv)
	p.reviews = append(p.reviews, rv)
	h.nodes[rv.nodeID()] = rv
	for i, c := range comments {
		side := strings.ToUpper(c.Side)
		if side == "" {
			side = "RIGHT"
		}
		t := &thread{pr: p, id: h.newIDLocked(), path: c.Path, line: c.Line, startLine: c.StartLine, side: side, commitSHA: commit, diffHunk: hunks[i], review: rv}
		rc := &reviewComment{thread: t, id: h.newIDLocked(), reviewID: rv.id, author: by, body: c.Body, createdAt: now, commitSHA: commit}
		t.comments = []*reviewComment{rc}
		p.threads = append(p.threads, t)
		h.nodes[t.nodeID()] = t
		h.nodes[rc.nodeID()] = rc
	}
	if by != h.copilot() {
		removeRequestedLocked(p, by)
	}
	p.updatedAt = now
	h.publishLocked(Event{Kind: "review", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, SHA: commit, Actor: by.restLogin, Detail: state})
	return rv
}

// dismissReview dismisses a submitted approval or change request, as
// REST's dismissals endpoint does.
func (h *Hub) dismissReview(by *user, p *pr, id int64, message string) (*review, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var rv *review
	for _, x := range p.reviews {
		if x.id == id {
			rv = x
		}
	}
	if rv == nil {
		return nil, errNoReview
	}
	if rv.state != "APPROVED" && rv.state != "CHANGES_REQUESTED" {
		return nil, fmt.Errorf("can not dismiss a %s pull request review", strings.ToLower(rv.state))
	}
	rv.state = "DISMISSED"
	h.addEventLocked(p, &issueEvent{event: "review_dismissed", actor: by})
	p.updatedAt = h.now()
	h.publishLocked(Event{Kind: "review", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, SHA: rv.commitSHA, Actor: by.restLogin, Detail: "DISMISSED:" + message})
	return rv, nil
}

var errNoReview = errors.New("no such review")

// The mutations gh pr edit, gh pr ready and gh pr comment --edit-last send.
// serveGraphQL holds h.mu for writing.

// prForMutation resolves a PR's global id and checks that u may change it:
// its author or anyone with write access.
func (h *Hub) prForMutation(u *user, id graphqlgo.ID, op string) (*pr, error) {
	p, _ := h.nodes[string(id)].(*pr)
	if p == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", id)
	}
	if !u.canWrite() && u != p.author {
		return nil, forbiddenf("%s does not have the correct permissions to execute `%s`", u.login, op)
	}
	return p, nil
}

type labelsInput struct {
	Input struct {
		ClientMutationId *string
		LabelIds         []graphqlgo.ID
		LabelableId      graphqlgo.ID
	}
}

// labelsOf resolves label ids of p's repository, all or none.
func labelsOf(p *pr, ids []graphqlgo.ID) ([]*label, error) {
	var out []*label
	for _, id := range ids {
		var found *label
		for _, l := range p.repo.labels {
			if fmt.Sprintf("LA_fh%d", l.id) == string(id) {
				found = l
			}
		}
		if found == nil {
			return nil, notFoundf("Could not resolve to a node with the global id of '%s'", id)
		}
		out = append(out, found)
	}
	return out, nil
}

// labelPR resolves a label mutation's subject and labels; labelling takes
// triage or write access, which the author alone does not have.
func (h *Hub) labelPR(u *user, args labelsInput, op string) (*pr, []*label, error) {
	p, _ := h.nodes[string(args.Input.LabelableId)].(*pr)
	if p == nil {
		return nil, nil, notFoundf("Could not resolve to a node with the global id of '%s'", args.Input.LabelableId)
	}
	if !u.canWrite() {
		return nil, nil, forbiddenf("%s does not have the correct permissions to execute `%s`", u.login, op)
	}
	ls, err := labelsOf(p, args.Input.LabelIds)
	return p, ls, err
}

// AddLabelsToLabelable is gh pr edit --add-label: labels already on the PR
// are left as they are.
func (r *rootResolver) AddLabelsToLabelable(ctx context.Context, args labelsInput) (*labelsPayload, error) {
	h := r.h
	u := ctxUser(ctx)
	p, ls, err := h.labelPR(u, args, "AddLabelsToLabelable")
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		h.addLabelLocked(u, p, l)
	}
	return &labelsPayload{h: h, p: p, cmid: args.Input.ClientMutationId}, nil
}

// RemoveLabelsFromLabelable is gh pr edit --remove-label: a label the PR
// does not carry is no error.
func (r *rootResolver) RemoveLabelsFromLabelable(ctx context.Context, args labelsInput) (*labelsPayload, error) {
	h := r.h
	u := ctxUser(ctx)
	p, ls, err := h.labelPR(u, args, "RemoveLabelsFromLabelable")
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		h.removeLabelLocked(u, p, l)
	}
	return &labelsPayload{h: h, p: p, cmid: args.Input.ClientMutationId}, nil
}

func (h *Hub) addLabelLocked(by *user, p *pr, l *label) {
	for _, x := range p.labels {
		if x == l {
			return
		}
	}
	p.labels = append(p.labels, l)
	p.updatedAt = h.now()
	h.addEventLocked(p, &issueEvent{event: "labeled", actor: by, label: l.name})
	h.publishLocked(Event{Kind: "label", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: by.restLogin, Detail: l.name})
}

func (h *Hub) removeLabelLocked(by *user, p *pr, l *label) {
	for i, x := range p.labels {
		if x == l {
			p.labels = append(p.labels[:i:i], p.labels[i+1:]...)
			p.updatedAt = h.now()
			h.addEventLocked(p, &issueEvent{event: "unlabeled", actor: by, label: l.name})
			h.publishLocked(Event{Kind: "label", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: by.restLogin, Detail: "-" + l.name})
			return
		}
	}
}

type labelsPayload struct {
	h    *Hub
	p    *pr
	cmid *string
}

func (a *labelsPayload) ClientMutationId() *string { return a.cmid }
func (a *labelsPayload) Labelable() *labelableRes {
	return &labelableRes{pr: &prRes{h: a.h, p: a.p}}
}

// UpdatePullRequest is gh pr edit --title/--body/--base (and the empty
// update gh sends alongside --add-reviewer). The emulator keeps no
// assignees, milestones or classic projects: setting any is refused, not
// dropped; clearing them is no change.
func (r *rootResolver) UpdatePullRequest(ctx context.Context, args struct {
	Input struct {
		AssigneeIds         *[]graphqlgo.ID
		BaseRefName         *string
		Body                *string
		ClientMutationId    *string
		LabelIds            *[]graphqlgo.ID
		MaintainerCanModify *bool
		MilestoneId         *graphqlgo.ID
		ProjectIds          *[]graphqlgo.ID
		PullRequestId       graphqlgo.ID
		State               *string
		Title               *string
	}
}) (*prStatePayload, error) {
	h := r.h
	in := args.Input
	u := ctxUser(ctx)
	p, err := h.prForMutation(u, in.PullRequestId, "UpdatePullRequest")
	if err != nil {
		return nil, err
	}
	switch {
	case in.AssigneeIds != nil && len(*in.AssigneeIds) > 0:
		return nil, unprocessablef("fakehub keeps no assignees")
	case in.MilestoneId != nil && *in.MilestoneId != "":
		return nil, unprocessablef("fakehub keeps no milestones")
	case in.ProjectIds != nil && len(*in.ProjectIds) > 0:
		return nil, unprocessablef("fakehub keeps no classic projects")
	case in.Title != nil && strings.TrimSpace(*in.Title) == "":
		return nil, unprocessablef("Title can't be blank")
	}
	// Check everything before changing anything.
	var labels []*label
	if in.LabelIds != nil {
		if !u.canWrite() {
			return nil, forbiddenf("%s does not have the correct permissions to execute `UpdatePullRequest`", u.login)
		}
		if labels, err = labelsOf(p, *in.LabelIds); err != nil {
			return nil, err
		}
	}
	if in.BaseRefName != nil && *in.BaseRefName != p.baseRef {
		if p.state != "OPEN" {
			return nil, unprocessablef("Cannot change the base branch of a closed pull request.")
		}
		if _, err := revParse(ctx, p.repo.dir, "refs/heads/"+*in.BaseRefName); err != nil {
			return nil, unprocessablef("Proposed base branch '%s' was not found", *in.BaseRefName)
		}
		if *in.BaseRefName == p.headRef {
			return nil, unprocessablef("The base branch and the head branch cannot be the same")
		}
	}
	if in.State != nil && *in.State == "OPEN" && p.state == "MERGED" {
		return nil, unprocessablef("Could not open the pull request: it is merged")
	}
	edited := false
	if in.Title != nil && *in.Title != p.title {
		p.title, edited = *in.Title, true
	}
	if in.Body != nil && *in.Body != p.body {
		p.body, edited = *in.Body, true
	}
	if in.BaseRefName != nil && *in.BaseRefName != p.baseRef {
		p.baseRef, edited = *in.BaseRefName, true
	}
	if in.LabelIds != nil {
		for _, old := range slices.Clone(p.labels) {
			if !slices.Contains(labels, old) {
				h.removeLabelLocked(u, p, old)
			}
		}
		for _, l := range labels {
			h.addLabelLocked(u, p, l)
		}
	}
	if in.State != nil {
		h.setPRStateLocked(p, u, *in.State == "OPEN")
	}
	if edited {
		h.publishLocked(Event{Kind: "edited", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: u.restLogin})
	}
	p.updatedAt = h.now()
	return &prStatePayload{h: h, p: p, u: u, cmid: in.ClientMutationId}, nil
}

// RequestReviews is gh pr edit --add-reviewer/--remove-reviewer: gh sends
// the whole set of users (union false), so those left out are no longer
// requested. Teams are never resolved.
func (r *rootResolver) RequestReviews(ctx context.Context, args struct {
	Input struct {
		ClientMutationId *string
		PullRequestId    graphqlgo.ID
		TeamIds          *[]graphqlgo.ID
		Union            bool
		UserIds          *[]graphqlgo.ID
	}
}) (*requestReviewsPayload, error) {
	h := r.h
	in := args.Input
	u := ctxUser(ctx)
	p, err := h.prForMutation(u, in.PullRequestId, "RequestReviews")
	if err != nil {
		return nil, err
	}
	if in.TeamIds != nil && len(*in.TeamIds) > 0 {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", (*in.TeamIds)[0])
	}
	var want []*user
	if in.UserIds != nil {
		for _, id := range *in.UserIds {
			ru := h.userByNodeID(string(id))
			if ru == nil || ru.typ != "User" {
				return nil, notFoundf("Could not resolve to a node with the global id of '%s'", id)
			}
			if !containsUser(want, ru) {
				want = append(want, ru)
			}
		}
	}
	if p.state != "OPEN" {
		return nil, unprocessablef("Pull request is closed")
	}
	// Those already requested are not asked again.
	var add []*user
	for _, w := range want {
		if w == p.author {
			return nil, unprocessablef("Review cannot be requested from pull request author.")
		}
		if !containsUser(p.requested, w) {
			add = append(add, w)
		}
	}
	if !in.Union {
		for _, old := range slices.Clone(p.requested) {
			if !containsUser(want, old) {
				removeRequestedLocked(p, old)
				h.addEventLocked(p, &issueEvent{event: "review_request_removed", actor: u, requestedReviewer: old})
			}
		}
	}
	if err := h.requestReviewersLocked(u, p, add, true); err != nil {
		return nil, err
	}
	return &requestReviewsPayload{h: h, p: p, u: u, cmid: in.ClientMutationId}, nil
}

type draftInput struct {
	Input struct {
		ClientMutationId *string
		PullRequestId    graphqlgo.ID
	}
}

// MarkPullRequestReadyForReview is gh pr ready.
func (r *rootResolver) MarkPullRequestReadyForReview(ctx context.Context, args draftInput) (*prStatePayload, error) {
	return r.setDraft(ctx, args, false)
}

// ConvertPullRequestToDraft is gh pr ready --undo.
func (r *rootResolver) ConvertPullRequestToDraft(ctx context.Context, args draftInput) (*prStatePayload, error) {
	return r.setDraft(ctx, args, true)
}

// setDraft makes an open PR a draft or ready for review; a PR already so
// is left as it is.
func (r *rootResolver) setDraft(ctx context.Context, args draftInput, draft bool) (*prStatePayload, error) {
	h := r.h
	u := ctxUser(ctx)
	op := map[bool]string{true: "ConvertPullRequestToDraft", false: "MarkPullRequestReadyForReview"}[draft]
	p, err := h.prForMutation(u, args.Input.PullRequestId, op)
	if err != nil {
		return nil, err
	}
	if p.state != "OPEN" {
		return nil, unprocessablef("Pull request is closed")
	}
	if p.draft != draft {
		p.draft = draft
		event, action := "ready_for_review", "ready_for_review"
		if draft {
			event, action = "convert_to_draft", "converted_to_draft"
		}
		h.addEventLocked(p, &issueEvent{event: event, actor: u})
		// The pull_request webhook's action (webhooks.go).
		h.publishLocked(Event{Kind: "state", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: u.restLogin, Detail: action})
		p.updatedAt = h.now()
	}
	return &prStatePayload{h: h, p: p, u: u, cmid: args.Input.ClientMutationId}, nil
}

// editedComments holds the conversation comments edited since they were
// made (IssueComment.includesCreatedEdit); issueComment keeps no such flag.
var editedComments sync.Map // *issueComment → struct{}

// UpdateIssueComment is gh pr comment --edit-last: its author, or anyone
// with write access, may edit a comment.
func (r *rootResolver) UpdateIssueComment(ctx context.Context, args struct {
	Input struct {
		Body             string
		ClientMutationId *string
		Id               graphqlgo.ID
	}
}) (*updateCommentPayload, error) {
	h := r.h
	in := args.Input
	u := ctxUser(ctx)
	c, _ := h.nodes[string(in.Id)].(*issueComment)
	if c == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", in.Id)
	}
	if u != c.author && !u.canWrite() {
		return nil, forbiddenf("%s does not have the correct permissions to execute `UpdateIssueComment`", u.login)
	}
	if strings.TrimSpace(in.Body) == "" {
		return nil, unprocessablef("Body can't be blank")
	}
	p := h.prOfIssueComment(c)
	if in.Body != c.body {
		c.body = in.Body
		c.updatedAt = h.now()
		editedComments.Store(c, struct{}{})
		if p != nil {
			p.updatedAt = c.updatedAt
		}
	}
	return &updateCommentPayload{c: &issueCommentRes{h: h, p: p, c: c}, cmid: in.ClientMutationId}, nil
}

type updateCommentPayload struct {
	c    *issueCommentRes
	cmid *string
}

func (a *updateCommentPayload) ClientMutationId() *string      { return a.cmid }
func (a *updateCommentPayload) IssueComment() *issueCommentRes { return a.c }
