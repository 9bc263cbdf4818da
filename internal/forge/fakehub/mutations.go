package fakehub

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
