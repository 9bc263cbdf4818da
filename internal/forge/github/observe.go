package github

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/forge/github/graphql"
)

// Wire shapes of the observe documents; only what forge types need.

type login struct {
	Login string `json:"login"`
}

func (l *login) get() string {
	if l == nil {
		return ""
	}
	return l.Login
}

// bigInt reads GitHub's BigInt (a JSON string) and tolerates a number.
type bigInt int64

func (b *bigInt) UnmarshalJSON(p []byte) error {
	p = bytes.Trim(p, `"`)
	if len(p) == 0 || string(p) == "null" {
		*b = 0
		return nil
	}
	n, err := strconv.ParseInt(string(p), 10, 64)
	if err != nil {
		return fmt.Errorf("BigInt %q: %w", p, err)
	}
	*b = bigInt(n)
	return nil
}

type pageInfo struct {
	HasNextPage bool   `json:"hasNextPage"`
	EndCursor   string `json:"endCursor"`
}

type commentNode struct {
	ID                string    `json:"id"`
	FullDatabaseID    bigInt    `json:"fullDatabaseId"`
	Author            *login    `json:"author"`
	Body              string    `json:"body"`
	Path              string    `json:"path"`
	URL               string    `json:"url"`
	CreatedAt         time.Time `json:"createdAt"`
	PullRequestReview *struct {
		ID string `json:"id"`
	} `json:"pullRequestReview"`
	OriginalCommit *struct {
		Oid string `json:"oid"`
	} `json:"originalCommit"`
	DiffHunk string `json:"diffHunk"`
}

type commentConn struct {
	PageInfo pageInfo      `json:"pageInfo"`
	Nodes    []commentNode `json:"nodes"`
}

type threadNode struct {
	ID                string      `json:"id"`
	IsResolved        bool        `json:"isResolved"`
	IsOutdated        bool        `json:"isOutdated"`
	Path              string      `json:"path"`
	Line              *int        `json:"line"`
	StartLine         *int        `json:"startLine"`
	OriginalLine      *int        `json:"originalLine"`
	OriginalStartLine *int        `json:"originalStartLine"`
	Comments          commentConn `json:"comments"`
}

type threadConn struct {
	PageInfo pageInfo     `json:"pageInfo"`
	Nodes    []threadNode `json:"nodes"`
}

type prNode struct {
	ID                string `json:"id"`
	Number            int    `json:"number"`
	URL               string `json:"url"`
	Title             string `json:"title"`
	Body              string `json:"body"`
	State             string `json:"state"`
	IsDraft           bool   `json:"isDraft"`
	IsCrossRepository bool   `json:"isCrossRepository"`
	Author            *login `json:"author"`
	HeadRefName       string `json:"headRefName"`
	HeadRefOid        string `json:"headRefOid"`
	BaseRefName       string `json:"baseRefName"`
	BaseRefOid        string `json:"baseRefOid"`
	HeadRepository    *struct {
		NameWithOwner string `json:"nameWithOwner"`
	} `json:"headRepository"`
	Repository *struct {
		URL string `json:"url"`
	} `json:"repository"`
	Mergeable        string `json:"mergeable"`
	MergeStateStatus string `json:"mergeStateStatus"`
	Labels           struct {
		Nodes []struct {
			Name string `json:"name"`
		} `json:"nodes"`
	} `json:"labels"`
	ReviewRequests struct {
		Nodes []struct {
			RequestedReviewer *struct {
				Typename string `json:"__typename"`
				Login    string `json:"login"`
				Slug     string `json:"slug"`
			} `json:"requestedReviewer"`
		} `json:"nodes"`
	} `json:"reviewRequests"`
	Reviews struct {
		Nodes []struct {
			ID             string     `json:"id"`
			FullDatabaseID bigInt     `json:"fullDatabaseId"`
			Author         *login     `json:"author"`
			State          string     `json:"state"`
			Body           string     `json:"body"`
			SubmittedAt    *time.Time `json:"submittedAt"`
			Commit         *struct {
				Oid string `json:"oid"`
			} `json:"commit"`
			Comments struct {
				TotalCount int `json:"totalCount"`
			} `json:"comments"`
		} `json:"nodes"`
	} `json:"reviews"`
	Comments struct {
		Nodes []struct {
			ID             string    `json:"id"`
			FullDatabaseID bigInt    `json:"fullDatabaseId"`
			Author         *login    `json:"author"`
			Body           string    `json:"body"`
			CreatedAt      time.Time `json:"createdAt"`
		} `json:"nodes"`
	} `json:"comments"`
	Commits struct {
		TotalCount int `json:"totalCount"`
		Nodes      []struct {
			Commit struct {
				Oid           string    `json:"oid"`
				Message       string    `json:"message"`
				CommittedDate time.Time `json:"committedDate"`
				Parents       struct {
					Nodes []struct {
						Oid string `json:"oid"`
					} `json:"nodes"`
				} `json:"parents"`
			} `json:"commit"`
		} `json:"nodes"`
	} `json:"commits"`
	HeadCommit struct {
		Nodes []struct {
			Commit struct {
				Oid               string `json:"oid"`
				StatusCheckRollup *struct {
					State    string `json:"state"`
					Contexts struct {
						Nodes []contextNode `json:"nodes"`
					} `json:"contexts"`
				} `json:"statusCheckRollup"`
			} `json:"commit"`
		} `json:"nodes"`
	} `json:"headCommit"`
	TimelineItems struct {
		Nodes []struct {
			Typename     string    `json:"__typename"`
			CreatedAt    time.Time `json:"createdAt"`
			Actor        *login    `json:"actor"`
			BeforeCommit *oidNode  `json:"beforeCommit"`
			AfterCommit  *oidNode  `json:"afterCommit"`
		} `json:"nodes"`
	} `json:"timelineItems"`
	ReviewThreads threadConn `json:"reviewThreads"`
}

type oidNode struct {
	Oid string `json:"oid"`
}

func (o *oidNode) get() string {
	if o == nil {
		return ""
	}
	return o.Oid
}

// contextNode is one check run or commit status of a rollup.
type contextNode struct {
	Typename    string `json:"__typename"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Conclusion  string `json:"conclusion"`
	Title       string `json:"title"`
	Summary     string `json:"summary"`
	Text        string `json:"text"`
	DetailsURL  string `json:"detailsUrl"`
	Annotations *struct {
		Nodes []struct {
			Path     string `json:"path"`
			Location struct {
				Start struct {
					Line int `json:"line"`
				} `json:"start"`
				End struct {
					Line int `json:"line"`
				} `json:"end"`
			} `json:"location"`
			AnnotationLevel string `json:"annotationLevel"`
			Title           string `json:"title"`
			Message         string `json:"message"`
		} `json:"nodes"`
	} `json:"annotations"`
	Context     string `json:"context"`
	State       string `json:"state"`
	Description string `json:"description"`
	TargetURL   string `json:"targetUrl"`
}

func (x contextNode) toContext() forge.CheckContext {
	if x.Typename == "StatusContext" {
		return forge.CheckContext{Name: x.Context, IsStatus: true, Conclusion: forge.CheckConclusion(x.State), Description: x.Description, URL: x.TargetURL}
	}
	cc := forge.CheckContext{Name: x.Name, Status: forge.CheckStatus(x.Status), Conclusion: forge.CheckConclusion(x.Conclusion),
		Title: x.Title, Summary: x.Summary, Text: x.Text, URL: x.DetailsURL}
	if x.Annotations != nil {
		for _, a := range x.Annotations.Nodes {
			cc.Annotations = append(cc.Annotations, forge.Annotation{Path: a.Path, StartLine: a.Location.Start.Line, EndLine: a.Location.End.Line,
				Level: a.AnnotationLevel, Title: a.Title, Message: a.Message})
		}
	}
	return cc
}

type observeData struct {
	Repository *struct {
		PullRequest *prNode `json:"pullRequest"`
	} `json:"repository"`
}

// Observe reads the whole PR with one GraphQL query, paging only past a
// full page of threads or of one thread's comments (PR-O1).
func (c *Client) Observe(ctx context.Context, ref forge.PRRef) (*forge.PullRequest, error) {
	const op = "observe pr"
	ctx, n := forgehttp.WithCounter(ctx)
	spent := &forge.Tally{} // what it cost, as GitHub said (spend.go)
	ctx = forge.WithMeter(ctx, spent)
	hit, etags := c.probe(ctx, ref) // PR-O1: an unchanged PR is not read again (probe.go)
	if hit != nil {
		hit.Requests, hit.Spend = int(n.Load()), spent.Spend()
		return hit, nil
	}
	vars := map[string]any{"owner": ref.Owner, "name": ref.Repo, "number": ref.Number}
	var d observeData
	hdr, err := c.graphQL(ctx, op, graphql.Doc("observe"), vars, false, &d)
	if err != nil {
		return nil, c.readFail(op, err)
	}
	if d.Repository == nil || d.Repository.PullRequest == nil {
		return nil, c.fail(forge.KindNotFound, op, fmt.Sprintf("%s not found (or the token cannot see it)", ref), nil)
	}
	node := d.Repository.PullRequest

	threads := node.ReviewThreads.Nodes
	for pi := node.ReviewThreads.PageInfo; pi.HasNextPage; {
		var page struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads threadConn `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		pv := map[string]any{"owner": ref.Owner, "name": ref.Repo, "number": ref.Number, "after": pi.EndCursor}
		if _, err := c.graphQL(ctx, op, graphql.Doc("threads_page"), pv, false, &page); err != nil {
			return nil, c.readFail(op, err)
		}
		if page.Repository == nil || page.Repository.PullRequest == nil {
			return nil, c.fail(forge.KindNotFound, op, fmt.Sprintf("%s vanished while reading its threads", ref), nil)
		}
		tc := page.Repository.PullRequest.ReviewThreads
		threads = append(threads, tc.Nodes...)
		if tc.PageInfo.HasNextPage && (tc.PageInfo.EndCursor == "" || tc.PageInfo.EndCursor == pi.EndCursor) {
			return nil, c.fail(forge.KindOther, op, "thread pagination did not advance", nil)
		}
		pi = tc.PageInfo
	}
	for i := range threads {
		if err := c.restOfComments(ctx, op, &threads[i]); err != nil {
			return nil, err
		}
	}

	pr := toPullRequest(ref, node, threads)
	pr.ObservedAt = c.now()
	if t, err := http.ParseTime(hdr.Get("Date")); err == nil {
		pr.ObservedAt = t
	}
	pr.Requests, pr.Spend = int(n.Load()), spent.Spend()
	c.remember(ref, pr, etags)
	c.log.Debug("github: observed", "pr", ref.String(), "requests", pr.Requests, "threads", len(pr.Threads))
	return pr, nil
}

// readFail maps a failed read: GitHub's untyped "Something went wrong" is
// its own fault and may pass, so it is unreachable, not a refusal.
func (c *Client) readFail(op string, err error) error {
	if ge, ok := err.(*gqlErrors); ok && ge.transient() {
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("%s failed the query: %s; try again later", c.graphqlURL.Host, ge.Error()), ge)
	}
	return c.gqlFail(op, err)
}

func (c *Client) restOfComments(ctx context.Context, op string, t *threadNode) error {
	for pi := t.Comments.PageInfo; pi.HasNextPage; {
		var page struct {
			Node *struct {
				Comments commentConn `json:"comments"`
			} `json:"node"`
		}
		vars := map[string]any{"id": t.ID, "after": pi.EndCursor}
		if _, err := c.graphQL(ctx, op, graphql.Doc("thread_comments_page"), vars, false, &page); err != nil {
			return c.readFail(op, err)
		}
		if page.Node == nil {
			return c.fail(forge.KindNotFound, op, fmt.Sprintf("thread %s vanished while reading its comments", t.ID), nil)
		}
		cc := page.Node.Comments
		t.Comments.Nodes = append(t.Comments.Nodes, cc.Nodes...)
		if cc.PageInfo.HasNextPage && (cc.PageInfo.EndCursor == "" || cc.PageInfo.EndCursor == pi.EndCursor) {
			return c.fail(forge.KindOther, op, "comment pagination did not advance", nil)
		}
		pi = cc.PageInfo
	}
	return nil
}

func toPullRequest(ref forge.PRRef, n *prNode, threads []threadNode) *forge.PullRequest {
	pr := &forge.PullRequest{
		Ref:        ref,
		ID:         n.ID,
		Number:     n.Number,
		URL:        n.URL,
		Title:      n.Title,
		Body:       n.Body,
		Author:     n.Author.get(),
		State:      forge.PRState(n.State),
		IsDraft:    n.IsDraft,
		HeadRef:    n.HeadRefName,
		HeadSHA:    n.HeadRefOid,
		BaseRef:    n.BaseRefName,
		BaseSHA:    n.BaseRefOid,
		CrossRepo:  n.IsCrossRepository,
		Mergeable:  forge.MergeableState(n.Mergeable),
		MergeState: forge.MergeState(n.MergeStateStatus),
	}
	if n.HeadRepository != nil {
		pr.HeadRepo = n.HeadRepository.NameWithOwner
	}
	if n.Repository != nil && n.Repository.URL != "" {
		// GitHub's clone_url is the repository's URL plus ".git".
		pr.CloneURL = strings.TrimSuffix(n.Repository.URL, "/") + ".git"
	}
	for _, ic := range n.Comments.Nodes {
		pr.IssueComments = append(pr.IssueComments, forge.IssueComment{
			ID:        int64(ic.FullDatabaseID),
			NodeID:    ic.ID,
			Author:    ic.Author.get(),
			Body:      ic.Body,
			CreatedAt: ic.CreatedAt,
		})
	}
	for _, l := range n.Labels.Nodes {
		pr.Labels = append(pr.Labels, l.Name)
	}
	for _, rr := range n.ReviewRequests.Nodes {
		r := rr.RequestedReviewer
		switch {
		case r == nil:
			// A reviewer the token cannot see (e.g. a secret team).
		case r.Typename == "Team":
			pr.RequestedReviewers = append(pr.RequestedReviewers, r.Slug)
		case r.Login != "":
			pr.RequestedReviewers = append(pr.RequestedReviewers, r.Login)
		}
	}
	for _, r := range n.Reviews.Nodes {
		rv := forge.Review{
			ID:         r.ID,
			DatabaseID: int64(r.FullDatabaseID),
			Author:     r.Author.get(),
			State:      forge.ReviewState(r.State),
			Body:       r.Body,
			// Read in the same request as the threads, so the two can be
			// compared (PR-O2).
			CommentCount: r.Comments.TotalCount,
		}
		if r.SubmittedAt != nil {
			rv.SubmittedAt = *r.SubmittedAt
		}
		if r.Commit != nil {
			rv.CommitSHA = r.Commit.Oid
		}
		pr.Reviews = append(pr.Reviews, rv)
	}
	for _, cn := range n.Commits.Nodes {
		cm := forge.Commit{SHA: cn.Commit.Oid, Message: cn.Commit.Message, CommittedAt: cn.Commit.CommittedDate}
		for _, p := range cn.Commit.Parents.Nodes {
			cm.Parents = append(cm.Parents, p.Oid)
		}
		pr.Commits = append(pr.Commits, cm)
	}
	// A page holding the whole connection proves a SHA absent from it is
	// not on the branch (PR-T12).
	pr.CommitsComplete = n.Commits.TotalCount <= len(n.Commits.Nodes)
	// CI is read on the head alone (headCommit: commits(last: 1)).
	if hc := n.HeadCommit.Nodes; len(hc) == 1 {
		if roll := hc[0].Commit.StatusCheckRollup; roll != nil {
			pr.Checks.State = forge.CIState(roll.State)
			for _, x := range roll.Contexts.Nodes {
				pr.Checks.Contexts = append(pr.Checks.Contexts, x.toContext())
			}
		}
	}
	for _, ev := range n.TimelineItems.Nodes {
		if ev.Typename != "HeadRefForcePushedEvent" {
			continue
		}
		pr.ForcePushes = append(pr.ForcePushes, forge.ForcePush{Actor: ev.Actor.get(), Before: ev.BeforeCommit.get(), After: ev.AfterCommit.get(), At: ev.CreatedAt})
	}
	for _, t := range threads {
		pr.Threads = append(pr.Threads, toThread(t))
	}
	return pr
}

func toThread(t threadNode) forge.Thread {
	th := forge.Thread{
		ID:         t.ID,
		Path:       t.Path,
		Line:       deref(t.Line),
		StartLine:  deref(t.StartLine),
		OrigLine:   deref(t.OriginalLine),
		OrigStart:  deref(t.OriginalStartLine),
		IsResolved: t.IsResolved,
		IsOutdated: t.IsOutdated,
	}
	// The hunk ends at the range the thread was opened on, at its
	// original commit.
	need := 1
	if th.OrigStart > 0 && th.OrigLine >= th.OrigStart {
		need = th.OrigLine - th.OrigStart + 1
	}
	for _, c := range t.Comments.Nodes {
		fc := toComment(c)
		fc.DiffHunk = forge.ClipDiffHunk(c.DiffHunk, need)
		th.Comments = append(th.Comments, fc)
	}
	return th
}

func toComment(c commentNode) forge.Comment {
	fc := forge.Comment{
		ID:         c.ID,
		DatabaseID: int64(c.FullDatabaseID),
		Author:     c.Author.get(),
		Body:       c.Body,
		Path:       c.Path,
		URL:        c.URL,
		CreatedAt:  c.CreatedAt,
	}
	if c.PullRequestReview != nil {
		fc.ReviewID = c.PullRequestReview.ID
	}
	if c.OriginalCommit != nil {
		fc.OriginalCommit = c.OriginalCommit.Oid
	}
	return fc
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// RequestReviews asks for reviews with requestReviewsByLogin and union:
// true, so pending reviewers stay requested (PR-O5, PR-S1).
//
// Only a definite refusal of a reviewer (GitHub cannot resolve the bot or
// user here, e.g. Copilot review is not enabled on the repository) is
// KindInvalid wrapping ErrReviewerUnavailable (PR-M3). A fault that may
// pass is KindUnreachable (5xx, timeout, GitHub's "something went wrong")
// or KindRateLimited; a token that may not request is KindAuth, and a PR
// that does not resolve is KindNotFound.
//
// GitHub addresses the PR by its node id, pr.ID, which Observe reads; a
// pr without one is KindInvalid.
func (c *Client) RequestReviews(ctx context.Context, pr *forge.PullRequest, userLogins, botLogins []string) error {
	const op = "request reviews"
	if len(userLogins) == 0 && len(botLogins) == 0 {
		return nil
	}
	if pr == nil || pr.ID == "" {
		return c.fail(forge.KindInvalid, op, "no pull request node id to request reviews on", nil)
	}
	prID := pr.ID
	// Whatever comes of the request, the reviewer's answer may leave the
	// PR's REST answer as it was (were GitHub not to move updated_at on a
	// request or a review; probe.go): the probe's ETags go.
	c.dropETags(pr.Ref)
	input := map[string]any{"pullRequestId": prID, "union": true}
	if len(userLogins) > 0 {
		input["userLogins"] = userLogins
	}
	if len(botLogins) > 0 {
		input["botLogins"] = botLogins
	}
	_, err := c.graphQL(ctx, op, graphql.Doc("request_reviews"), map[string]any{"input": input}, true, nil)
	ge, ok := err.(*gqlErrors)
	if !ok {
		return c.gqlFail(op, err)
	}
	who := append(append([]string{}, botLogins...), userLogins...)
	switch {
	case ge.rateLimited(), ge.has("FORBIDDEN"):
		return c.gqlFail(op, err)
	case ge.has("INSUFFICIENT_SCOPES"):
		return c.fail(forge.KindAuth, op, fmt.Sprintf("token rejected by %s: %s", c.graphqlURL.Host, ge.Error()), ge)
	case ge.has("NOT_FOUND") && strings.Contains(ge.Error(), prID):
		return c.fail(forge.KindNotFound, op, ge.Error(), ge)
	case ge.transient():
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("%s failed to request reviews from %v: %s; try again later", c.graphqlURL.Host, who, ge.Error()), ge)
	case !ge.typed():
		// No type: not GitHub's word on the reviewer, so never read as
		// a refusal (PR-M3).
		return c.fail(forge.KindOther, op, fmt.Sprintf("cannot request reviews from %v: %s", who, ge.Error()), ge)
	}
	fe := c.fail(forge.KindInvalid, op, fmt.Sprintf("cannot request reviews from %v: %s", who, ge.Error()), ge)
	fe.Err = &reviewerUnavailable{fe.Err}
	return fe
}

// transient reports errors GitHub gives for a failure on its side that a
// later try may not meet: an untyped "Something went wrong" (its answer
// to an internal timeout) or a service type.
func (e *gqlErrors) transient() bool {
	for _, x := range e.errs {
		switch x.Type {
		case "INTERNAL", "SERVICE_UNAVAILABLE", "TIMEOUT":
			return true
		case "":
			m := strings.ToLower(x.Message)
			if strings.Contains(m, "something went wrong") || strings.Contains(m, "timeout") || strings.Contains(m, "timed out") {
				return true
			}
		}
	}
	return false
}

// typed reports whether any error carries GitHub's type.
func (e *gqlErrors) typed() bool {
	for _, x := range e.errs {
		if x.Type != "" {
			return true
		}
	}
	return false
}

type reviewerUnavailable struct{ err error }

func (e *reviewerUnavailable) Error() string   { return e.err.Error() }
func (e *reviewerUnavailable) Unwrap() []error { return []error{ErrReviewerUnavailable, e.err} }

// ReplyToThread adds a reply to a review thread (truncated per PR-G6).
// GitHub addresses a thread by its node id alone; ref is not needed.
func (c *Client) ReplyToThread(ctx context.Context, ref forge.PRRef, threadID, body string) (forge.Comment, error) {
	const op = "reply to thread"
	input := map[string]any{"pullRequestReviewThreadId": threadID, "body": TruncateBody(body)}
	var d struct {
		AddPullRequestReviewThreadReply *struct {
			Comment *commentNode `json:"comment"`
		} `json:"addPullRequestReviewThreadReply"`
	}
	if _, err := c.graphQL(ctx, op, graphql.Doc("reply"), map[string]any{"input": input}, true, &d); err != nil {
		return forge.Comment{}, c.gqlFail(op, err)
	}
	if d.AddPullRequestReviewThreadReply == nil || d.AddPullRequestReviewThreadReply.Comment == nil {
		return forge.Comment{}, c.fail(forge.KindInvalid, op, "GitHub returned no comment for thread "+threadID, nil)
	}
	return toComment(*d.AddPullRequestReviewThreadReply.Comment), nil
}

// ResolveThread marks a review thread resolved.
func (c *Client) ResolveThread(ctx context.Context, ref forge.PRRef, threadID string) error {
	return c.setResolved(ctx, "resolve thread", "resolve", threadID)
}

// UnresolveThread reopens a review thread.
func (c *Client) UnresolveThread(ctx context.Context, ref forge.PRRef, threadID string) error {
	return c.setResolved(ctx, "unresolve thread", "unresolve", threadID)
}

func (c *Client) setResolved(ctx context.Context, op, doc, threadID string) error {
	vars := map[string]any{"input": map[string]any{"threadId": threadID}}
	if _, err := c.graphQL(ctx, op, graphql.Doc(doc), vars, true, nil); err != nil {
		return c.gqlFail(op, err)
	}
	return nil
}
