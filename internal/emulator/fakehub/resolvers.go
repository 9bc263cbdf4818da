package fakehub

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	graphqlgo "github.com/graph-gophers/graphql-go"
)

// Resolvers for schema.graphql. serveGraphQL holds h.mu for the whole
// request (read for queries, write for mutations), so resolvers read and
// write the model without locking; git work (merge state, line mapping,
// commit metadata) depends only on immutable commit ids.

type rootResolver struct{ h *Hub }

func (r *rootResolver) Node(ctx context.Context, args struct{ ID graphqlgo.ID }) (*nodeRes, error) {
	h := r.h
	v := h.nodes[string(args.ID)]
	if v == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", args.ID)
	}
	if p, ok := v.(*pr); ok {
		h.readOf(ctx, p)
	}
	return &nodeRes{h: h, v: v}, nil
}

func (r *rootResolver) RateLimit(ctx context.Context, args struct{ DryRun bool }) *rateLimitRes {
	ex := execOf(ctx)
	return &rateLimitRes{used: ex.rateUsed, reset: ex.rateReset, cost: ex.cost}
}

func (r *rootResolver) Repository(ctx context.Context, args struct {
	FollowRenames bool
	Name          string
	Owner         string
}) (*repoRes, error) {
	h := r.h
	rp := h.repoLocked(args.Owner, args.Name)
	if rp == nil {
		return nil, notFoundf("Could not resolve to a Repository with the name '%s/%s'.", args.Owner, args.Name)
	}
	return &repoRes{h: h, rp: rp}, nil
}

func (r *rootResolver) Viewer(ctx context.Context) *userRes {
	return &userRes{h: r.h, u: ctxUser(ctx)}
}

type rateLimitRes struct {
	used  int
	reset time.Time
	cost  int
}

func (r *rateLimitRes) Cost() int32      { return int32(max(1, r.cost)) }
func (r *rateLimitRes) Limit() int32     { return rateLimit }
func (r *rateLimitRes) NodeCount() int32 { return 100 }
func (r *rateLimitRes) Remaining() int32 { return int32(max(0, rateLimit-r.used)) }
func (r *rateLimitRes) Used() int32      { return int32(r.used) }
func (r *rateLimitRes) ResetAt() gqlDateTime {
	return dt(r.reset)
}

// nodeRes resolves the Node interface.
type nodeRes struct {
	h *Hub
	v any
}

func (n *nodeRes) ID() graphqlgo.ID {
	switch v := n.v.(type) {
	case *pr:
		return graphqlgo.ID(v.nodeID())
	case *thread:
		return graphqlgo.ID(v.nodeID())
	case *review:
		return graphqlgo.ID(v.nodeID())
	case *reviewComment:
		return graphqlgo.ID(v.nodeID())
	case *repo:
		return graphqlgo.ID(v.nodeID())
	case *checkRun:
		return graphqlgo.ID(v.nodeID())
	}
	return ""
}

func (n *nodeRes) ToPullRequest() (*prRes, bool) {
	p, ok := n.v.(*pr)
	return &prRes{h: n.h, p: p}, ok
}
func (n *nodeRes) ToPullRequestReviewThread() (*threadRes, bool) {
	t, ok := n.v.(*thread)
	return &threadRes{h: n.h, t: t}, ok
}
func (n *nodeRes) ToPullRequestReview() (*reviewRes, bool) {
	v, ok := n.v.(*review)
	return &reviewRes{h: n.h, rv: v}, ok
}
func (n *nodeRes) ToPullRequestReviewComment() (*commentRes, bool) {
	v, ok := n.v.(*reviewComment)
	return &commentRes{h: n.h, c: v}, ok
}
func (n *nodeRes) ToRepository() (*repoRes, bool) {
	v, ok := n.v.(*repo)
	return &repoRes{h: n.h, rp: v}, ok
}
func (n *nodeRes) ToCheckRun() (*checkRunRes, bool) {
	v, ok := n.v.(*checkRun)
	return &checkRunRes{h: n.h, c: v}, ok
}
func (n *nodeRes) ToIssueComment() (*issueCommentRes, bool) {
	v, ok := n.v.(*issueComment)
	return &issueCommentRes{h: n.h, c: v}, ok
}
func (n *nodeRes) ToUser() (*userRes, bool)                   { return nil, false }
func (n *nodeRes) ToBot() (*botRes, bool)                     { return nil, false }
func (n *nodeRes) ToTeam() (*teamRes, bool)                   { return nil, false }
func (n *nodeRes) ToRef() (*refRes, bool)                     { return nil, false }
func (n *nodeRes) ToLabel() (*labelRes, bool)                 { return nil, false }
func (n *nodeRes) ToReviewRequest() (*reviewRequestRes, bool) { return nil, false }
func (n *nodeRes) ToPullRequestCommit() (*prCommitRes, bool)  { return nil, false }
func (n *nodeRes) ToCommit() (*commitRes, bool)               { return nil, false }
func (n *nodeRes) ToStatusCheckRollup() (*rollupRes, bool)    { return nil, false }
func (n *nodeRes) ToCheckSuite() (*checkSuiteRes, bool)       { return nil, false }
func (n *nodeRes) ToApp() (*appRes, bool)                     { return nil, false }
func (n *nodeRes) ToWorkflowRun() (*workflowRunRes, bool)     { return nil, false }
func (n *nodeRes) ToWorkflow() (*workflowRes, bool)           { return nil, false }
func (n *nodeRes) ToStatusContext() (*statusRes, bool)        { return nil, false }

// Actors.

type actorRes struct {
	h *Hub
	u *user
}

func actorOf(h *Hub, u *user) *actorRes {
	if u == nil {
		return nil
	}
	return &actorRes{h: h, u: u}
}

func (a *actorRes) Login() string { return a.u.login }
func (a *actorRes) ToUser() (*userRes, bool) {
	return &userRes{h: a.h, u: a.u}, a.u.typ != "Bot"
}
func (a *actorRes) ToBot() (*botRes, bool) {
	return &botRes{h: a.h, u: a.u}, a.u.typ == "Bot"
}

type userRes struct {
	h *Hub
	u *user
}

func (u *userRes) AvatarUrl(args struct{ Size *int32 }) gqlURI {
	return gqlURI(fmt.Sprintf("%s/avatars/u/%d", u.h.BaseURL(), u.u.id))
}
func (u *userRes) DatabaseId() *int32 { n := int32(u.u.id); return &n }
func (u *userRes) ID() graphqlgo.ID   { return graphqlgo.ID(u.u.nodeID()) }
func (u *userRes) Login() string      { return u.u.login }
func (u *userRes) Name() *string {
	if u.u.name == "" {
		return nil
	}
	return &u.u.name
}
func (u *userRes) ResourcePath() gqlURI { return gqlURI("/" + u.u.login) }
func (u *userRes) Url() gqlURI          { return gqlURI(u.h.BaseURL() + "/" + u.u.login) }

type botRes struct {
	h *Hub
	u *user
}

func (b *botRes) AvatarUrl(args struct{ Size *int32 }) gqlURI {
	return gqlURI(fmt.Sprintf("%s/avatars/in/%d", b.h.BaseURL(), b.u.id))
}
func (b *botRes) DatabaseId() *int32   { n := int32(b.u.id); return &n }
func (b *botRes) ID() graphqlgo.ID     { return graphqlgo.ID(b.u.nodeID()) }
func (b *botRes) Login() string        { return b.u.login }
func (b *botRes) ResourcePath() gqlURI { return gqlURI("/apps/" + b.u.login) }
func (b *botRes) Url() gqlURI          { return gqlURI(b.h.BaseURL() + "/apps/" + b.u.login) }

type teamRes struct{ slug string }

func (t *teamRes) ID() graphqlgo.ID { return graphqlgo.ID("T_fh" + t.slug) }
func (t *teamRes) Name() string     { return t.slug }
func (t *teamRes) Slug() string     { return t.slug }

type ownerRes struct {
	h *Hub
	u *user
}

func (o *ownerRes) Login() string    { return o.u.login }
func (o *ownerRes) ID() graphqlgo.ID { return graphqlgo.ID(o.u.nodeID()) }
func (o *ownerRes) ToUser() (*userRes, bool) {
	return &userRes{h: o.h, u: o.u}, true
}

// ownerUser names a repository owner; owners need not be known identities.
func (h *Hub) ownerUser(login string) *user {
	if u := h.userByLogin(login); u != nil {
		return u
	}
	f := fnv.New32a()
	f.Write([]byte(login))
	return &user{login: login, restLogin: login, id: int64(f.Sum32()%1e6) + 5000, typ: "User", perm: "admin"}
}

// Repository.

type repoRes struct {
	h  *Hub
	rp *repo
}

func (r *repoRes) DefaultBranchRef(ctx context.Context) *refRes {
	sha, err := revParse(ctx, r.rp.dir, "refs/heads/"+r.rp.defaultBranch)
	if err != nil {
		return nil
	}
	return &refRes{h: r.h, rp: r.rp, name: r.rp.defaultBranch, sha: sha}
}
func (r *repoRes) ID() graphqlgo.ID      { return graphqlgo.ID(r.rp.nodeID()) }
func (r *repoRes) IsPrivate() bool       { return false }
func (r *repoRes) Name() string          { return r.rp.name }
func (r *repoRes) NameWithOwner() string { return r.rp.fullName() }
func (r *repoRes) Owner() *ownerRes      { return &ownerRes{h: r.h, u: r.h.ownerUser(r.rp.owner)} }
func (r *repoRes) Url() gqlURI           { return gqlURI(r.h.BaseURL() + "/" + r.rp.fullName()) }
func (r *repoRes) ViewerPermission(ctx context.Context) *string {
	u := ctxUser(ctx)
	p := "READ"
	if u != nil && u.canWrite() {
		p = "WRITE"
	}
	if u != nil && strings.EqualFold(u.login, r.rp.owner) {
		p = "ADMIN"
	}
	return &p
}
func (r *repoRes) PullRequest(ctx context.Context, args struct{ Number int32 }) (*prRes, error) {
	p := r.rp.pr(int(args.Number))
	if p == nil {
		return nil, notFoundf("Could not resolve to a PullRequest with the number of %d.", args.Number)
	}
	r.h.readOf(ctx, p)
	return &prRes{h: r.h, p: p}, nil
}

type refRes struct {
	h         *Hub
	rp        *repo
	name, sha string
}

func (r *refRes) ID() graphqlgo.ID { return graphqlgo.ID("REF_fh" + r.rp.nodeID() + ":" + r.name) }
func (r *refRes) Name() string     { return r.name }
func (r *refRes) Target() *gitObjectRes {
	return &gitObjectRes{c: &commitRes{h: r.h, rp: r.rp, sha: r.sha}}
}

type gitObjectRes struct{ c *commitRes }

func (g *gitObjectRes) Oid() gqlGitObjectID          { return gqlGitObjectID(g.c.sha) }
func (g *gitObjectRes) ToCommit() (*commitRes, bool) { return g.c, true }

// Pull request.

type prRes struct {
	h *Hub
	p *pr
}

func (r *prRes) Author() *actorRes { return actorOf(r.h, r.p.author) }
func (r *prRes) BaseRefName() string {
	return r.p.baseRef
}
func (r *prRes) BaseRefOid() gqlGitObjectID {
	return gqlGitObjectID(r.p.baseSHA)
}
func (r *prRes) Body() string {
	return r.p.body
}
func (r *prRes) Closed() bool {
	return r.p.state != "OPEN"
}
func (r *prRes) CreatedAt() gqlDateTime { return dt(r.p.createdAt) }
func (r *prRes) UpdatedAt() gqlDateTime {
	return dt(r.p.updatedAt)
}
func (r *prRes) HeadRefName() string { return r.p.headRef }
func (r *prRes) HeadRefOid() gqlGitObjectID {
	return gqlGitObjectID(r.p.headSHA)
}
func (r *prRes) HeadRepository() *repoRes { return &repoRes{h: r.h, rp: r.p.repo} }
func (r *prRes) HeadRepositoryOwner() *ownerRes {
	return &ownerRes{h: r.h, u: r.h.ownerUser(r.p.repo.owner)}
}
func (r *prRes) ID() graphqlgo.ID        { return graphqlgo.ID(r.p.nodeID()) }
func (r *prRes) IsCrossRepository() bool { return false }
func (r *prRes) IsDraft() bool {
	return r.p.draft
}
func (r *prRes) Merged() bool {
	return r.p.state == "MERGED"
}
func (r *prRes) Number() int32 { return int32(r.p.number) }
func (r *prRes) State() string {
	return r.p.state
}
func (r *prRes) Title() string {
	return r.p.title
}
func (r *prRes) Url() gqlURI {
	return gqlURI(r.h.PRURL(r.p.repo.owner, r.p.repo.name, r.p.number))
}

func (r *prRes) Mergeable(ctx context.Context) (string, error) {
	m, _, err := r.h.lazyMergeStatus(ctx, r.p, mergeInputOf(r.p))
	return m, err
}

func (r *prRes) MergeStateStatus(ctx context.Context) (string, error) {
	_, s, err := r.h.lazyMergeStatus(ctx, r.p, mergeInputOf(r.p))
	return s, err
}

// lazyMergeStatus is mergeStatusOf as a read sees it: UNKNOWN twice while
// GitHub's background job has not computed it (fidelity.go).
func (h *Hub) lazyMergeStatus(ctx context.Context, p *pr, in mergeInput) (mergeable, state string, err error) {
	if !h.mergeComputed(ctx, p, in) {
		return "UNKNOWN", "UNKNOWN", nil
	}
	return h.mergeStatusOf(ctx, in)
}

// mergeInput is what merge status depends on, read under h.mu.
type mergeInput struct {
	state, base, head, dir, rollup string
	draft, requireUpToDate         bool
	// reviewBlocked: a review rule requires approvals the PR lacks.
	reviewBlocked bool
}

func mergeInputOf(p *pr) mergeInput {
	d := reviewDecision(p)
	return mergeInput{state: p.state, draft: p.draft, base: p.baseSHA, head: p.headSHA, dir: p.repo.dir, rollup: p.repo.rollupState(p.headSHA),
		requireUpToDate: p.repo.requireUpToDate, reviewBlocked: d != nil && *d != "APPROVED"}
}

func (h *Hub) mergeStatusOf(ctx context.Context, in mergeInput) (mergeable, state string, err error) {
	st, draft, base, head, dir, rollup := in.state, in.draft, in.base, in.head, in.dir, in.rollup
	if st == "MERGED" {
		return "UNKNOWN", "UNKNOWN", nil
	}
	mi, err := h.mergeState(ctx, dir, base, head)
	if err != nil {
		return "UNKNOWN", "UNKNOWN", nil
	}
	mergeable = "MERGEABLE"
	if mi.conflict {
		mergeable = "CONFLICTING"
	}
	switch {
	case draft:
		state = "DRAFT"
	case mi.conflict:
		state = "DIRTY"
	case mi.behind && in.requireUpToDate:
		// Without the protection rule GitHub does not call a branch
		// that lacks base commits BEHIND: the compare API tells.
		state = "BEHIND"
	case in.reviewBlocked:
		state = "BLOCKED"
	case rollup == "FAILURE" || rollup == "PENDING":
		// Mergeable, but a check or status is not green (failed, or not
		// finished yet): GitHub says CLEAN only when every one passed.
		state = "UNSTABLE"
	default:
		state = "CLEAN"
	}
	return mergeable, state, nil
}

func (r *prRes) Labels(args pageArgs) (*labelConn, error) {
	ls := r.p.labels
	s, e, pi, err := paginate(len(ls), args, "labels")
	if err != nil {
		return nil, err
	}
	c := &labelConn{pi: pi, total: len(ls)}
	for _, l := range ls[s:e] {
		c.nodes = append(c.nodes, &labelRes{l: l})
	}
	return c, nil
}

type labelConn struct {
	nodes []*labelRes
	pi    *pageInfo
	total int
}

func (c *labelConn) Nodes() *[]*labelRes { return &c.nodes }
func (c *labelConn) PageInfo() *pageInfo { return c.pi }
func (c *labelConn) TotalCount() int32   { return int32(c.total) }

type labelRes struct{ l *label }

func (l *labelRes) Color() string        { return l.l.color }
func (l *labelRes) Description() *string { return nil }
func (l *labelRes) ID() graphqlgo.ID     { return graphqlgo.ID(fmt.Sprintf("LA_fh%d", l.l.id)) }
func (l *labelRes) Name() string         { return l.l.name }

func (r *prRes) ReviewRequests(args pageArgs) (*reviewRequestConn, error) {
	us := r.p.requested
	s, e, _, err := paginate(len(us), args, "reviewRequests")
	if err != nil {
		return nil, err
	}
	c := &reviewRequestConn{total: len(us)}
	for _, u := range us[s:e] {
		c.nodes = append(c.nodes, &reviewRequestRes{h: r.h, p: r.p, u: u})
	}
	return c, nil
}

type reviewRequestConn struct {
	nodes []*reviewRequestRes
	total int
}

func (c *reviewRequestConn) Nodes() *[]*reviewRequestRes { return &c.nodes }
func (c *reviewRequestConn) TotalCount() int32           { return int32(c.total) }

type reviewRequestRes struct {
	h *Hub
	p *pr
	u *user
}

func (r *reviewRequestRes) ID() graphqlgo.ID {
	return graphqlgo.ID(fmt.Sprintf("RR_fh%d_%d", r.p.id, r.u.id))
}
func (r *reviewRequestRes) RequestedReviewer() *reviewerRes { return &reviewerRes{h: r.h, u: r.u} }

type reviewerRes struct {
	h *Hub
	u *user
}

func (r *reviewerRes) ToUser() (*userRes, bool) { return &userRes{h: r.h, u: r.u}, r.u.typ != "Bot" }
func (r *reviewerRes) ToBot() (*botRes, bool)   { return &botRes{h: r.h, u: r.u}, r.u.typ == "Bot" }
func (r *reviewerRes) ToTeam() (*teamRes, bool) { return nil, false }

func (r *prRes) Reviews(args struct {
	After  *string
	Author *string
	Before *string
	First  *int32
	Last   *int32
	States *[]string
}) (*reviewConn, error) {
	var rvs []*review
	for _, rv := range r.p.reviews {
		if args.Author != nil && !strings.EqualFold(rv.author.login, *args.Author) {
			continue
		}
		if args.States != nil && !containsStr(*args.States, rv.state) {
			continue
		}
		rvs = append(rvs, rv)
	}
	return r.reviewConn(rvs, pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "reviews")
}

// LatestReviews keeps each author's newest review, as GitHub's projection.
func (r *prRes) LatestReviews(args pageArgs) (*reviewConn, error) {
	var rvs []*review
	idx := map[*user]int{}
	for _, rv := range r.p.reviews {
		if i, ok := idx[rv.author]; ok {
			rvs[i] = rv
			continue
		}
		idx[rv.author] = len(rvs)
		rvs = append(rvs, rv)
	}
	return r.reviewConn(rvs, args, "latestReviews")
}

func (r *prRes) reviewConn(rvs []*review, args pageArgs, name string) (*reviewConn, error) {
	s, e, pi, err := paginate(len(rvs), args, name)
	if err != nil {
		return nil, err
	}
	c := &reviewConn{pi: pi, total: len(rvs)}
	for _, rv := range rvs[s:e] {
		c.nodes = append(c.nodes, &reviewRes{h: r.h, rv: rv})
	}
	return c, nil
}

// Repository is the PR's base repository.
func (r *prRes) Repository() *repoRes { return &repoRes{h: r.h, rp: r.p.repo} }

// Comments are the PR's top-level conversation comments.
func (r *prRes) Comments(args pageArgs) (*issueCommentConn, error) {
	cs := r.p.issueComments
	s, e, pi, err := paginate(len(cs), args, "comments")
	if err != nil {
		return nil, err
	}
	c := &issueCommentConn{pi: pi, total: len(cs)}
	for _, ic := range cs[s:e] {
		c.nodes = append(c.nodes, &issueCommentRes{h: r.h, p: r.p, c: ic})
	}
	return c, nil
}

type issueCommentConn struct {
	nodes []*issueCommentRes
	pi    *pageInfo
	total int
}

func (c *issueCommentConn) Nodes() *[]*issueCommentRes { return &c.nodes }
func (c *issueCommentConn) PageInfo() *pageInfo        { return c.pi }
func (c *issueCommentConn) TotalCount() int32          { return int32(c.total) }

type issueCommentRes struct {
	h *Hub
	p *pr // nil when reached through node(id)
	c *issueComment
}

func (r *issueCommentRes) Author() *actorRes { return actorOf(r.h, r.c.author) }
func (r *issueCommentRes) AuthorAssociation() string {
	if r.p == nil {
		return "NONE"
	}
	return association(r.p.repo, r.c.author)
}
func (r *issueCommentRes) Body() string               { return r.c.body }
func (r *issueCommentRes) CreatedAt() gqlDateTime     { return dt(r.c.createdAt) }
func (r *issueCommentRes) DatabaseId() *int32         { n := int32(r.c.id); return &n }
func (r *issueCommentRes) FullDatabaseId() *gqlBigInt { return bigint(r.c.id) }
func (r *issueCommentRes) ID() graphqlgo.ID           { return graphqlgo.ID(r.c.nodeID()) }
func (r *issueCommentRes) UpdatedAt() gqlDateTime     { return dt(r.c.updatedAt) }

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

type reviewConn struct {
	nodes []*reviewRes
	pi    *pageInfo
	total int
}

func (c *reviewConn) Nodes() *[]*reviewRes { return &c.nodes }
func (c *reviewConn) PageInfo() *pageInfo  { return c.pi }
func (c *reviewConn) TotalCount() int32    { return int32(c.total) }

type reviewRes struct {
	h  *Hub
	rv *review
}

func (r *reviewRes) Author() *actorRes { return actorOf(r.h, r.rv.author) }
func (r *reviewRes) AuthorAssociation() string {
	return association(r.rv.pr.repo, r.rv.author)
}
func (r *reviewRes) Body() string { return r.rv.body }
func (r *reviewRes) Commit() *commitRes {
	return &commitRes{h: r.h, rp: r.rv.pr.repo, sha: r.rv.commitSHA}
}
func (r *reviewRes) CreatedAt() gqlDateTime     { return dt(r.rv.submittedAt) }
func (r *reviewRes) DatabaseId() *int32         { n := int32(r.rv.id); return &n }
func (r *reviewRes) FullDatabaseId() *gqlBigInt { return bigint(r.rv.id) }
func (r *reviewRes) ID() graphqlgo.ID           { return graphqlgo.ID(r.rv.nodeID()) }
func (r *reviewRes) ReactionGroups() *[]*reactionGroupRes {
	var gs []*reactionGroupRes
	for _, c := range []string{"THUMBS_UP", "THUMBS_DOWN", "LAUGH", "HOORAY", "CONFUSED", "HEART", "ROCKET", "EYES"} {
		gs = append(gs, &reactionGroupRes{content: c})
	}
	return &gs
}
func (r *reviewRes) State() string             { return r.rv.state }
func (r *reviewRes) SubmittedAt() *gqlDateTime { return dtp(r.rv.submittedAt) }
func (r *reviewRes) Url() gqlURI {
	p := r.rv.pr
	return gqlURI(fmt.Sprintf("%s#pullrequestreview-%d", r.h.PRURL(p.repo.owner, p.repo.name, p.number), r.rv.id))
}

// Comments are the inline comments submitted with the review; under the
// lag fault they are absent (and counted 0 unless the count is current).
func (r *reviewRes) Comments(ctx context.Context, args pageArgs) (*commentConn, error) {
	var cs []*reviewComment
	rv := r.rv
	if !rv.lagging(r.h.readOf(ctx, rv.pr)) || rv.countCurrent {
		for _, t := range rv.pr.threads {
			for _, c := range t.comments {
				if c.reviewID == rv.id {
					cs = append(cs, c)
				}
			}
		}
	}
	s, e, pi, err := paginate(len(cs), args, "comments")
	if err != nil {
		return nil, err
	}
	c := &commentConn{pi: pi, total: len(cs)}
	for i := s; i < e; i++ {
		c.nodes = append(c.nodes, &commentRes{h: r.h, c: cs[i]})
		c.edges = append(c.edges, &commentEdge{cursor: cursor(i), node: &commentRes{h: r.h, c: cs[i]}})
	}
	return c, nil
}
func association(rp *repo, u *user) string {
	switch {
	case strings.EqualFold(u.login, rp.owner):
		return "OWNER"
	case u.typ == "Bot":
		return "NONE"
	case u.canWrite():
		return "COLLABORATOR"
	}
	return "CONTRIBUTOR"
}

type reactionGroupRes struct{ content string }

func (g *reactionGroupRes) Content() string { return g.content }
func (g *reactionGroupRes) Users(args pageArgs) *reactingUsersRes {
	return &reactingUsersRes{}
}

type reactingUsersRes struct{}

func (reactingUsersRes) TotalCount() int32 { return 0 }

// Commits.

func (r *prRes) Commits(ctx context.Context, args pageArgs) (*prCommitConn, error) {
	base, head, dir := r.p.baseSHA, r.p.headSHA, r.p.repo.dir
	cs, err := r.h.prCommits(ctx, dir, base, head)
	if err != nil {
		return nil, fmt.Errorf("list commits: %w", err)
	}
	s, e, pi, err := paginate(len(cs), args, "commits")
	if err != nil {
		return nil, err
	}
	c := &prCommitConn{pi: pi, total: len(cs)}
	for i := s; i < e; i++ {
		ci := cs[i]
		c.nodes = append(c.nodes, &prCommitRes{p: r.p, c: &commitRes{h: r.h, rp: r.p.repo, sha: ci.sha, info: &ci}})
	}
	return c, nil
}

type prCommitConn struct {
	nodes []*prCommitRes
	pi    *pageInfo
	total int
}

func (c *prCommitConn) Nodes() *[]*prCommitRes { return &c.nodes }
func (c *prCommitConn) PageInfo() *pageInfo    { return c.pi }
func (c *prCommitConn) TotalCount() int32      { return int32(c.total) }

type prCommitRes struct {
	p *pr
	c *commitRes
}

func (r *prCommitRes) Commit() *commitRes { return r.c }
func (r *prCommitRes) ID() graphqlgo.ID {
	return graphqlgo.ID(fmt.Sprintf("PURC_fh%d_%s", r.p.id, r.c.sha))
}

type commitRes struct {
	h    *Hub
	rp   *repo
	sha  string
	info *commitInfo
}

func (c *commitRes) load(ctx context.Context) commitInfo {
	if c.info == nil {
		ci, err := commitOne(ctx, c.rp.dir, c.sha)
		if err != nil {
			ci = commitInfo{sha: c.sha}
		}
		c.info = &ci
	}
	return *c.info
}

func (c *commitRes) AbbreviatedOid() string                        { return c.sha[:min(7, len(c.sha))] }
func (c *commitRes) AuthoredDate(ctx context.Context) gqlDateTime  { return dt(c.load(ctx).authored) }
func (c *commitRes) CommittedDate(ctx context.Context) gqlDateTime { return dt(c.load(ctx).committed) }
func (c *commitRes) ID() graphqlgo.ID                              { return graphqlgo.ID("C_fh" + c.sha) }
func (c *commitRes) Message(ctx context.Context) string            { return c.load(ctx).message }
func (c *commitRes) MessageHeadline(ctx context.Context) string {
	m, _, _ := strings.Cut(c.load(ctx).message, "\n")
	return m
}
func (c *commitRes) Oid() gqlGitObjectID { return gqlGitObjectID(c.sha) }
func (c *commitRes) Parents(ctx context.Context, args pageArgs) (*commitConn, error) {
	ps := c.load(ctx).parents
	s, e, pi, err := paginate(len(ps), args, "parents")
	if err != nil {
		return nil, err
	}
	cc := &commitConn{pi: pi, total: len(ps)}
	for _, p := range ps[s:e] {
		cc.nodes = append(cc.nodes, &commitRes{h: c.h, rp: c.rp, sha: p})
	}
	return cc, nil
}
func (c *commitRes) StatusCheckRollup() *rollupRes {
	if c.rp.rollupState(c.sha) == "" {
		return nil
	}
	return &rollupRes{h: c.h, rp: c.rp, sha: c.sha}
}

type commitConn struct {
	nodes []*commitRes
	pi    *pageInfo
	total int
}

func (c *commitConn) Nodes() *[]*commitRes { return &c.nodes }
func (c *commitConn) PageInfo() *pageInfo  { return c.pi }
func (c *commitConn) TotalCount() int32    { return int32(c.total) }

// Checks.

type rollupRes struct {
	h   *Hub
	rp  *repo
	sha string
}

func (r *rollupRes) ID() graphqlgo.ID { return graphqlgo.ID("SCR_fh" + r.sha) }
func (r *rollupRes) State() string {
	return r.rp.rollupState(r.sha)
}
func (r *rollupRes) Contexts(args pageArgs) (*ctxConn, error) {
	var all []*ctxRes
	runs, sts := r.rp.latestCheckRuns(r.sha), r.rp.latestStatuses(r.sha)
	for _, c := range runs {
		all = append(all, &ctxRes{run: &checkRunRes{h: r.h, c: c}})
	}
	for _, s := range sts {
		all = append(all, &ctxRes{status: &statusRes{h: r.h, s: s}})
	}
	s, e, pi, err := paginate(len(all), args, "contexts")
	if err != nil {
		return nil, err
	}
	return &ctxConn{nodes: all[s:e], pi: pi, runs: len(runs), statuses: len(sts)}, nil
}

type ctxConn struct {
	nodes          []*ctxRes
	pi             *pageInfo
	runs, statuses int
}

func (c *ctxConn) CheckRunCount() int32      { return int32(c.runs) }
func (c *ctxConn) StatusContextCount() int32 { return int32(c.statuses) }
func (c *ctxConn) Nodes() *[]*ctxRes         { return &c.nodes }
func (c *ctxConn) PageInfo() *pageInfo       { return c.pi }
func (c *ctxConn) TotalCount() int32         { return int32(c.runs + c.statuses) }

type ctxRes struct {
	run    *checkRunRes
	status *statusRes
}

func (c *ctxRes) ToCheckRun() (*checkRunRes, bool)    { return c.run, c.run != nil }
func (c *ctxRes) ToStatusContext() (*statusRes, bool) { return c.status, c.status != nil }

type checkRunRes struct {
	h *Hub
	c *checkRun
}

func (r *checkRunRes) CheckSuite() *checkSuiteRes { return &checkSuiteRes{c: r.c} }
func (r *checkRunRes) CompletedAt() *gqlDateTime {
	return dtp(r.c.completedAt)
}
func (r *checkRunRes) Conclusion() *string {
	if r.c.conclusion == "" {
		return nil
	}
	s := strings.ToUpper(r.c.conclusion)
	return &s
}
func (r *checkRunRes) DatabaseId() *int32 { n := int32(r.c.id); return &n }
func (r *checkRunRes) DetailsUrl() *gqlURI {
	if r.c.detailsURL == "" {
		return nil
	}
	u := gqlURI(r.c.detailsURL)
	return &u
}
func (r *checkRunRes) ID() graphqlgo.ID { return graphqlgo.ID(r.c.nodeID()) }
func (r *checkRunRes) Name() string     { return r.c.name }
func (r *checkRunRes) StartedAt() *gqlDateTime {
	return dtp(r.c.startedAt)
}
func (r *checkRunRes) Status() string {
	return strings.ToUpper(r.c.status)
}
func (r *checkRunRes) Summary() *string {
	return strp(r.c.summary)
}
func (r *checkRunRes) Text() *string {
	return strp(r.c.text)
}
func (r *checkRunRes) Title() *string {
	return strp(r.c.title)
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type checkSuiteRes struct{ c *checkRun }

func (s *checkSuiteRes) ID() graphqlgo.ID { return graphqlgo.ID(fmt.Sprintf("CS_fh%d", s.c.id)) }
func (s *checkSuiteRes) App() *appRes {
	if s.c.app == nil {
		return nil
	}
	return &appRes{u: s.c.app}
}
func (s *checkSuiteRes) WorkflowRun() *workflowRunRes {
	if s.c.app == nil || s.c.app.login != LoginCI {
		return nil
	}
	return &workflowRunRes{c: s.c}
}

type appRes struct{ u *user }

func (a *appRes) ID() graphqlgo.ID { return graphqlgo.ID(fmt.Sprintf("A_fh%d", a.u.id)) }
func (a *appRes) Name() string {
	if a.u.login == LoginCI {
		return "GitHub Actions"
	}
	return a.u.login
}
func (a *appRes) Slug() string { return a.u.login }

type workflowRunRes struct{ c *checkRun }

func (w *workflowRunRes) ID() graphqlgo.ID       { return graphqlgo.ID(fmt.Sprintf("WFR_fh%d", w.c.id)) }
func (w *workflowRunRes) Workflow() *workflowRes { return &workflowRes{} }

type workflowRes struct{}

func (workflowRes) ID() graphqlgo.ID { return "W_fhci" }
func (workflowRes) Name() string     { return "CI" }

type statusRes struct {
	h *Hub
	s *commitStatus
}

func (s *statusRes) Context() string        { return s.s.context }
func (s *statusRes) CreatedAt() gqlDateTime { return dt(s.s.createdAt) }
func (s *statusRes) Description() *string {
	return strp(s.s.description)
}
func (s *statusRes) ID() graphqlgo.ID { return graphqlgo.ID(fmt.Sprintf("SC_fh%d", s.s.id)) }
func (s *statusRes) State() string    { return strings.ToUpper(s.s.state) }
func (s *statusRes) TargetUrl() *gqlURI {
	if s.s.targetURL == "" {
		return nil
	}
	u := gqlURI(s.s.targetURL)
	return &u
}

// Review threads.

func (r *prRes) ReviewThreads(ctx context.Context, args pageArgs) (*threadConn, error) {
	read := r.h.readOf(ctx, r.p)
	var ts []*thread
	for _, t := range r.p.threads {
		if t.review == nil || !t.review.lagging(read) {
			ts = append(ts, t)
		}
	}
	s, e, pi, err := paginate(len(ts), args, "reviewThreads")
	if err != nil {
		return nil, err
	}
	c := &threadConn{pi: pi, total: len(ts)}
	for i := s; i < e; i++ {
		c.nodes = append(c.nodes, &threadRes{h: r.h, t: ts[i]})
		c.edges = append(c.edges, &threadEdge{cursor: cursor(i), node: &threadRes{h: r.h, t: ts[i]}})
	}
	return c, nil
}

type threadConn struct {
	nodes []*threadRes
	edges []*threadEdge
	pi    *pageInfo
	total int
}

func (c *threadConn) Edges() *[]*threadEdge { return &c.edges }
func (c *threadConn) Nodes() *[]*threadRes  { return &c.nodes }
func (c *threadConn) PageInfo() *pageInfo   { return c.pi }
func (c *threadConn) TotalCount() int32     { return int32(c.total) }

type threadEdge struct {
	cursor string
	node   *threadRes
}

func (e *threadEdge) Cursor() string   { return e.cursor }
func (e *threadEdge) Node() *threadRes { return e.node }

type threadRes struct {
	h *Hub
	t *thread
}

func (r *threadRes) Comments(args struct {
	After  *string
	Before *string
	First  *int32
	Last   *int32
	Skip   *int32
}) (*commentConn, error) {
	cs := r.t.comments
	if args.Skip != nil && *args.Skip > 0 {
		cs = cs[min(int(*args.Skip), len(cs)):]
	}
	s, e, pi, err := paginate(len(cs), pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "comments")
	if err != nil {
		return nil, err
	}
	c := &commentConn{pi: pi, total: len(cs)}
	for i := s; i < e; i++ {
		c.nodes = append(c.nodes, &commentRes{h: r.h, c: cs[i]})
		c.edges = append(c.edges, &commentEdge{cursor: cursor(i), node: &commentRes{h: r.h, c: cs[i]}})
	}
	return c, nil
}
func (r *threadRes) DiffSide() string { return r.t.side }
func (r *threadRes) ID() graphqlgo.ID { return graphqlgo.ID(r.t.nodeID()) }
func (r *threadRes) IsOutdated(ctx context.Context) bool {
	_, _, out := r.h.threadPosOf(ctx, threadPosInputOf(r.t))
	return out
}
func (r *threadRes) IsResolved() bool {
	return r.t.resolved
}
func (r *threadRes) Line(ctx context.Context) *int32 {
	l, _, out := r.h.threadPosOf(ctx, threadPosInputOf(r.t))
	if out {
		return nil
	}
	return i32p(l)
}
func (r *threadRes) StartLine(ctx context.Context) *int32 {
	_, s, out := r.h.threadPosOf(ctx, threadPosInputOf(r.t))
	if out {
		return nil
	}
	return i32p(s)
}
func (r *threadRes) OriginalLine() *int32      { return i32p(r.t.line) }
func (r *threadRes) OriginalStartLine() *int32 { return i32p(r.t.startLine) }
func (r *threadRes) Path() string              { return r.t.path }

// SubjectType is LINE: the emulator's threads are on lines (a thread
// without one would be on its file).
func (r *threadRes) SubjectType() string {
	if r.t.line == 0 {
		return "FILE"
	}
	return "LINE"
}
func (r *threadRes) StartDiffSide() *string {
	if r.t.startLine == 0 {
		return nil
	}
	return &r.t.side
}

func i32p(n int) *int32 {
	if n == 0 {
		return nil
	}
	v := int32(n)
	return &v
}

// threadPosInput is what a thread's position depends on, read under h.mu.
type threadPosInput struct {
	head, commit, dir, path string
	line, start             int
}

func threadPosInputOf(t *thread) threadPosInput {
	return threadPosInput{head: t.pr.headSHA, commit: t.commitSHA, dir: t.pr.repo.dir, path: t.path, line: t.line, start: t.startLine}
}

// threadPos maps a thread's original range to the PR's current head; it
// takes h.mu itself, so callers must not hold it.
func (h *Hub) threadPos(ctx context.Context, t *thread) (line, start int, outdated bool) {
	h.mu.RLock()
	in := threadPosInputOf(t)
	h.mu.RUnlock()
	return h.threadPosOf(ctx, in)
}

func (h *Hub) threadPosOf(ctx context.Context, in threadPosInput) (line, start int, outdated bool) {
	head, commit, dir, path, ol, os := in.head, in.commit, in.dir, in.path, in.line, in.start
	if head == commit {
		return ol, os, false
	}
	hs, err := h.diffHunks(ctx, dir, commit, head, path)
	if err != nil {
		h.log.Warn("fakehub diff", "err", err)
		return ol, os, false
	}
	s := os
	if s == 0 {
		s = ol
	}
	ns, ne, ok := mapRange(hs, s, ol)
	if !ok {
		return 0, 0, true
	}
	if os == 0 {
		return ne, 0, false
	}
	return ne, ns, false
}

type commentConn struct {
	nodes []*commentRes
	edges []*commentEdge
	pi    *pageInfo
	total int
}

func (c *commentConn) Edges() *[]*commentEdge { return &c.edges }
func (c *commentConn) Nodes() *[]*commentRes  { return &c.nodes }
func (c *commentConn) PageInfo() *pageInfo    { return c.pi }
func (c *commentConn) TotalCount() int32      { return int32(c.total) }

type commentEdge struct {
	cursor string
	node   *commentRes
}

func (e *commentEdge) Cursor() string    { return e.cursor }
func (e *commentEdge) Node() *commentRes { return e.node }

type commentRes struct {
	h *Hub
	c *reviewComment
}

func (r *commentRes) Author() *actorRes { return actorOf(r.h, r.c.author) }
func (r *commentRes) Body() string      { return r.c.body }
func (r *commentRes) Commit() *commitRes {
	return &commitRes{h: r.h, rp: r.c.thread.pr.repo, sha: r.c.commitSHA}
}
func (r *commentRes) CreatedAt() gqlDateTime     { return dt(r.c.createdAt) }
func (r *commentRes) DiffHunk() string           { return r.c.thread.diffHunk }
func (r *commentRes) DatabaseId() *int32         { n := int32(r.c.id); return &n }
func (r *commentRes) FullDatabaseId() *gqlBigInt { return bigint(r.c.id) }
func (r *commentRes) ID() graphqlgo.ID           { return graphqlgo.ID(r.c.nodeID()) }
func (r *commentRes) Line(ctx context.Context) *int32 {
	l, _, out := r.h.threadPosOf(ctx, threadPosInputOf(r.c.thread))
	if out {
		return nil
	}
	return i32p(l)
}
func (r *commentRes) OriginalCommit() *commitRes {
	return &commitRes{h: r.h, rp: r.c.thread.pr.repo, sha: r.c.thread.commitSHA}
}
func (r *commentRes) OriginalLine() *int32 { return i32p(r.c.thread.line) }
func (r *commentRes) Path() string         { return r.c.thread.path }
func (r *commentRes) ReplyTo() *commentRes {
	if r.c.replyTo == 0 {
		return nil
	}
	for _, c := range r.c.thread.comments {
		if c.id == r.c.replyTo {
			return &commentRes{h: r.h, c: c}
		}
	}
	return nil
}
func (r *commentRes) Url() gqlURI { return gqlURI(r.h.commentURL(r.c)) }

// PullRequestReview is the review the comment was submitted with; replies
// made outside a review belong to a single-comment review GitHub creates
// for them, which the emulator does not list.
func (r *commentRes) PullRequestReview() *reviewRes {
	for _, rv := range r.c.thread.pr.reviews {
		if rv.id == r.c.reviewID {
			return &reviewRes{h: r.h, rv: rv}
		}
	}
	return nil
}
func (h *Hub) commentURL(c *reviewComment) string {
	p := c.thread.pr
	return fmt.Sprintf("%s#discussion_r%d", h.PRURL(p.repo.owner, p.repo.name, p.number), c.id)
}
