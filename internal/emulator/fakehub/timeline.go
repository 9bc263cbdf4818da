package fakehub

import (
	"fmt"
	"strings"

	graphqlgo "github.com/graph-gophers/graphql-go"
)

// The PR timeline as GraphQL serves it: the head ref's force-pushes
// (HeadRefForcePushedEvent), which tell a review of a commit that became
// the head again from one submitted after the push (PR-T1(4)).

type timelineArgs struct {
	After     *string
	Before    *string
	First     *int32
	Last      *int32
	ItemTypes *[]string
	Since     *gqlDateTime
}

func (r *prRes) TimelineItems(args timelineArgs) (*timelineConn, error) {
	want := func(string) bool { return true }
	if args.ItemTypes != nil {
		types := *args.ItemTypes
		want = func(t string) bool {
			for _, x := range types {
				if x == t {
					return true
				}
			}
			return false
		}
	}
	var all []*timelineItemRes
	for _, ev := range r.p.events {
		if ev.event != "head_ref_force_pushed" || !want("HEAD_REF_FORCE_PUSHED_EVENT") {
			continue
		}
		if args.Since != nil && ev.createdAt.Before(args.Since.Time) {
			continue
		}
		all = append(all, &timelineItemRes{force: &forcePushRes{h: r.h, p: r.p, ev: ev}})
	}
	s, e, pi, err := paginate(len(all), pageArgs{After: args.After, Before: args.Before, First: args.First, Last: args.Last}, "timelineItems")
	if err != nil {
		return nil, err
	}
	return &timelineConn{nodes: all[s:e], pi: pi, total: len(all)}, nil
}

type timelineConn struct {
	nodes []*timelineItemRes
	pi    *pageInfo
	total int
}

func (c *timelineConn) FilteredCount() int32       { return int32(c.total) }
func (c *timelineConn) Nodes() *[]*timelineItemRes { return &c.nodes }
func (c *timelineConn) PageInfo() *pageInfo        { return c.pi }
func (c *timelineConn) TotalCount() int32          { return int32(c.total) }
func (t *timelineItemRes) ToHeadRefForcePushedEvent() (*forcePushRes, bool) {
	return t.force, t.force != nil
}

type timelineItemRes struct {
	force *forcePushRes
}

type forcePushRes struct {
	h  *Hub
	p  *pr
	ev *issueEvent
}

func (f *forcePushRes) Actor() *actorRes { return actorOf(f.h, f.ev.actor) }
func (f *forcePushRes) AfterCommit() *commitRes {
	if f.ev.commitID == "" {
		return nil
	}
	return &commitRes{h: f.h, rp: f.p.repo, sha: f.ev.commitID}
}
func (f *forcePushRes) BeforeCommit() *commitRes {
	if f.ev.before == "" {
		return nil
	}
	return &commitRes{h: f.h, rp: f.p.repo, sha: f.ev.before}
}
func (f *forcePushRes) CreatedAt() gqlDateTime                      { return dt(f.ev.createdAt) }
func (f *forcePushRes) ID() graphqlgo.ID                            { return graphqlgo.ID(fmt.Sprintf("HRFPE_fh%d", f.ev.id)) }
func (f *forcePushRes) PullRequest() *prRes                         { return &prRes{h: f.h, p: f.p} }
func (n *nodeRes) ToHeadRefForcePushedEvent() (*forcePushRes, bool) { return nil, false }

// Check run annotations (PR-V5): where a failing check says it failed.

type checkAnnotation struct {
	path      string
	startLine int
	endLine   int
	level     string // notice, warning, failure
	title     string
	message   string
}

func (r *checkRunRes) Annotations(args pageArgs) (*annotationConn, error) {
	s, e, pi, err := paginate(len(r.c.annotations), args, "annotations")
	if err != nil {
		return nil, err
	}
	c := &annotationConn{pi: pi, total: len(r.c.annotations)}
	for _, a := range r.c.annotations[s:e] {
		c.nodes = append(c.nodes, &annotationRes{a: a})
	}
	return c, nil
}

type annotationConn struct {
	nodes []*annotationRes
	pi    *pageInfo
	total int
}

func (c *annotationConn) Nodes() *[]*annotationRes { return &c.nodes }
func (c *annotationConn) PageInfo() *pageInfo      { return c.pi }
func (c *annotationConn) TotalCount() int32        { return int32(c.total) }

type annotationRes struct{ a *checkAnnotation }

func (a *annotationRes) AnnotationLevel() *string {
	if a.a.level == "" {
		return nil
	}
	l := strings.ToUpper(a.a.level)
	return &l
}
func (a *annotationRes) Location() *annotationSpan { return &annotationSpan{a: a.a} }
func (a *annotationRes) Message() string           { return a.a.message }
func (a *annotationRes) Path() string              { return a.a.path }
func (a *annotationRes) Title() *string            { return strp(a.a.title) }

type annotationSpan struct{ a *checkAnnotation }

func (s *annotationSpan) Start() *annotationPos { return &annotationPos{line: s.a.startLine} }
func (s *annotationSpan) End() *annotationPos   { return &annotationPos{line: s.a.endLine} }

type annotationPos struct{ line int }

func (p *annotationPos) Column() *int32 { return nil }
func (p *annotationPos) Line() int32    { return int32(p.line) }

// ForcePushBranch moves branch to sha, a commit of the repository, as a
// `git push --force` by login would: a PR on the branch gets the new head
// and, when the old head is not an ancestor of sha, a
// head_ref_force_pushed event on its timeline.
func (h *Hub) ForcePushBranch(owner, repoName, branch, sha, login string) error {
	ctx := h.Context()
	by := h.userByLogin(login)
	h.mu.Lock()
	rp := h.repoLocked(owner, repoName)
	h.mu.Unlock()
	if rp == nil || by == nil {
		return fmt.Errorf("force-push: no repo %s/%s or no user %s", owner, repoName, login)
	}
	if _, err := runGit(ctx, rp.dir, nil, nil, "update-ref", "refs/heads/"+branch, sha); err != nil {
		return fmt.Errorf("force-push: %w", err)
	}
	refs, err := readRefs(ctx, rp.dir)
	if err != nil {
		return fmt.Errorf("force-push: %w", err)
	}
	h.refsChanged(ctx, rp, refs, by)
	return nil
}
