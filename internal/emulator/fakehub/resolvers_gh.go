package fakehub

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	graphqlgo "github.com/graph-gophers/graphql-go"
)

// Resolvers for what the gh CLI asks besides converge's own documents
// (`gh pr view`, `pr list`, `pr checks`, `pr view --json FIELDS`, `pr review`,
// `pr comment`): real values from the model and git where the emulator has
// them; empty or null where it keeps nothing (assignees, milestones,
// classic project cards, reactions, required checks). Like the others they
// run under h.mu, held by serveGraphQL.

// Repository.pullRequests.

type issueOrder struct {
	Direction string
	Field     string
}

func (r *repoRes) PullRequests(args struct {
	After       *string
	BaseRefName *string
	Before      *string
	First       *int32
	HeadRefName *string
	Labels      *[]string
	Last        *int32
	OrderBy     *issueOrder
	States      *[]string
}) (*prConn, error) {
	var ps []*pr
	for _, p := range r.rp.prs {
		if args.States != nil && len(*args.States) > 0 && !containsStr(*args.States, p.state) {
			continue
		}
		if args.BaseRefName != nil && p.baseRef != *args.BaseRefName {
			continue
		}
		if args.HeadRefName != nil && p.headRef != *args.HeadRefName {
			continue
		}
		if args.Labels != nil && len(*args.Labels) > 0 && !hasAnyLabel(p, *args.Labels) {
			continue
		}
		ps = append(ps, p)
	}
	if o := args.OrderBy; o != nil {
		key := func(p *pr) int64 {
			switch o.Field {
			case "UPDATED_AT":
				return p.updatedAt.UnixNano()
			case "COMMENTS":
				return int64(len(p.issueComments))
			}
			return p.createdAt.UnixNano()
		}
		sort.SliceStable(ps, func(i, j int) bool {
			a, b := key(ps[i]), key(ps[j])
			if a == b { // same second: the later PR is the newer
				a, b = int64(ps[i].number), int64(ps[j].number)
			}
			if o.Direction == "DESC" {
				return a > b
			}
			return a < b
		})
	}
	s, e, pi, err := paginate(len(ps), pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "pullRequests")
	if err != nil {
		return nil, err
	}
	return newPRConn(r.h, ps, s, e, pi), nil
}

func newPRConn(h *Hub, ps []*pr, s, e int, pi *pageInfo) *prConn {
	c := &prConn{pi: pi, total: len(ps)}
	for i := s; i < e; i++ {
		c.nodes = append(c.nodes, &prRes{h: h, p: ps[i]})
		c.edges = append(c.edges, &prEdge{cursor: cursor(i), node: &prRes{h: h, p: ps[i]}})
	}
	return c
}

func hasAnyLabel(p *pr, names []string) bool {
	for _, l := range p.labels {
		for _, n := range names {
			if strings.EqualFold(l.name, n) {
				return true
			}
		}
	}
	return false
}

type prConn struct {
	nodes []*prRes
	edges []*prEdge
	pi    *pageInfo
	total int
}

func (c *prConn) Edges() *[]*prEdge { return &c.edges }

type prEdge struct {
	cursor string
	node   *prRes
}

func (e *prEdge) Cursor() string { return e.cursor }
func (e *prEdge) Node() *prRes   { return e.node }

func (c *prConn) Nodes() *[]*prRes    { return &c.nodes }
func (c *prConn) PageInfo() *pageInfo { return c.pi }
func (c *prConn) TotalCount() int32   { return int32(c.total) }

// Pull request: the diff's figures and files.

func (r *prRes) files(ctx context.Context) ([]prFile, error) {
	fs, err := r.h.prFiles(ctx, r.p.repo.dir, r.p.baseSHA, r.p.headSHA)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	return fs, nil
}

func (r *prRes) Additions(ctx context.Context) (int32, error) {
	fs, err := r.files(ctx)
	n := 0
	for _, f := range fs {
		n += f.additions
	}
	return int32(n), err
}

func (r *prRes) Deletions(ctx context.Context) (int32, error) {
	fs, err := r.files(ctx)
	n := 0
	for _, f := range fs {
		n += f.deletions
	}
	return int32(n), err
}

func (r *prRes) ChangedFiles(ctx context.Context) (int32, error) {
	fs, err := r.files(ctx)
	return int32(len(fs)), err
}

func (r *prRes) Files(ctx context.Context, args pageArgs) (*fileConn, error) {
	fs, err := r.files(ctx)
	if err != nil {
		return nil, err
	}
	s, e, pi, err := paginate(len(fs), args, "files")
	if err != nil {
		return nil, err
	}
	c := &fileConn{pi: pi, total: len(fs)}
	for _, f := range fs[s:e] {
		c.nodes = append(c.nodes, &fileRes{f: f})
	}
	return c, nil
}

type fileConn struct {
	nodes []*fileRes
	pi    *pageInfo
	total int
}

func (c *fileConn) Nodes() *[]*fileRes  { return &c.nodes }
func (c *fileConn) PageInfo() *pageInfo { return c.pi }
func (c *fileConn) TotalCount() int32   { return int32(c.total) }

type fileRes struct{ f prFile }

func (f *fileRes) Additions() int32   { return int32(f.f.additions) }
func (f *fileRes) ChangeType() string { return f.f.changeType() }
func (f *fileRes) Deletions() int32   { return int32(f.f.deletions) }
func (f *fileRes) Path() string       { return f.f.path }

// Pull request: state and people.

func (r *prRes) ClosedAt() *gqlDateTime { return dtp(r.p.closedAt) }
func (r *prRes) MergedAt() *gqlDateTime { return dtp(r.p.mergedAt) }
func (r *prRes) MergedBy() *actorRes    { return actorOf(r.h, r.p.mergedBy) }
func (r *prRes) MergeCommit() *commitRes {
	if r.p.mergeSHA == "" {
		return nil
	}
	return &commitRes{h: r.h, rp: r.p.repo, sha: r.p.mergeSHA}
}

// PotentialMergeCommit is GitHub's test merge; the emulator makes none.
func (r *prRes) PotentialMergeCommit() *commitRes { return nil }

// MaintainerCanModify is about a fork's head; the emulator's PRs are all
// same-repository ones, for which GitHub answers false.
func (r *prRes) MaintainerCanModify() bool { return false }

func (r *prRes) Assignees(args pageArgs) (*userConn, error) {
	_, _, pi, err := paginate(0, args, "assignees")
	if err != nil {
		return nil, err
	}
	return &userConn{pi: pi}, nil
}

func (r *prRes) Milestone() *milestoneRes { return nil }

func (r *prRes) ProjectCards(args struct {
	After          *string
	ArchivedStates *[]*string
	Before         *string
	First          *int32
	Last           *int32
}) (*projectCardConn, error) {
	_, _, pi, err := paginate(0, pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "projectCards")
	if err != nil {
		return nil, err
	}
	return &projectCardConn{pi: pi}, nil
}

func (r *prRes) ReactionGroups() *[]*reactionGroupRes { return reactionGroups() }

// ReviewDecision follows each reviewer's latest approval or change
// request (a comment changes neither, a dismissal withdraws it): any
// change request wins, then any approval; null when there is neither.
// ReviewDecision is GitHub's: null unless a review rule (branch
// protection or a ruleset) requires reviews (fidelity.go).
func (r *prRes) ReviewDecision() *string { return reviewDecision(r.p) }

// reviewsVerdict is what the PR's latest reviews say, rule or none:
// CHANGES_REQUESTED when any reviewer's latest asks for changes, else
// APPROVED when one approved; search's review: qualifier reads it.
func reviewsVerdict(p *pr) *string {
	approvals, changes := latestReviews(p)
	d := "APPROVED"
	switch {
	case changes:
		d = "CHANGES_REQUESTED"
	case approvals == 0:
		return nil
	}
	return &d
}

func reactionGroups() *[]*reactionGroupRes {
	var gs []*reactionGroupRes
	for _, c := range []string{"THUMBS_UP", "THUMBS_DOWN", "LAUGH", "HOORAY", "CONFUSED", "HEART", "ROCKET", "EYES"} {
		gs = append(gs, &reactionGroupRes{content: c})
	}
	return &gs
}

type userConn struct {
	nodes []*userRes
	pi    *pageInfo
	total int
}

func (c *userConn) Nodes() *[]*userRes  { return &c.nodes }
func (c *userConn) PageInfo() *pageInfo { return c.pi }
func (c *userConn) TotalCount() int32   { return int32(c.total) }

// The emulator keeps no milestones or classic projects: these types are
// served for their schema only and never resolved to a value.

type milestoneRes struct{}

func (milestoneRes) Description() *string   { return nil }
func (milestoneRes) DueOn() *gqlDateTime    { return nil }
func (milestoneRes) ID() graphqlgo.ID       { return "" }
func (milestoneRes) Number() int32          { return 0 }
func (milestoneRes) Title() string          { return "" }
func (projectCardRes) Column() *projectRes  { return nil }
func (projectCardRes) ID() graphqlgo.ID     { return "" }
func (projectCardRes) Project() *projectRes { return &projectRes{} }
func (projectRes) ID() graphqlgo.ID         { return "" }
func (projectRes) Name() string             { return "" }

type projectCardRes struct{}

type projectRes struct{}

type projectCardConn struct{ pi *pageInfo }

func (c *projectCardConn) Nodes() *[]*projectCardRes { return &[]*projectCardRes{} }
func (c *projectCardConn) PageInfo() *pageInfo       { return c.pi }
func (c *projectCardConn) TotalCount() int32         { return 0 }

// Team.organization: teams are never resolved (review requests name users
// and bots only).
func (t *teamRes) Organization() *orgRes { return &orgRes{} }

type orgRes struct{ login string }

func (o *orgRes) ID() graphqlgo.ID { return graphqlgo.ID("O_fh" + o.login) }
func (o *orgRes) Login() string    { return o.login }
func (o *orgRes) Name() *string    { return nil }

// Commits: authors and the message's body.

func (c *commitRes) MessageBody(ctx context.Context) string {
	_, body, _ := strings.Cut(c.load(ctx).message, "\n")
	return strings.TrimSpace(body)
}

func (c *commitRes) Authors(ctx context.Context, args pageArgs) (*gitActorConn, error) {
	ci := c.load(ctx)
	all := []*gitActorRes{{h: c.h, name: ci.authorName, email: ci.authorEmail, date: ci.authored}}
	s, e, pi, err := paginate(len(all), args, "authors")
	if err != nil {
		return nil, err
	}
	return &gitActorConn{nodes: all[s:e], pi: pi, total: len(all)}, nil
}

type gitActorConn struct {
	nodes []*gitActorRes
	pi    *pageInfo
	total int
}

func (c *gitActorConn) Nodes() *[]*gitActorRes { return &c.nodes }
func (c *gitActorConn) PageInfo() *pageInfo    { return c.pi }
func (c *gitActorConn) TotalCount() int32      { return int32(c.total) }

type gitActorRes struct {
	h           *Hub
	name, email string
	date        time.Time
}

func (a *gitActorRes) AvatarUrl(args struct{ Size *int32 }) gqlURI {
	if u := a.h.userByEmail(a.email); u != nil {
		return gqlURI(fmt.Sprintf("%s/avatars/u/%d", a.h.BaseURL(), u.id))
	}
	return gqlURI(a.h.BaseURL() + "/avatars/u/0")
}
func (a *gitActorRes) Date() *gqlGitTimestamp {
	if a.date.IsZero() {
		return nil
	}
	return &gqlGitTimestamp{a.date}
}
func (a *gitActorRes) Email() *string { return strp(a.email) }
func (a *gitActorRes) Name() *string  { return strp(a.name) }
func (a *gitActorRes) User() *userRes {
	if u := a.h.userByEmail(a.email); u != nil {
		return &userRes{h: a.h, u: u}
	}
	return nil
}

// gqlGitTimestamp is an ISO-8601 time as git recorded it.
type gqlGitTimestamp struct{ time.Time }

func (gqlGitTimestamp) ImplementsGraphQLType(name string) bool { return name == "GitTimestamp" }
func (t *gqlGitTimestamp) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("wrong type for GitTimestamp: %T", input)
	}
	v, err := time.Parse(time.RFC3339, s)
	t.Time = v
	return err
}
func (t gqlGitTimestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.Format(time.RFC3339) + `"`), nil
}

// Checks: the emulator has no branch protection, so no check is required.

type requiredArgs struct {
	PullRequestId     *graphqlgo.ID
	PullRequestNumber *int32
}

func (r *checkRunRes) IsRequired(args requiredArgs) bool { return false }
func (s *statusRes) IsRequired(args requiredArgs) bool   { return false }

// Issue comments: what gh shows of them.

// IncludesCreatedEdit is true once the comment was edited (gh shows
// "edited").
func (r *issueCommentRes) IncludesCreatedEdit() bool {
	_, ok := editedComments.Load(r.c)
	return ok
}
func (r *issueCommentRes) IsMinimized() bool                    { return false }
func (r *issueCommentRes) MinimizedReason() *string             { return nil }
func (r *issueCommentRes) ReactionGroups() *[]*reactionGroupRes { return reactionGroups() }
func (r *issueCommentRes) ViewerDidAuthor(ctx context.Context) bool {
	return ctxUser(ctx) == r.c.author
}
func (r *issueCommentRes) Url() gqlURI {
	p := r.p
	if p == nil {
		p = r.h.prOfIssueComment(r.c)
	}
	if p == nil {
		return gqlURI(r.h.BaseURL())
	}
	return gqlURI(fmt.Sprintf("%s#issuecomment-%d", r.h.PRURL(p.repo.owner, p.repo.name, p.number), r.c.id))
}

func (h *Hub) prOfIssueComment(c *issueComment) *pr {
	for _, rp := range h.repos {
		for _, p := range rp.prs {
			for _, x := range p.issueComments {
				if x == c {
					return p
				}
			}
		}
	}
	return nil
}

// Mutations gh sends: addComment (`gh pr comment`) and addPullRequestReview
// (`gh pr review`). serveGraphQL holds h.mu for writing.

func (r *rootResolver) AddComment(ctx context.Context, args struct {
	Input struct {
		Body             string
		ClientMutationId *string
		SubjectId        graphqlgo.ID
	}
}) (*addCommentPayload, error) {
	h := r.h
	in := args.Input
	p, _ := h.nodes[string(in.SubjectId)].(*pr)
	if p == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", in.SubjectId)
	}
	if strings.TrimSpace(in.Body) == "" {
		return nil, unprocessablef("Body can't be blank")
	}
	ic := h.addIssueCommentLocked(ctxUser(ctx), p, in.Body)
	return &addCommentPayload{h: h, p: p, c: ic, cmid: in.ClientMutationId}, nil
}

type addCommentPayload struct {
	h    *Hub
	p    *pr
	c    *issueComment
	cmid *string
}

func (a *addCommentPayload) ClientMutationId() *string { return a.cmid }
func (a *addCommentPayload) CommentEdge() *issueCommentEdge {
	return &issueCommentEdge{cursor: cursor(len(a.p.issueComments) - 1), node: &issueCommentRes{h: a.h, p: a.p, c: a.c}}
}
func (a *addCommentPayload) Subject() *nodeRes { return &nodeRes{h: a.h, v: a.p} }

type issueCommentEdge struct {
	cursor string
	node   *issueCommentRes
}

func (e *issueCommentEdge) Cursor() string         { return e.cursor }
func (e *issueCommentEdge) Node() *issueCommentRes { return e.node }

func (r *rootResolver) AddPullRequestReview(ctx context.Context, args struct {
	Input struct {
		Body             *string
		ClientMutationId *string
		CommitOID        *gqlGitObjectID
		Event            *string
		PullRequestId    graphqlgo.ID
	}
}) (*addReviewPayload, error) {
	h := r.h
	in := args.Input
	u := ctxUser(ctx)
	p, _ := h.nodes[string(in.PullRequestId)].(*pr)
	if p == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", in.PullRequestId)
	}
	if in.Event == nil || *in.Event == "DISMISS" {
		// Without an event GitHub starts a pending review, which the
		// emulator does not keep.
		return nil, unprocessablef("fakehub takes submitted reviews only: give event APPROVE, COMMENT or REQUEST_CHANGES")
	}
	body := ""
	if in.Body != nil {
		body = *in.Body
	}
	if *in.Event == "COMMENT" && strings.TrimSpace(body) == "" {
		return nil, unprocessablef("Review body can't be blank when commenting")
	}
	state, err := reviewStateOf(u, p, *in.Event, body)
	if err != nil {
		return nil, unprocessablef("Review %s", err)
	}
	commit := p.headSHA
	if in.CommitOID != nil && *in.CommitOID != "" {
		commit = string(*in.CommitOID)
	}
	rv := h.addReviewLocked(u, p, state, body, commit, nil, nil)
	return &addReviewPayload{h: h, rv: rv, cmid: in.ClientMutationId}, nil
}

type addReviewPayload struct {
	h    *Hub
	rv   *review
	cmid *string
}

func (a *addReviewPayload) ClientMutationId() *string     { return a.cmid }
func (a *addReviewPayload) PullRequestReview() *reviewRes { return &reviewRes{h: a.h, rv: a.rv} }

// Pull request: its base branch and the branch's protection.

func (r *prRes) BaseRef(ctx context.Context) *refRes {
	sha, err := revParse(ctx, r.p.repo.dir, "refs/heads/"+r.p.baseRef)
	if err != nil {
		return nil
	}
	return &refRes{h: r.h, rp: r.p.repo, name: r.p.baseRef, sha: sha}
}

// BranchProtectionRule is the emulator's one rule, "require branches to be
// up to date" (RepoOptions.RequireUpToDate); null without it.
func (r *refRes) BranchProtectionRule() *protectionRes {
	if !r.rp.requireUpToDate {
		return nil
	}
	return &protectionRes{rp: r.rp}
}

type protectionRes struct{ rp *repo }

func (p *protectionRes) ID() graphqlgo.ID                 { return graphqlgo.ID("BPR_fh" + p.rp.nodeID()) }
func (p *protectionRes) RequiresStrictStatusChecks() bool { return true }

func (n *nodeRes) ToBranchProtectionRule() (*protectionRes, bool) { return nil, false }

// Search: pull requests only, as GitHub's issue search finds them for the
// queries gh builds (gh pr status; gh pr list --search, --label, --author,
// --draft; gh search prs). Words, or a "quoted phrase", must appear in the
// title, body or conversation (in:title,body,comments narrows that); the
// qualifiers, each negated by a leading "-", are repo:, user:, org:,
// is:/state:, type:, draft:, author: (app/NAME for a bot), assignee:
// (nobody is assigned), review-requested:, reviewed-by:, review:,
// commenter:, mentions:, involves:, head:, base:, label: (a,b: either),
// no:, milestone: (there are none) and sort:. An unknown qualifier is
// refused rather than ignored, so a query never silently matches more.

func (r *rootResolver) Search(ctx context.Context, args struct {
	After  *string
	Before *string
	First  *int32
	Last   *int32
	Query  string
	Type   string
}) (*searchConn, error) {
	h := r.h
	var ps []*pr
	if args.Type == "ISSUE" {
		q, err := h.parseSearchQuery(ctxUser(ctx), args.Query)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(h.repos))
		for n := range h.repos {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, p := range h.repos[n].prs {
				if q.match(p) {
					ps = append(ps, p)
				}
			}
		}
		// Newest first, as GitHub's default "best match" does for
		// qualifier-only queries, unless sort: says otherwise.
		sort.SliceStable(ps, func(i, j int) bool {
			if q.less != nil {
				if q.less(ps[i], ps[j]) {
					return true
				}
				if q.less(ps[j], ps[i]) {
					return false
				}
			}
			if !ps[i].createdAt.Equal(ps[j].createdAt) {
				return ps[i].createdAt.After(ps[j].createdAt)
			}
			return ps[i].id > ps[j].id
		})
	}
	s, e, pi, err := paginate(len(ps), pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "search")
	if err != nil {
		return nil, err
	}
	return &searchConn{c: newPRConn(h, ps, s, e, pi)}, nil
}

// searchTerm is one word of a search query: a qualifier key:val, or a word
// or phrase (key "").
type searchTerm struct {
	neg      bool
	key, val string
}

// searchTerms splits a query on white space outside double quotes; a
// quote before any colon makes the term a phrase ("a:b" is no qualifier).
func searchTerms(q string) []searchTerm {
	var out []searchTerm
	rs := []rune(q)
	for i := 0; i < len(rs); {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		var t searchTerm
		var b strings.Builder
		inQuote, keyed, quoted := false, false, false
		for ; i < len(rs) && (inQuote || !unicode.IsSpace(rs[i])); i++ {
			switch c := rs[i]; {
			case c == '"':
				inQuote, keyed, quoted = !inQuote, true, true
			case c == ':' && !keyed && b.Len() > 0:
				t.key, keyed = b.String(), true
				b.Reset()
			default:
				b.WriteRune(c)
			}
		}
		t.val = b.String()
		if k, ok := strings.CutPrefix(t.key, "-"); ok {
			t.neg, t.key = true, k
		} else if t.key == "" && !quoted && strings.HasPrefix(t.val, "-") && len(t.val) > 1 {
			t.neg, t.val = true, t.val[1:]
		}
		t.key = strings.ToLower(t.key)
		if t.val != "" || t.key != "" {
			out = append(out, t)
		}
	}
	return out
}

type searchQuery struct {
	match func(*pr) bool
	less  func(a, b *pr) bool // sort:; nil for the default order
}

func (h *Hub) parseSearchQuery(viewer *user, q string) (*searchQuery, error) {
	var tests []func(*pr) bool
	var less func(a, b *pr) bool
	who := func(v string) *user {
		if v == "@me" {
			return viewer
		}
		if app, ok := strings.CutPrefix(v, "app/"); ok {
			if u := h.userByLogin(strings.TrimSuffix(app, "[bot]")); u != nil && u.typ == "Bot" {
				return u
			}
			return nil
		}
		return h.userByLogin(strings.TrimSuffix(v, "[bot]"))
	}
	commented := func(p *pr, u *user) bool {
		for _, c := range p.issueComments {
			if c.author == u {
				return true
			}
		}
		return false
	}
	mentions := func(p *pr, u *user) bool {
		at := "@" + strings.ToLower(u.login)
		if strings.Contains(strings.ToLower(p.body), at) {
			return true
		}
		for _, c := range p.issueComments {
			if strings.Contains(strings.ToLower(c.body), at) {
				return true
			}
		}
		return false
	}
	scope := map[string]bool{}
	terms := searchTerms(q)
	for _, t := range terms {
		if t.key == "in" {
			for _, s := range strings.Split(strings.ToLower(t.val), ",") {
				if s != "title" && s != "body" && s != "comments" {
					return nil, unprocessablef("fakehub search does not know in:%s", s)
				}
				scope[s] = true
			}
		}
	}
	if len(scope) == 0 {
		scope = map[string]bool{"title": true, "body": true, "comments": true}
	}
	for _, t := range terms {
		tok := t.key + ":" + t.val
		var test func(*pr) bool
		switch v := t.val; t.key {
		case "":
			w := strings.ToLower(v)
			test = func(p *pr) bool {
				if scope["title"] && strings.Contains(strings.ToLower(p.title), w) ||
					scope["body"] && strings.Contains(strings.ToLower(p.body), w) {
					return true
				}
				if scope["comments"] {
					for _, c := range p.issueComments {
						if strings.Contains(strings.ToLower(c.body), w) {
							return true
						}
					}
				}
				return false
			}
		case "in":
			continue
		case "sort":
			field, dir, _ := strings.Cut(strings.ToLower(v), "-")
			key := map[string]func(*pr) int64{
				"created":  func(p *pr) int64 { return p.createdAt.UnixNano() },
				"updated":  func(p *pr) int64 { return p.updatedAt.UnixNano() },
				"comments": func(p *pr) int64 { return int64(len(p.issueComments)) },
			}[field]
			if key == nil || (dir != "" && dir != "asc" && dir != "desc") {
				return nil, unprocessablef("fakehub search does not know %s", tok)
			}
			// Ties go by creation, in the same direction.
			less = func(a, b *pr) bool {
				ka, kb := key(a), key(b)
				if ka == kb {
					ka, kb = a.id, b.id
				}
				if dir == "asc" {
					return ka < kb
				}
				return ka > kb
			}
			continue
		case "repo":
			test = func(p *pr) bool { return strings.EqualFold(p.repo.fullName(), v) }
		case "user", "org":
			test = func(p *pr) bool { return strings.EqualFold(p.repo.owner, v) }
		case "is", "state", "type":
			lv := strings.ToLower(v)
			switch {
			case lv == "pr" && t.key != "state", lv == "public" && t.key == "is":
				test = func(*pr) bool { return true }
			case lv == "issue" && t.key != "state", lv == "private" && t.key == "is":
				test = func(*pr) bool { return false }
			case (lv == "open" || lv == "closed") && t.key != "type":
				st := strings.ToUpper(lv)
				test = func(p *pr) bool { return p.state == st || (st == "CLOSED" && p.state == "MERGED") }
			case lv == "merged" && t.key == "is":
				test = func(p *pr) bool { return p.state == "MERGED" }
			case lv == "unmerged" && t.key == "is":
				test = func(p *pr) bool { return p.state == "CLOSED" }
			case lv == "draft" && t.key == "is":
				test = func(p *pr) bool { return p.draft }
			default:
				return nil, unprocessablef("fakehub search does not know %s", tok)
			}
		case "draft":
			if v != "true" && v != "false" {
				return nil, unprocessablef("fakehub search does not know %s", tok)
			}
			want := v == "true"
			test = func(p *pr) bool { return p.draft == want }
		case "author":
			u := who(v)
			test = func(p *pr) bool { return u != nil && p.author == u }
		case "assignee", "milestone":
			test = func(*pr) bool { return false }
		case "review-requested":
			u := who(v)
			test = func(p *pr) bool { return u != nil && containsUser(p.requested, u) }
		case "reviewed-by":
			u := who(v)
			test = func(p *pr) bool {
				for _, rv := range p.reviews {
					if u != nil && rv.author == u {
						return true
					}
				}
				return false
			}
		case "review":
			lv := strings.ToLower(v)
			if lv != "none" && lv != "required" && lv != "approved" && lv != "changes_requested" {
				return nil, unprocessablef("fakehub search does not know %s", tok)
			}
			// The emulator requires no reviews, so no PR's decision is
			// REVIEW_REQUIRED.
			want := strings.ToUpper(lv)
			if lv == "required" {
				want = "REVIEW_REQUIRED"
			}
			test = func(p *pr) bool {
				if lv == "none" {
					return len(p.reviews) == 0
				}
				d := reviewsVerdict(p)
				if r := reviewDecision(p); r != nil {
					d = r // under a rule, REVIEW_REQUIRED too
				}
				return d != nil && *d == want
			}
		case "commenter":
			u := who(v)
			test = func(p *pr) bool { return u != nil && commented(p, u) }
		case "mentions":
			u := who(v)
			test = func(p *pr) bool { return u != nil && mentions(p, u) }
		case "involves":
			u := who(v)
			test = func(p *pr) bool { return u != nil && (p.author == u || commented(p, u) || mentions(p, u)) }
		case "head":
			test = func(p *pr) bool { return p.headRef == v }
		case "base":
			test = func(p *pr) bool { return p.baseRef == v }
		case "label":
			names := strings.Split(v, ",")
			test = func(p *pr) bool { return hasAnyLabel(p, names) }
		case "no":
			switch strings.ToLower(v) {
			case "label":
				test = func(p *pr) bool { return len(p.labels) == 0 }
			case "assignee", "milestone", "project":
				test = func(*pr) bool { return true }
			default:
				return nil, unprocessablef("fakehub search does not know %s", tok)
			}
		default:
			return nil, unprocessablef("fakehub search does not know the qualifier %s", tok)
		}
		if t.neg {
			pos := test
			test = func(p *pr) bool { return !pos(p) }
		}
		tests = append(tests, test)
	}
	return &searchQuery{less: less, match: func(p *pr) bool {
		for _, t := range tests {
			if !t(p) {
				return false
			}
		}
		return true
	}}, nil
}

type searchConn struct{ c *prConn }

func (s *searchConn) IssueCount() int32   { return int32(s.c.total) }
func (s *searchConn) PageInfo() *pageInfo { return s.c.pi }
func (s *searchConn) Nodes() *[]*searchItem {
	var out []*searchItem
	for _, n := range s.c.nodes {
		out = append(out, &searchItem{p: n})
	}
	return &out
}
func (s *searchConn) Edges() *[]*searchEdge {
	var out []*searchEdge
	for _, e := range s.c.edges {
		out = append(out, &searchEdge{cursor: e.cursor, node: &searchItem{p: e.node}})
	}
	return &out
}

type searchEdge struct {
	cursor string
	node   *searchItem
}

func (e *searchEdge) Cursor() string    { return e.cursor }
func (e *searchEdge) Node() *searchItem { return e.node }

type searchItem struct{ p *prRes }

func (i *searchItem) ToPullRequest() (*prRes, bool) { return i.p, true }

// setPRStateLocked closes (open false) an open PR or reopens a closed one,
// as REST's PATCH state and GraphQL's closePullRequest and
// reopenPullRequest do; a merged PR stays merged.
func (h *Hub) setPRStateLocked(p *pr, by *user, open bool) {
	switch {
	case !open && p.state == "OPEN":
		p.state, p.closedAt = "CLOSED", h.now()
		h.addEventLocked(p, &issueEvent{event: "closed", actor: by})
		h.publishLocked(Event{Kind: "state", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: by.restLogin, Detail: "closed"})
	case open && p.state == "CLOSED":
		p.state, p.closedAt = "OPEN", time.Time{}
		h.addEventLocked(p, &issueEvent{event: "reopened", actor: by})
		h.publishLocked(Event{Kind: "state", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: by.restLogin, Detail: "reopened"})
	}
}

type prStateInput struct {
	Input struct {
		ClientMutationId *string
		PullRequestId    graphqlgo.ID
	}
}

// ClosePullRequest is `gh pr close`.
func (r *rootResolver) ClosePullRequest(ctx context.Context, args prStateInput) (*prStatePayload, error) {
	return r.setPRState(ctx, args, false)
}

// ReopenPullRequest is `gh pr reopen`.
func (r *rootResolver) ReopenPullRequest(ctx context.Context, args prStateInput) (*prStatePayload, error) {
	return r.setPRState(ctx, args, true)
}

func (r *rootResolver) setPRState(ctx context.Context, args prStateInput, open bool) (*prStatePayload, error) {
	h := r.h
	u := ctxUser(ctx)
	p, _ := h.nodes[string(args.Input.PullRequestId)].(*pr)
	if p == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", args.Input.PullRequestId)
	}
	if !u.canWrite() && u != p.author {
		op := "ClosePullRequest"
		if open {
			op = "ReopenPullRequest"
		}
		return nil, forbiddenf("%s does not have the correct permissions to execute `%s`", u.login, op)
	}
	if open && p.state == "MERGED" {
		return nil, unprocessablef("Could not open the pull request: it is merged")
	}
	h.setPRStateLocked(p, u, open)
	p.updatedAt = h.now()
	return &prStatePayload{h: h, p: p, cmid: args.Input.ClientMutationId}, nil
}

type prStatePayload struct {
	h    *Hub
	p    *pr
	u    *user // who changed it (UpdatePullRequestPayload.actor)
	cmid *string
}

func (a *prStatePayload) Actor() *actorRes          { return actorOf(a.h, a.u) }
func (a *prStatePayload) ClientMutationId() *string { return a.cmid }
func (a *prStatePayload) PullRequest() *prRes       { return &prRes{h: a.h, p: a.p} }

// MergePullRequest is `gh pr merge` (no auto-merge, no merge queue).
func (r *rootResolver) MergePullRequest(ctx context.Context, args struct {
	Input struct {
		AuthorEmail      *string
		ClientMutationId *string
		CommitBody       *string
		CommitHeadline   *string
		ExpectedHeadOid  *gqlGitObjectID
		MergeMethod      string // MERGE by default
		PullRequestId    graphqlgo.ID
	}
}) (*mergePayload, error) {
	h := r.h
	in := args.Input
	u := ctxUser(ctx)
	p, _ := h.nodes[string(in.PullRequestId)].(*pr)
	if p == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", in.PullRequestId)
	}
	if !u.canWrite() {
		return nil, forbiddenf("%s does not have the correct permissions to execute `MergePullRequest`", u.login)
	}
	method := strings.ToLower(in.MergeMethod)
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	expect := ""
	if in.ExpectedHeadOid != nil {
		expect = string(*in.ExpectedHeadOid)
	}
	if _, err := h.mergeLocked(ctx, u, p, method, deref(in.CommitHeadline), deref(in.CommitBody), expect); err != nil {
		return nil, unprocessablef("%s", err.msg)
	}
	// The other PRs on the base learn of the new base tip once this
	// request has let go of h.mu, as after a REST merge.
	if !h.closed {
		rp := p.repo
		h.Go(func(ctx context.Context) {
			if refs, err := readRefs(ctx, rp.dir); err == nil {
				h.refsChanged(ctx, rp, refs, u)
			}
		})
	}
	return &mergePayload{h: h, p: p, u: u, cmid: in.ClientMutationId}, nil
}

type mergePayload struct {
	h    *Hub
	p    *pr
	u    *user
	cmid *string
}

func (a *mergePayload) Actor() *actorRes          { return actorOf(a.h, a.u) }
func (a *mergePayload) ClientMutationId() *string { return a.cmid }
func (a *mergePayload) PullRequest() *prRes       { return &prRes{h: a.h, p: a.p} }

// What gh pr edit reads before it writes: the repository's labels and
// assignable users, the owner's teams (an organization's only) and the
// PR's project (v2) items.

type labelOrder struct {
	Direction string
	Field     string
}

// Labels is the repository's labels, oldest first by default (a label's id
// grows with its creation), filtered by query on the name.
func (r *repoRes) Labels(args struct {
	After   *string
	Before  *string
	First   *int32
	Last    *int32
	OrderBy *labelOrder
	Query   *string
}) (*labelConn, error) {
	var ls []*label
	for _, l := range r.rp.labels {
		if args.Query != nil && !strings.Contains(strings.ToLower(l.name), strings.ToLower(*args.Query)) {
			continue
		}
		ls = append(ls, l)
	}
	byName := args.OrderBy != nil && args.OrderBy.Field == "NAME"
	desc := args.OrderBy != nil && args.OrderBy.Direction == "DESC"
	sort.Slice(ls, func(i, j int) bool {
		a, b := ls[i], ls[j]
		if desc {
			a, b = b, a
		}
		if byName && !strings.EqualFold(a.name, b.name) {
			return strings.ToLower(a.name) < strings.ToLower(b.name)
		}
		return a.id < b.id
	})
	s, e, pi, err := paginate(len(ls), pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "labels")
	if err != nil {
		return nil, err
	}
	c := &labelConn{pi: pi, total: len(ls)}
	for _, l := range ls[s:e] {
		c.nodes = append(c.nodes, &labelRes{l: l})
	}
	return c, nil
}

// AssignableUsers is who can be assigned and asked to review: the users
// (not bots) with write access, by login, filtered by query on the login
// or name.
func (r *repoRes) AssignableUsers(args struct {
	After  *string
	Before *string
	First  *int32
	Last   *int32
	Query  *string
}) (*userConn, error) {
	var us []*user
	for _, u := range r.h.assignableUsers() {
		q := ""
		if args.Query != nil {
			q = strings.ToLower(*args.Query)
		}
		if strings.Contains(strings.ToLower(u.login), q) || strings.Contains(strings.ToLower(u.name), q) {
			us = append(us, u)
		}
	}
	s, e, pi, err := paginate(len(us), pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "assignableUsers")
	if err != nil {
		return nil, err
	}
	c := &userConn{pi: pi, total: len(us)}
	for _, u := range us[s:e] {
		c.nodes = append(c.nodes, &userRes{h: r.h, u: u})
	}
	return c, nil
}

// assignableUsers is every known user with write access, by login.
func (h *Hub) assignableUsers() []*user {
	var us []*user
	for _, u := range h.users {
		if u.typ == "User" && u.canWrite() && !containsUser(us, u) {
			us = append(us, u)
		}
	}
	sort.Slice(us, func(i, j int) bool { return us[i].login < us[j].login })
	return us
}

// userByNodeID resolves a user's global id (requestReviews' userIds).
func (h *Hub) userByNodeID(id string) *user {
	for _, u := range h.users {
		if u.nodeID() == id {
			return u
		}
	}
	return nil
}

// Organization: every repository owner is a user, so this answers as
// GitHub does for a user's login.
func (r *rootResolver) Organization(args struct{ Login string }) (*orgRes, error) {
	return nil, notFoundf("Could not resolve to an Organization with the login of '%s'.", args.Login)
}

type teamOrder struct {
	Direction string
	Field     string
}

func (o *orgRes) Teams(args struct {
	After   *string
	Before  *string
	First   *int32
	Last    *int32
	OrderBy *teamOrder
	Query   *string
}) (*teamConn, error) {
	_, _, pi, err := paginate(0, pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "teams")
	if err != nil {
		return nil, err
	}
	return &teamConn{pi: pi}, nil
}

type teamConn struct{ pi *pageInfo }

func (c *teamConn) Nodes() *[]*teamRes  { return &[]*teamRes{} }
func (c *teamConn) PageInfo() *pageInfo { return c.pi }
func (c *teamConn) TotalCount() int32   { return 0 }

// ProjectItems: the emulator keeps no projects (v2), so a PR is in none.
func (r *prRes) ProjectItems(args struct {
	After           *string
	Before          *string
	First           *int32
	IncludeArchived bool
	Last            *int32
}) (*projectV2ItemConn, error) {
	_, _, pi, err := paginate(0, pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "projectItems")
	if err != nil {
		return nil, err
	}
	return &projectV2ItemConn{pi: pi}, nil
}

type projectV2ItemConn struct{ pi *pageInfo }

func (c *projectV2ItemConn) Nodes() *[]*projectV2ItemRes { return &[]*projectV2ItemRes{} }
func (c *projectV2ItemConn) PageInfo() *pageInfo         { return c.pi }
func (c *projectV2ItemConn) TotalCount() int32           { return 0 }

// projectV2ItemRes and projectV2Res are served for their schema only.
type projectV2ItemRes struct{}

func (projectV2ItemRes) ID() graphqlgo.ID       { return "" }
func (projectV2ItemRes) Project() *projectV2Res { return &projectV2Res{} }
func (projectV2Res) ID() graphqlgo.ID           { return "" }
func (projectV2Res) Title() string              { return "" }

type projectV2Res struct{}

// labelableRes is the Labelable a label mutation answers: always a PR.
type labelableRes struct{ pr *prRes }

func (l *labelableRes) Labels(args pageArgs) (*labelConn, error) { return l.pr.Labels(args) }
func (l *labelableRes) ToPullRequest() (*prRes, bool)            { return l.pr, true }
