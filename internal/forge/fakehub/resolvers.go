package fakehub

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	graphqlgo "github.com/graph-gophers/graphql-go"
)

// Resolvers for schema.graphql. Each method reads the model under h.mu;
// git work (merge state, line mapping, commit metadata) runs outside it.

type rootResolver struct{ h *Hub }

func (r *rootResolver) Node(ctx context.Context, args struct{ ID graphqlgo.ID }) (*nodeRes, error) {
	h := r.h
	h.mu.Lock()
	v := h.nodes[string(args.ID)]
	h.mu.Unlock()
	if v == nil {
		return nil, notFoundf("Could not resolve to a node with the global id of '%s'", args.ID)
	}
	return &nodeRes{h: h, v: v}, nil
}

func (r *rootResolver) RateLimit(ctx context.Context, args struct{ DryRun bool }) *rateLimitRes {
	h := r.h
	u := ctxUser(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	rw := h.rateLocked(u)
	return &rateLimitRes{used: rw.graphqlUsed, reset: rw.reset}
}

func (r *rootResolver) Repository(ctx context.Context, args struct {
	FollowRenames bool
	Name          string
	Owner         string
}) (*repoRes, error) {
	h := r.h
	h.mu.Lock()
	rp := h.repoLocked(args.Owner, args.Name)
	h.mu.Unlock()
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
}

func (r *rateLimitRes) Cost() int32      { return 1 }
func (r *rateLimitRes) Limit() int32     { return rateLimit }
func (r *rateLimitRes) NodeCount() int32 { return 100 }
func (r *rateLimitRes) Remaining() int32 { return int32(rateLimit - r.used) }
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
func (r *repoRes) PullRequest(args struct{ Number int32 }) (*prRes, error) {
	r.h.mu.Lock()
	p := r.rp.pr(int(args.Number))
	r.h.mu.Unlock()
	if p == nil {
		return nil, notFoundf("Could not resolve to a PullRequest with the number of %d.", args.Number)
	}
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

// lock holds h.mu until the returned func runs: defer r.lock()().
func (r *prRes) lock() func() { r.h.mu.Lock(); return r.h.mu.Unlock }

func (r *prRes) Author() *actorRes { return actorOf(r.h, r.p.author) }
func (r *prRes) BaseRefName() string {
	defer r.lock()()
	return r.p.baseRef
}
func (r *prRes) BaseRefOid() gqlGitObjectID {
	defer r.lock()()
	return gqlGitObjectID(r.p.baseSHA)
}
func (r *prRes) Body() string {
	defer r.lock()()
	return r.p.body
}
func (r *prRes) Closed() bool {
	defer r.lock()()
	return r.p.state != "OPEN"
}
func (r *prRes) CreatedAt() gqlDateTime { return dt(r.p.createdAt) }
func (r *prRes) UpdatedAt() gqlDateTime {
	defer r.lock()()
	return dt(r.p.updatedAt)
}
func (r *prRes) HeadRefName() string { return r.p.headRef }
func (r *prRes) HeadRefOid() gqlGitObjectID {
	defer r.lock()()
	return gqlGitObjectID(r.p.headSHA)
}
func (r *prRes) HeadRepository() *repoRes { return &repoRes{h: r.h, rp: r.p.repo} }
func (r *prRes) HeadRepositoryOwner() *ownerRes {
	return &ownerRes{h: r.h, u: r.h.ownerUser(r.p.repo.owner)}
}
func (r *prRes) ID() graphqlgo.ID        { return graphqlgo.ID(r.p.nodeID()) }
func (r *prRes) IsCrossRepository() bool { return false }
func (r *prRes) IsDraft() bool {
	defer r.lock()()
	return r.p.draft
}
func (r *prRes) Merged() bool {
	defer r.lock()()
	return r.p.state == "MERGED"
}
func (r *prRes) Number() int32 { return int32(r.p.number) }
func (r *prRes) State() string {
	defer r.lock()()
	return r.p.state
}
func (r *prRes) Title() string {
	defer r.lock()()
	return r.p.title
}
func (r *prRes) Url() gqlURI {
	return gqlURI(r.h.PRURL(r.p.repo.owner, r.p.repo.name, r.p.number))
}

func (r *prRes) Mergeable(ctx context.Context) (string, error) {
	m, _, err := r.h.mergeStatus(ctx, r.p)
	return m, err
}

func (r *prRes) MergeStateStatus(ctx context.Context) (string, error) {
	_, s, err := r.h.mergeStatus(ctx, r.p)
	return s, err
}

// mergeStatus derives mergeable and mergeStateStatus from git and checks.
func (h *Hub) mergeStatus(ctx context.Context, p *pr) (mergeable, state string, err error) {
	h.mu.Lock()
	st, draft, base, head, dir := p.state, p.draft, p.baseSHA, p.headSHA, p.repo.dir
	rollup := p.repo.rollupState(head)
	h.mu.Unlock()
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
	case mi.behind:
		state = "BEHIND"
	case rollup == "FAILURE":
		state = "UNSTABLE"
	default:
		state = "CLEAN"
	}
	return mergeable, state, nil
}

func (r *prRes) Labels(args pageArgs) (*labelConn, error) {
	defer r.lock()()
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
	defer r.lock()()
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
	defer r.lock()()
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
	defer r.lock()()
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
	r.h.mu.Lock()
	base, head, dir := r.p.baseSHA, r.p.headSHA, r.p.repo.dir
	r.h.mu.Unlock()
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
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
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
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.rp.rollupState(r.sha)
}
func (r *rollupRes) Contexts(args pageArgs) (*ctxConn, error) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
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

func (r *checkRunRes) lock() func() { r.h.mu.Lock(); return r.h.mu.Unlock }

func (r *checkRunRes) CheckSuite() *checkSuiteRes { return &checkSuiteRes{c: r.c} }
func (r *checkRunRes) CompletedAt() *gqlDateTime {
	defer r.lock()()
	return dtp(r.c.completedAt)
}
func (r *checkRunRes) Conclusion() *string {
	defer r.lock()()
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
	defer r.lock()()
	return dtp(r.c.startedAt)
}
func (r *checkRunRes) Status() string {
	defer r.lock()()
	return strings.ToUpper(r.c.status)
}
func (r *checkRunRes) Summary() *string {
	defer r.lock()()
	return strp(r.c.summary)
}
func (r *checkRunRes) Text() *string {
	defer r.lock()()
	return strp(r.c.text)
}
func (r *checkRunRes) Title() *string {
	defer r.lock()()
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

func (r *prRes) ReviewThreads(args pageArgs) (*threadConn, error) {
	defer r.lock()()
	ts := r.p.threads
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

func (r *threadRes) lock() func() { r.h.mu.Lock(); return r.h.mu.Unlock }

func (r *threadRes) Comments(args struct {
	After  *string
	Before *string
	First  *int32
	Last   *int32
	Skip   *int32
}) (*commentConn, error) {
	defer r.lock()()
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
	_, _, out := r.h.threadPos(ctx, r.t)
	return out
}
func (r *threadRes) IsResolved() bool {
	defer r.lock()()
	return r.t.resolved
}
func (r *threadRes) Line(ctx context.Context) *int32 {
	l, _, out := r.h.threadPos(ctx, r.t)
	if out {
		return nil
	}
	return i32p(l)
}
func (r *threadRes) StartLine(ctx context.Context) *int32 {
	_, s, out := r.h.threadPos(ctx, r.t)
	if out {
		return nil
	}
	return i32p(s)
}
func (r *threadRes) OriginalLine() *int32      { return i32p(r.t.line) }
func (r *threadRes) OriginalStartLine() *int32 { return i32p(r.t.startLine) }
func (r *threadRes) Path() string              { return r.t.path }
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

// threadPos maps a thread's original range to the PR's current head.
func (h *Hub) threadPos(ctx context.Context, t *thread) (line, start int, outdated bool) {
	h.mu.Lock()
	head, commit, dir := t.pr.headSHA, t.commitSHA, t.pr.repo.dir
	path, ol, os := t.path, t.line, t.startLine
	h.mu.Unlock()
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
func (r *commentRes) DatabaseId() *int32         { n := int32(r.c.id); return &n }
func (r *commentRes) FullDatabaseId() *gqlBigInt { return bigint(r.c.id) }
func (r *commentRes) ID() graphqlgo.ID           { return graphqlgo.ID(r.c.nodeID()) }
func (r *commentRes) Line(ctx context.Context) *int32 {
	l, _, out := r.h.threadPos(ctx, r.c.thread)
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
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	for _, c := range r.c.thread.comments {
		if c.id == r.c.replyTo {
			return &commentRes{h: r.h, c: c}
		}
	}
	return nil
}
func (r *commentRes) Url() gqlURI { return gqlURI(r.h.commentURL(r.c)) }

func (h *Hub) commentURL(c *reviewComment) string {
	p := c.thread.pr
	return fmt.Sprintf("%s#discussion_r%d", h.PRURL(p.repo.owner, p.repo.name, p.number), c.id)
}
