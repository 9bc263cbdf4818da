package fakehub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// REST under /api/v3 with GitHub's JSON shapes (as go-github reads them).

func (h *Hub) restMux() *http.ServeMux {
	m := http.NewServeMux()
	const R = "/api/v3/repos/{owner}/{repo}"
	handle := func(pattern string, fn func(*restCtx)) {
		m.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			c := r.Context().Value(restKey).(*restCtx)
			c.r, c.matched = r, true
			fn(c)
		})
	}
	handle("GET /api/v3/{$}", h.restMeta)
	handle("GET /api/v3/user", h.restUser)
	handle("GET /api/v3/users/{login}", h.restUserByLogin)
	handle("GET /api/v3/rate_limit", h.restRateLimit)
	handle("GET "+R, h.restRepo)
	handle("GET "+R+"/pulls", h.restListPulls)
	handle("POST "+R+"/pulls", h.restCreatePull)
	handle("GET "+R+"/pulls/{number}", h.withPR(h.restGetPull))
	handle("PATCH "+R+"/pulls/{number}", h.withPR(h.restPatchPull))
	handle("PUT "+R+"/pulls/{number}/merge", h.withPR(h.restMerge))
	handle("GET "+R+"/pulls/{number}/reviews", h.withPR(h.restListReviews))
	handle("POST "+R+"/pulls/{number}/reviews", h.withPR(h.restCreateReview))
	handle("GET "+R+"/pulls/{number}/reviews/{id}", h.withPR(h.restGetReview))
	handle("PUT "+R+"/pulls/{number}/reviews/{id}/dismissals", h.withPR(h.restDismissReview))
	handle("GET "+R+"/pulls/{number}/comments", h.withPR(h.restListReviewComments))
	handle("POST "+R+"/pulls/{number}/comments/{id}/replies", h.withPR(h.restReply))
	handle("POST "+R+"/pulls/{number}/comments", h.withPR(h.restCreateReviewComment))
	handle("GET "+R+"/pulls/{number}/requested_reviewers", h.withPR(h.restListRequested))
	handle("POST "+R+"/pulls/{number}/requested_reviewers", h.withPR(h.restRequestReviewers))
	handle("DELETE "+R+"/pulls/{number}/requested_reviewers", h.withPR(h.restRemoveReviewers))
	handle("GET "+R+"/issues/{number}/comments", h.withPR(h.restListIssueComments))
	handle("POST "+R+"/issues/{number}/comments", h.withPR(h.restCreateIssueComment))
	handle("GET "+R+"/issues/{number}/labels", h.withPR(h.restListLabels))
	handle("POST "+R+"/issues/{number}/labels", h.withPR(h.restAddLabels))
	handle("DELETE "+R+"/issues/{number}/labels/{name}", h.withPR(h.restRemoveLabel))
	handle("GET "+R+"/issues/{number}/events", h.withPR(h.restListEvents))
	// The timeline carries the same Copilot events; commits and reviews
	// are left to GraphQL.
	handle("GET "+R+"/issues/{number}/timeline", h.withPR(h.restListEvents))
	handle("POST "+R+"/statuses/{sha}", h.withRepo(h.restCreateStatus))
	// commits/{ref}/status, /statuses and /check-runs, the ref perhaps a
	// branch with slashes (contents.go).
	handle("GET "+R+"/commits/{rest...}", h.withRepo(h.restCommitRef))
	handle("GET "+R+"/contents/{path...}", h.withRepo(h.restContents))
	handle("GET "+R+"/contents", h.withRepo(h.restContents))
	handle("POST "+R+"/check-runs", h.withRepo(h.restCreateCheckRun))
	handle("PATCH "+R+"/check-runs/{id}", h.withRepo(h.restUpdateCheckRun))
	handle("GET "+R+"/check-runs/{id}", h.withRepo(h.restGetCheckRun))
	handle("GET "+R+"/collaborators/{login}/permission", h.withRepo(h.restPermission))
	// BASE...HEAD, either perhaps a branch with slashes (feature/x), as
	// GitHub takes it.
	handle("GET "+R+"/compare/{basehead...}", h.withRepo(h.restCompare))
	// What the gh CLI reads and writes besides (diff.go).
	handle("GET "+R+"/pulls/{number}/files", h.withPR(h.restPullFiles))
	handle("GET "+R+"/pulls/{number}/commits", h.withPR(h.restPullCommits))
	handle("DELETE "+R+"/git/refs/{ref...}", h.withRepo(h.restDeleteRef))
	return m
}

type restKeyT int

const restKey restKeyT = 1

// restCtx is one REST request: who asked, what it names, and a buffered
// answer so GETs get an ETag.
type restCtx struct {
	h       *Hub
	r       *http.Request
	u       *user
	rp      *repo
	p       *pr
	status  int
	body    any
	hdr     http.Header
	matched bool
	// raw, when set, is the answer's body as is (a diff), of rawType.
	raw     []byte
	rawType string
}

func (c *restCtx) ctx() context.Context { return c.r.Context() }

func (c *restCtx) reply(status int, body any) { c.status, c.body = status, body }

func (c *restCtx) fail(status int, msg string) {
	c.reply(status, map[string]any{"message": msg, "documentation_url": docURL})
}

func (c *restCtx) notFound() { c.reply(http.StatusNotFound, notFoundBody()) }

// invalid answers 422 with GitHub's validation error list.
func (c *restCtx) invalid(resource, field, code, msg string) {
	e := map[string]any{"resource": resource, "field": field, "code": code}
	if msg != "" {
		e["message"] = msg
	}
	c.reply(http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []any{e}, "documentation_url": docURL})
}

func (c *restCtx) unprocessable(msgs ...string) {
	c.reply(http.StatusUnprocessableEntity, map[string]any{"message": "Unprocessable Entity", "errors": msgs, "documentation_url": docURL})
}

func (c *restCtx) decode(v any) bool {
	b, err := io.ReadAll(io.LimitReader(c.r.Body, 8<<20))
	if err == nil && len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		c.reply(http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON", "documentation_url": docURL})
		return false
	}
	return true
}

func (c *restCtx) needWrite() bool {
	if c.u.canWrite() {
		return true
	}
	c.fail(http.StatusForbidden, "Resource not accessible by integration")
	return false
}

func (h *Hub) serveREST(w http.ResponseWriter, r *http.Request) {
	if h.serveApp(w, r) { // the endpoints a GitHub App's JWT reads (app.go)
		return
	}
	u := h.authenticate(r)
	if u == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials", "documentation_url": docURL})
		return
	}
	h.restOnce.Do(func() { h.rest = h.restMux() })
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.wlog.add(u, "rest", r.Method+" "+r.URL.Path)
	}
	rc := &restCtx{h: h, r: r, u: u, hdr: http.Header{}}
	r = r.WithContext(context.WithValue(r.Context(), restKey, rc))
	rc.r = r
	h.rest.ServeHTTP(discardWriter{}, r)
	if !rc.matched {
		rc.notFound()
	}
	if rc.status == 0 {
		rc.status = http.StatusOK
	}
	var body []byte
	if rc.raw != nil {
		body = rc.raw
	} else if rc.body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(rc.body)
		body = buf.Bytes()
	}
	notModified := false
	if r.Method == http.MethodGet && rc.status == http.StatusOK {
		sum := sha256.Sum256(body)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		rc.hdr.Set("ETag", etag)
		notModified = etagMatches(r.Header.Get("If-None-Match"), etag)
	}
	h.mu.Lock()
	rw := h.rateLocked(u)
	if notModified {
		h.countLocked("304", u)
	} else {
		h.countLocked("rest", u)
		rw.used++
	}
	h.tallyRESTLocked(u, r.Method, notModified)
	used, reset := rw.used, rw.reset
	h.mu.Unlock()
	hd := w.Header()
	for k, v := range rc.hdr {
		hd[k] = v
	}
	hd.Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
	hd.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, rateLimit-used)))
	hd.Set("X-RateLimit-Used", strconv.Itoa(used))
	hd.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	hd.Set("X-RateLimit-Resource", "core")
	if hd.Get("X-GitHub-Media-Type") == "" {
		hd.Set("X-GitHub-Media-Type", "github.v3; format=json")
	}
	hd.Set("X-GitHub-Enterprise-Version", "3.15.0")
	if notModified {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if body == nil {
		w.WriteHeader(rc.status)
		return
	}
	if rc.raw != nil {
		hd.Set("Content-Type", rc.rawType)
	} else {
		hd.Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(rc.status)
	_, _ = w.Write(body)
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

func (h *Hub) withRepo(fn func(*restCtx)) func(*restCtx) {
	return func(c *restCtx) {
		h.mu.Lock()
		c.rp = h.repoLocked(c.r.PathValue("owner"), c.r.PathValue("repo"))
		h.mu.Unlock()
		if c.rp == nil {
			c.notFound()
			return
		}
		fn(c)
	}
}

func (h *Hub) withPR(fn func(*restCtx)) func(*restCtx) {
	return h.withRepo(func(c *restCtx) {
		n, err := strconv.Atoi(c.r.PathValue("number"))
		h.mu.Lock()
		if err == nil {
			c.p = c.rp.pr(n)
		}
		h.mu.Unlock()
		if c.p == nil {
			c.notFound()
			return
		}
		fn(c)
	})
}

// paged applies per_page/page and sets the Link header.
func paged[T any](c *restCtx, items []T) []T {
	q := c.r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	last := max(1, (len(items)+per-1)/per)
	link := func(p int, rel string) string {
		u := *c.r.URL
		u.Scheme, u.Host = c.h.Scheme(), c.h.Host()
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		c.hdr.Set("Link", strings.Join(links, ", "))
	}
	s := min((page-1)*per, len(items))
	e := min(s+per, len(items))
	out := items[s:e]
	if out == nil {
		out = []T{}
	}
	return out
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// userJSON renders u with the login of one surface.
func (h *Hub) userJSON(u *user, login string) map[string]any {
	if u == nil {
		return nil
	}
	if login == "" {
		login = u.restLogin
	}
	// GitHub's simple-user, every field of it (REL-4: the recorded
	// answers hold these URL templates on every user object).
	api := h.APIURL() + "/users/" + url.PathEscape(login)
	return map[string]any{
		"login": login, "id": u.id, "node_id": u.nodeID(), "type": u.typ, "site_admin": false,
		"avatar_url":          avatarOf(h, u),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            h.BaseURL() + "/" + url.PathEscape(login),
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"user_view_type":      "public",
	}
}

func (h *Hub) restMeta(c *restCtx) {
	c.reply(200, map[string]any{"current_user_url": h.APIURL() + "/user", "installed_version": "3.15.0", "verifiable_password_authentication": false})
}

func (h *Hub) restUser(c *restCtx) {
	if h.isAppBot(c.u) { // GitHub refuses an installation token here
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	// The authenticated user's own profile (GitHub's private-user): the
	// simple-user's fields and the profile's, empty for the sandbox's
	// people.
	j := h.userJSON(c.u, "")
	j["name"] = nil
	if c.u.name != "" {
		j["name"] = c.u.name
	}
	const created = "2026-01-01T00:00:00Z" // the sandbox's people all joined then
	for k, v := range map[string]any{
		"company": nil, "blog": "", "location": nil, "email": nil, "notification_email": nil, "hireable": nil, "bio": nil,
		"twitter_username": nil, "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0,
		"created_at": created, "updated_at": created,
	} {
		j[k] = v
	}
	c.reply(200, j)
}

func (h *Hub) restUserByLogin(c *restCtx) {
	u := h.userByLogin(c.r.PathValue("login"))
	if u == nil {
		c.notFound()
		return
	}
	c.reply(200, h.userJSON(u, c.r.PathValue("login")))
}

func (h *Hub) restRateLimit(c *restCtx) {
	h.mu.Lock()
	rw := h.rateLocked(c.u)
	core := map[string]any{"limit": rateLimit, "used": rw.used, "remaining": rateLimit - rw.used, "reset": rw.reset.Unix()}
	gql := map[string]any{"limit": rateLimit, "used": rw.graphqlUsed, "remaining": rateLimit - rw.graphqlUsed, "reset": rw.reset.Unix()}
	h.mu.Unlock()
	c.reply(200, map[string]any{"resources": map[string]any{"core": core, "graphql": gql}, "rate": core})
}

// repoJSON is a repository as GitHub's minimal repository object shows
// it (a combined status's repository): nothing in it moves with the
// repository's content.
func (h *Hub) repoJSON(rp *repo, u *user) map[string]any {
	owner := h.ownerUser(rp.owner)
	perm := map[string]any{"admin": false, "maintain": false, "push": u.canWrite(), "triage": u.canWrite(), "pull": true}
	j := h.repoURLs(rp)
	for k, v := range map[string]any{
		"id": rp.id, "node_id": rp.nodeID(), "name": rp.name, "full_name": rp.fullName(), "private": false,
		"owner": h.userJSON(owner, rp.owner), "clone_url": h.GitURL(rp.owner, rp.name),
		"default_branch": rp.defaultBranch, "visibility": "public", "fork": false,
		"created_at": ts(rp.createdAt), "permissions": perm, "description": nil,
	} {
		j[k] = v
	}
	return j
}

// repoFullJSONLocked is the repository as GET /repos/{o}/{r} and a PR's
// base.repo and head.repo show it: with the repository-wide facts
// (pushed_at, counts) that move whenever anything in it moves. h.mu must
// be held.
func (h *Hub) repoFullJSONLocked(rp *repo, u *user) map[string]any {
	j := h.repoJSON(rp, u)
	h.repoCountsLocked(rp, j)
	return j
}

func (h *Hub) restRepo(c *restCtx) {
	h.mu.Lock()
	rp := h.repoLocked(c.r.PathValue("owner"), c.r.PathValue("repo"))
	h.mu.Unlock()
	if rp == nil {
		c.notFound()
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	c.reply(200, h.repoFullJSONLocked(rp, c.u))
}

// pullJSON renders a PR as GET pulls/{n} does; it runs git for
// mergeability, so no lock is held.
func (h *Hub) pullJSON(ctx context.Context, p *pr, u *user) map[string]any {
	h.mu.RLock()
	in := mergeInputOf(p)
	dir := p.repo.dir
	h.mu.RUnlock()
	var mb, rebaseable, mergeSHA any
	mstate := "unknown"
	if h.mergeComputed(ctx, p, in) {
		m, st, _ := h.mergeStatusOf(ctx, in)
		mstate = strings.ToLower(st)
		switch m {
		case "MERGEABLE":
			mb, rebaseable = true, true
			if mi, err := h.mergeState(ctx, dir, in.base, in.head); err == nil && mi.tree != "" {
				if sha := h.testMergeCommit(ctx, dir, in.base, in.head, mi.tree); sha != "" {
					mergeSHA = sha
				}
			}
		case "CONFLICTING":
			mb, rebaseable = false, false
		}
	}
	// A merged PR keeps the base it merged into: base..head is still its
	// commits.
	files, _ := h.prFiles(ctx, dir, in.base, in.head)
	commits := 0
	if cs, err := h.prCommits(ctx, dir, in.base, in.head); err == nil {
		commits = len(cs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	j := h.pullSimpleJSONLocked(p, u)
	if p.mergeSHA != "" {
		mergeSHA = p.mergeSHA
	}
	adds, dels := 0, 0
	for _, f := range files {
		adds += f.additions
		dels += f.deletions
	}
	comments := 0
	read := p.reads.Load() // a REST read does not advance the lag clock
	for _, t := range p.threads {
		if t.review == nil || !t.review.lagging(read) {
			comments += len(t.comments)
		}
	}
	for k, v := range map[string]any{
		"merged": p.state == "MERGED", "mergeable": mb, "rebaseable": rebaseable, "mergeable_state": mstate,
		"merged_by": nil, "comments": len(p.issueComments), "review_comments": comments,
		"maintainer_can_modify": false, "commits": commits, "additions": adds, "deletions": dels, "changed_files": len(files),
		"merge_commit_sha": mergeSHA,
	} {
		j[k] = v
	}
	if p.mergedBy != nil {
		j["merged_by"] = h.userJSON(p.mergedBy, "")
	}
	return j
}

// pullSimpleJSONLocked is a PR as the list of pulls shows it (GitHub's
// pull-request-simple): no mergeability and no counts, but the
// repository objects, whose facts move with anything in the repository.
// h.mu must be held.
func (h *Hub) pullSimpleJSONLocked(p *pr, u *user) map[string]any {
	rp := p.repo
	state := "open"
	if p.state != "OPEN" {
		state = "closed"
	}
	var labels, reqs []any
	for _, l := range p.labels {
		labels = append(labels, h.labelJSON(rp, l))
	}
	for _, r := range p.requested {
		reqs = append(reqs, h.userJSON(r, r.surfaceLogin()))
	}
	if labels == nil {
		labels = []any{}
	}
	if reqs == nil {
		reqs = []any{}
	}
	repoJ := h.repoFullJSONLocked(rp, u)
	branch := func(ref, sha string) map[string]any {
		return map[string]any{"label": rp.owner + ":" + ref, "ref": ref, "sha": sha, "user": h.userJSON(h.ownerUser(rp.owner), rp.owner), "repo": repoJ}
	}
	api := fmt.Sprintf("%s/repos/%s", h.APIURL(), rp.fullName())
	self := fmt.Sprintf("%s/pulls/%d", api, p.number)
	html := h.PRURL(rp.owner, rp.name, p.number)
	issue := fmt.Sprintf("%s/issues/%d", api, p.number)
	var mergeSHA any
	if p.mergeSHA != "" {
		mergeSHA = p.mergeSHA
	}
	return map[string]any{
		"url": self, "id": p.id, "node_id": p.nodeID(),
		"html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": issue,
		"commits_url": self + "/commits", "review_comments_url": self + "/comments", "review_comment_url": api + "/pulls/comments{/number}",
		"comments_url": issue + "/comments", "statuses_url": api + "/statuses/" + p.headSHA,
		"number": p.number, "state": state, "locked": false,
		"title": p.title, "body": p.body, "user": h.userJSON(p.author, ""), "labels": labels,
		"milestone": nil, "active_lock_reason": nil, "assignee": nil, "assignees": []any{},
		"created_at": ts(p.createdAt), "updated_at": ts(p.updatedAt), "closed_at": ts(p.closedAt), "merged_at": ts(p.mergedAt),
		"merge_commit_sha":    mergeSHA,
		"requested_reviewers": reqs, "requested_teams": []any{}, "head": branch(p.headRef, p.headSHA), "base": branch(p.baseRef, p.baseSHA),
		"draft": p.draft, "author_association": association(rp, p.author), "auto_merge": nil,
		"_links": map[string]any{
			"self": map[string]any{"href": self}, "html": map[string]any{"href": html}, "issue": map[string]any{"href": issue},
			"comments": map[string]any{"href": issue + "/comments"}, "review_comments": map[string]any{"href": self + "/comments"},
			"review_comment": map[string]any{"href": api + "/pulls/comments{/number}"}, "commits": map[string]any{"href": self + "/commits"},
			"statuses": map[string]any{"href": api + "/statuses/" + p.headSHA},
		},
	}
}

func (h *Hub) restListPulls(c *restCtx) {
	h.withRepo(func(c *restCtx) {
		want := c.r.URL.Query().Get("state")
		if want == "" {
			want = "open"
		}
		h.mu.Lock()
		var ps []*pr
		for _, p := range c.rp.prs {
			open := p.state == "OPEN"
			if want == "all" || (want == "open") == open {
				ps = append(ps, p)
			}
		}
		out := []any{}
		for _, p := range paged(c, ps) {
			out = append(out, h.pullSimpleJSONLocked(p, c.u))
		}
		h.mu.Unlock()
		c.reply(200, out)
	})(c)
}

func (h *Hub) restCreatePull(c *restCtx) {
	h.withRepo(func(c *restCtx) {
		var in struct {
			Title, Head, Base, Body string
			Draft                   bool
		}
		if !c.decode(&in) || !c.needWrite() {
			return
		}
		if in.Title == "" {
			c.invalid("PullRequest", "title", "missing_field", "")
			return
		}
		_, head, _ := strings.Cut(in.Head, ":")
		if head == "" {
			head = in.Head
		}
		n, err := h.CreatePR(c.rp.owner, c.rp.name, NewPR{Head: head, Base: in.Base, Title: in.Title, Body: in.Body, Draft: in.Draft, Author: c.u.login})
		if err != nil {
			c.invalid("PullRequest", "head", "custom", err.Error())
			return
		}
		h.mu.Lock()
		p := c.rp.pr(n)
		h.mu.Unlock()
		c.reply(201, h.pullJSON(c.ctx(), p, c.u))
	})(c)
}

func (h *Hub) restGetPull(c *restCtx) {
	if m := diffMedia(c.r); m != "" {
		h.restPullDiff(c, m)
		return
	}
	c.reply(200, h.pullJSON(c.ctx(), c.p, c.u))
}

func (h *Hub) restPatchPull(c *restCtx) {
	var in struct {
		Title *string
		Body  *string
		State *string
		Base  *string
	}
	if !c.decode(&in) {
		return
	}
	if !c.u.canWrite() && c.u != c.p.author {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	h.mu.Lock()
	p := c.p
	if in.Title != nil {
		p.title = *in.Title
	}
	if in.Body != nil {
		p.body = *in.Body
	}
	if in.Base != nil {
		p.baseRef = *in.Base
	}
	if in.State != nil {
		switch *in.State {
		case "closed":
			h.setPRStateLocked(p, c.u, false)
		case "open":
			h.setPRStateLocked(p, c.u, true)
		default:
			h.mu.Unlock()
			c.invalid("PullRequest", "state", "invalid", "")
			return
		}
	}
	if in.Title != nil || in.Body != nil || in.Base != nil {
		h.publishLocked(Event{Kind: "edited", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: c.u.restLogin})
	}
	p.updatedAt = h.now()
	h.mu.Unlock()
	c.reply(200, h.pullJSON(c.ctx(), p, c.u))
}

func (h *Hub) restMerge(c *restCtx) {
	var in struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if !c.decode(&in) || !c.needWrite() {
		return
	}
	ctx := c.ctx()
	h.mu.Lock()
	sha, err := h.mergeLocked(ctx, c.u, c.p, in.MergeMethod, in.CommitTitle, in.CommitMessage, in.SHA)
	h.mu.Unlock()
	if err != nil {
		c.fail(err.status, err.msg)
		return
	}
	if refs, err := readRefs(ctx, c.rp.dir); err == nil {
		h.refsChanged(ctx, c.rp, refs, c.u)
	}
	c.reply(200, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}

// mergeErr is why a merge was refused, with REST's status.
type mergeErr struct {
	status int
	msg    string
}

// mergeLocked merges p into its base branch as REST's merge and GraphQL's
// mergePullRequest do (method merge, squash or rebase — the last two as
// one commit on the base); the caller then re-reads the refs
// (refsChanged), which it must do without h.mu.
func (h *Hub) mergeLocked(ctx context.Context, by *user, p *pr, method, title, message, expectHead string) (string, *mergeErr) {
	rp := p.repo
	base, head, baseRef, headRef := p.baseSHA, p.headSHA, p.baseRef, p.headRef
	if p.state != "OPEN" {
		return "", &mergeErr{http.StatusMethodNotAllowed, "Pull Request is not mergeable"}
	}
	if expectHead != "" && expectHead != head {
		return "", &mergeErr{http.StatusConflict, "Head branch was modified. Review and try the merge again."}
	}
	cur, err := revParse(ctx, rp.dir, "refs/heads/"+baseRef)
	if err == nil {
		base = cur
	}
	mi, err := h.mergeState(ctx, rp.dir, base, head)
	if err != nil || mi.conflict {
		return "", &mergeErr{http.StatusMethodNotAllowed, "Pull Request is not mergeable"}
	}
	if rp.requireUpToDate && mi.behind {
		return "", &mergeErr{http.StatusMethodNotAllowed, "Head branch is out of date. Review and try the merge again."}
	}
	msg := title
	if msg == "" {
		msg = fmt.Sprintf("Merge pull request #%d from %s/%s", p.number, rp.owner, headRef)
		if method == "squash" {
			msg = fmt.Sprintf("%s (#%d)", p.title, p.number)
		}
	}
	if message != "" {
		msg += "\n\n" + message
	}
	args := []string{"commit-tree", mi.tree, "-p", base}
	if method == "" || method == "merge" {
		args = append(args, "-p", head)
	}
	args = append(args, "-m", msg)
	date := h.now().Format(time.RFC3339)
	sha, err := runGit(ctx, rp.dir, append([]string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, gitIdentity...), nil, args...)
	if err == nil {
		_, err = runGit(ctx, rp.dir, nil, nil, "update-ref", "refs/heads/"+baseRef, sha, base)
	}
	if err != nil {
		return "", &mergeErr{http.StatusConflict, "Base branch was modified. Review and try the merge again."}
	}
	now := h.now()
	p.state, p.mergedAt, p.closedAt, p.mergeSHA, p.mergedBy, p.updatedAt = "MERGED", now, now, sha, by, now
	p.baseSHA = base
	h.addEventLocked(p, &issueEvent{event: "merged", actor: by, commitID: sha})
	h.addEventLocked(p, &issueEvent{event: "closed", actor: by, commitID: sha})
	h.publishLocked(Event{Kind: "state", Owner: rp.owner, Repo: rp.name, Number: p.number, SHA: sha, Actor: by.restLogin, Detail: "merged"})
	return sha, nil
}

func (h *Hub) reviewJSON(rv *review) map[string]any {
	p := rv.pr
	return map[string]any{
		"id": rv.id, "node_id": rv.nodeID(), "user": h.userJSON(rv.author, ""), "body": rv.body, "state": rv.state,
		"html_url":         fmt.Sprintf("%s#pullrequestreview-%d", h.PRURL(p.repo.owner, p.repo.name, p.number), rv.id),
		"pull_request_url": fmt.Sprintf("%s/repos/%s/pulls/%d", h.APIURL(), p.repo.fullName(), p.number),
		"submitted_at":     ts(rv.submittedAt), "commit_id": rv.commitSHA, "author_association": association(p.repo, rv.author),
	}
}

func (h *Hub) restListReviews(c *restCtx) {
	h.mu.Lock()
	rvs := append([]*review(nil), c.p.reviews...)
	h.mu.Unlock()
	out := []any{}
	for _, rv := range paged(c, rvs) {
		out = append(out, h.reviewJSON(rv))
	}
	c.reply(200, out)
}

func (h *Hub) restGetReview(c *restCtx) {
	id, _ := strconv.ParseInt(c.r.PathValue("id"), 10, 64)
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, rv := range c.p.reviews {
		if rv.id == id {
			c.reply(200, h.reviewJSON(rv))
			return
		}
	}
	c.notFound()
}

// restDismissReview is PUT .../reviews/{id}/dismissals: a collaborator
// withdraws an approval or a change request (PR-T13).
func (h *Hub) restDismissReview(c *restCtx) {
	var in struct {
		Message string `json:"message"`
		Event   string `json:"event"`
	}
	if !c.decode(&in) || !c.needWrite() {
		return
	}
	if strings.TrimSpace(in.Message) == "" {
		c.invalid("PullRequestReview", "message", "missing_field", "")
		return
	}
	id, _ := strconv.ParseInt(c.r.PathValue("id"), 10, 64)
	rv, err := h.dismissReview(c.u, c.p, id, in.Message)
	switch {
	case errors.Is(err, errNoReview):
		c.notFound()
		return
	case err != nil:
		c.unprocessable(err.Error())
		return
	}
	h.mu.RLock()
	j := h.reviewJSON(rv)
	h.mu.RUnlock()
	c.reply(200, j)
}

func (h *Hub) restCreateReview(c *restCtx) {
	var in struct {
		CommitID string `json:"commit_id"`
		Body     string `json:"body"`
		Event    string `json:"event"`
		Comments []struct {
			Path      string `json:"path"`
			Line      int    `json:"line"`
			StartLine int    `json:"start_line"`
			Side      string `json:"side"`
			Position  int    `json:"position"`
			Body      string `json:"body"`
		} `json:"comments"`
	}
	if !c.decode(&in) {
		return
	}
	var cs []NewComment
	for _, x := range in.Comments {
		if x.Line == 0 && x.Position != 0 {
			c.unprocessable("fakehub supports line-based review comments only (use line, not position)")
			return
		}
		cs = append(cs, NewComment{Path: x.Path, Line: x.Line, StartLine: x.StartLine, Side: x.Side, Body: x.Body})
	}
	rv, err := h.createReview(c.ctx(), c.u, c.p, in.Event, in.Body, in.CommitID, cs)
	if err != nil {
		c.unprocessable(err.Error())
		return
	}
	h.mu.Lock()
	j := h.reviewJSON(rv)
	h.mu.Unlock()
	c.reply(200, j)
}

func (h *Hub) commentJSON(ctx context.Context, rc *reviewComment) map[string]any {
	t := rc.thread
	p := t.pr
	line, start, outdated := h.threadPos(ctx, t)
	h.mu.Lock()
	defer h.mu.Unlock()
	j := map[string]any{
		"id": rc.id, "node_id": rc.nodeID(), "pull_request_review_id": rc.reviewID,
		"url":      fmt.Sprintf("%s/repos/%s/pulls/comments/%d", h.APIURL(), p.repo.fullName(), rc.id),
		"html_url": h.commentURL(rc),
		"path":     t.path, "body": rc.body, "user": h.userJSON(rc.author, rc.author.surfaceLogin()),
		"commit_id": p.headSHA, "original_commit_id": t.commitSHA,
		"diff_hunk":  t.diffHunk,
		"created_at": ts(rc.createdAt), "updated_at": ts(rc.createdAt),
		"author_association": association(p.repo, rc.author), "side": t.side, "original_line": t.line,
		"pull_request_url": fmt.Sprintf("%s/repos/%s/pulls/%d", h.APIURL(), p.repo.fullName(), p.number),
		"subject_type":     "line", "line": nil, "position": nil, "original_position": 1,
	}
	if !outdated {
		j["line"] = line
		j["position"] = 1
		if start != 0 {
			j["start_line"] = start
			j["start_side"] = t.side
		}
	}
	if t.startLine != 0 {
		j["original_start_line"] = t.startLine
	}
	if rc.replyTo != 0 {
		j["in_reply_to_id"] = rc.replyTo
	}
	return j
}

func (h *Hub) restListReviewComments(c *restCtx) {
	h.mu.Lock()
	var cs []*reviewComment
	read := c.p.reads.Load()
	for _, t := range c.p.threads {
		if t.review == nil || !t.review.lagging(read) {
			cs = append(cs, t.comments...)
		}
	}
	h.mu.Unlock()
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	out := []any{}
	for _, rc := range paged(c, cs) {
		out = append(out, h.commentJSON(c.ctx(), rc))
	}
	c.reply(200, out)
}

func (h *Hub) restReply(c *restCtx) {
	var in struct {
		Body string `json:"body"`
	}
	if !c.decode(&in) {
		return
	}
	id, _ := strconv.ParseInt(c.r.PathValue("id"), 10, 64)
	t := h.threadOfComment(c.p, id)
	if t == nil {
		c.notFound()
		return
	}
	if strings.TrimSpace(in.Body) == "" {
		c.invalid("PullRequestReviewComment", "body", "missing_field", "")
		return
	}
	rc := h.replyToThread(c.u, t, in.Body)
	c.reply(201, h.commentJSON(c.ctx(), rc))
}

// restCreateReviewComment is a single inline comment (its own review) or,
// with in_reply_to, a reply.
func (h *Hub) restCreateReviewComment(c *restCtx) {
	var in struct {
		Body      string `json:"body"`
		InReplyTo int64  `json:"in_reply_to"`
		CommitID  string `json:"commit_id"`
		Path      string `json:"path"`
		Line      int    `json:"line"`
		StartLine int    `json:"start_line"`
		Side      string `json:"side"`
	}
	if !c.decode(&in) {
		return
	}
	if strings.TrimSpace(in.Body) == "" {
		c.invalid("PullRequestReviewComment", "body", "missing_field", "")
		return
	}
	if in.InReplyTo != 0 {
		t := h.threadOfComment(c.p, in.InReplyTo)
		if t == nil {
			c.notFound()
			return
		}
		c.reply(201, h.commentJSON(c.ctx(), h.replyToThread(c.u, t, in.Body)))
		return
	}
	rv, err := h.createReview(c.ctx(), c.u, c.p, "COMMENT", "", in.CommitID, []NewComment{{Path: in.Path, Line: in.Line, StartLine: in.StartLine, Side: in.Side, Body: in.Body}})
	if err != nil {
		c.unprocessable(err.Error())
		return
	}
	h.mu.Lock()
	var rc *reviewComment
	for _, t := range c.p.threads {
		if t.comments[0].reviewID == rv.id {
			rc = t.comments[0]
		}
	}
	h.mu.Unlock()
	c.reply(201, h.commentJSON(c.ctx(), rc))
}

func (h *Hub) threadOfComment(p *pr, id int64) *thread {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range p.threads {
		for _, rc := range t.comments {
			if rc.id == id {
				return t
			}
		}
	}
	return nil
}

func (h *Hub) restListRequested(c *restCtx) {
	h.mu.Lock()
	users := []any{}
	for _, u := range c.p.requested {
		users = append(users, h.userJSON(u, u.surfaceLogin()))
	}
	h.mu.Unlock()
	c.reply(200, map[string]any{"users": users, "teams": []any{}})
}

func (h *Hub) restRequestReviewers(c *restCtx) {
	var in struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if !c.decode(&in) || !c.needWrite() {
		return
	}
	var want []*user
	for _, l := range in.Reviewers {
		u := h.userByLogin(l)
		if u == h.copilot() {
			// GitHub answers 201 for Copilot over REST but does not
			// request it (PR-O5).
			continue
		}
		if u == nil || u.typ == "Bot" {
			c.unprocessable(fmt.Sprintf("Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s repository.", c.rp.fullName()))
			return
		}
		want = append(want, u)
	}
	if len(in.TeamReviewers) > 0 {
		c.unprocessable("Could not resolve to a node with the global id of team")
		return
	}
	if err := h.requestReviewers(c.u, c.p, want, true); err != nil {
		c.unprocessable(err.Error())
		return
	}
	c.reply(201, h.pullJSON(c.ctx(), c.p, c.u))
}

func (h *Hub) restRemoveReviewers(c *restCtx) {
	var in struct {
		Reviewers []string `json:"reviewers"`
	}
	if !c.decode(&in) || !c.needWrite() {
		return
	}
	h.mu.Lock()
	for _, l := range in.Reviewers {
		if u := h.userByLogin(l); u != nil && containsUser(c.p.requested, u) {
			removeRequestedLocked(c.p, u)
			h.addEventLocked(c.p, &issueEvent{event: "review_request_removed", actor: c.u, requestedReviewer: u})
		}
	}
	h.mu.Unlock()
	c.reply(200, h.pullJSON(c.ctx(), c.p, c.u))
}

func (h *Hub) issueCommentJSON(p *pr, ic *issueComment) map[string]any {
	rp := p.repo
	return map[string]any{
		"id": ic.id, "node_id": ic.nodeID(), "body": ic.body, "user": h.userJSON(ic.author, ic.author.surfaceLogin()),
		"created_at": ts(ic.createdAt), "updated_at": ts(ic.updatedAt), "author_association": association(rp, ic.author),
		"url":                      fmt.Sprintf("%s/repos/%s/issues/comments/%d", h.APIURL(), rp.fullName(), ic.id),
		"html_url":                 fmt.Sprintf("%s#issuecomment-%d", h.PRURL(rp.owner, rp.name, p.number), ic.id),
		"issue_url":                fmt.Sprintf("%s/repos/%s/issues/%d", h.APIURL(), rp.fullName(), p.number),
		"performed_via_github_app": nil,
		"reactions": map[string]any{
			"url":         fmt.Sprintf("%s/repos/%s/issues/comments/%d/reactions", h.APIURL(), rp.fullName(), ic.id),
			"total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
		},
	}
}

func (h *Hub) restListIssueComments(c *restCtx) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []any{}
	for _, ic := range paged(c, c.p.issueComments) {
		out = append(out, h.issueCommentJSON(c.p, ic))
	}
	c.reply(200, out)
}

func (h *Hub) restCreateIssueComment(c *restCtx) {
	var in struct {
		Body string `json:"body"`
	}
	if !c.decode(&in) {
		return
	}
	if strings.TrimSpace(in.Body) == "" {
		c.invalid("IssueComment", "body", "missing_field", "")
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ic := h.addIssueCommentLocked(c.u, c.p, in.Body)
	c.reply(201, h.issueCommentJSON(c.p, ic))
}

// addIssueCommentLocked adds a conversation comment to p (REST and
// GraphQL's addComment).
func (h *Hub) addIssueCommentLocked(by *user, p *pr, body string) *issueComment {
	now := h.now()
	ic := &issueComment{id: h.newIDLocked(), author: by, body: body, createdAt: now, updatedAt: now}
	p.issueComments = append(p.issueComments, ic)
	h.nodes[ic.nodeID()] = ic
	p.updatedAt = now
	h.publishLocked(Event{Kind: "comment", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: by.restLogin})
	return ic
}

func (h *Hub) labelJSON(rp *repo, l *label) map[string]any {
	return map[string]any{"id": l.id, "node_id": fmt.Sprintf("LA_fh%d", l.id), "name": l.name, "color": l.color, "default": false, "description": nil,
		"url": fmt.Sprintf("%s/repos/%s/labels/%s", h.APIURL(), rp.fullName(), url.PathEscape(l.name))}
}

func (h *Hub) labelsLocked(c *restCtx) []any {
	out := []any{}
	for _, l := range c.p.labels {
		out = append(out, h.labelJSON(c.rp, l))
	}
	return out
}

func (h *Hub) restListLabels(c *restCtx) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.reply(200, h.labelsLocked(c))
}

func (h *Hub) restAddLabels(c *restCtx) {
	b, _ := io.ReadAll(io.LimitReader(c.r.Body, 1<<20))
	var names []string
	var obj struct {
		Labels []string `json:"labels"`
	}
	if err := json.Unmarshal(b, &obj); err == nil && obj.Labels != nil {
		names = obj.Labels
	} else if err := json.Unmarshal(b, &names); err != nil {
		c.invalid("Label", "labels", "invalid", "")
		return
	}
	if !c.needWrite() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			continue
		}
		l := c.rp.labels[strings.ToLower(n)]
		if l == nil {
			l = &label{id: h.newIDLocked(), name: n, color: "ededed"}
			c.rp.labels[strings.ToLower(n)] = l
		}
		has := false
		for _, x := range c.p.labels {
			has = has || x == l
		}
		if has {
			continue
		}
		c.p.labels = append(c.p.labels, l)
		h.addEventLocked(c.p, &issueEvent{event: "labeled", actor: c.u, label: l.name})
		h.publishLocked(Event{Kind: "label", Owner: c.rp.owner, Repo: c.rp.name, Number: c.p.number, Actor: c.u.restLogin, Detail: l.name})
	}
	c.reply(200, h.labelsLocked(c))
}

func (h *Hub) restRemoveLabel(c *restCtx) {
	if !c.needWrite() {
		return
	}
	name := c.r.PathValue("name")
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, l := range c.p.labels {
		if strings.EqualFold(l.name, name) {
			c.p.labels = append(c.p.labels[:i], c.p.labels[i+1:]...)
			h.addEventLocked(c.p, &issueEvent{event: "unlabeled", actor: c.u, label: l.name})
			h.publishLocked(Event{Kind: "label", Owner: c.rp.owner, Repo: c.rp.name, Number: c.p.number, Actor: c.u.restLogin, Detail: "-" + l.name})
			c.reply(200, h.labelsLocked(c))
			return
		}
	}
	c.fail(http.StatusNotFound, "Label does not exist")
}

func (h *Hub) restListEvents(c *restCtx) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []any{}
	for _, ev := range paged(c, c.p.events) {
		j := map[string]any{
			"id": ev.id, "node_id": fmt.Sprintf("E_fh%d", ev.id), "event": ev.event, "actor": h.userJSON(ev.actor, ev.actor.surfaceLogin()),
			"created_at": ts(ev.createdAt), "commit_id": nil, "commit_url": nil, "performed_via_github_app": nil,
			"url": fmt.Sprintf("%s/repos/%s/issues/events/%d", h.APIURL(), c.rp.fullName(), ev.id),
		}
		if ev.commitID != "" {
			j["commit_id"] = ev.commitID
			j["commit_url"] = fmt.Sprintf("%s/repos/%s/commits/%s", h.APIURL(), c.rp.fullName(), ev.commitID)
		}
		if ev.label != "" {
			j["label"] = map[string]any{"name": ev.label, "color": "ededed"}
		}
		if ev.requestedReviewer != nil {
			j["requested_reviewer"] = h.userJSON(ev.requestedReviewer, ev.requestedReviewer.surfaceLogin())
			j["review_requester"] = h.userJSON(ev.actor, ev.actor.surfaceLogin())
		}
		out = append(out, j)
	}
	c.reply(200, out)
}

func (h *Hub) statusJSON(rp *repo, s *commitStatus) map[string]any {
	return map[string]any{
		"id": s.id, "node_id": fmt.Sprintf("SC_fh%d", s.id), "state": s.state, "context": s.context, "description": s.description,
		"target_url": s.targetURL, "creator": h.userJSON(s.creator, ""), "created_at": ts(s.createdAt), "updated_at": ts(s.updatedAt),
		"avatar_url": avatarOf(h, s.creator),
		"url":        fmt.Sprintf("%s/repos/%s/statuses/%s", h.APIURL(), rp.fullName(), s.sha),
	}
}

func (h *Hub) restCreateStatus(c *restCtx) {
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if !c.decode(&in) || !c.needWrite() {
		return
	}
	switch in.State {
	case "pending", "success", "failure", "error":
	default:
		c.invalid("Status", "state", "custom", "state is not included in the list")
		return
	}
	sha, err := revParse(c.ctx(), c.rp.dir, c.r.PathValue("sha"))
	if err != nil || sha != c.r.PathValue("sha") {
		c.invalid("Status", "sha", "custom", "No commit found for SHA: "+c.r.PathValue("sha"))
		return
	}
	if in.Context == "" {
		in.Context = "default"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	s := &commitStatus{id: h.newIDLocked(), sha: sha, state: in.State, context: in.Context, description: in.Description, targetURL: in.TargetURL, creator: c.u, createdAt: now, updatedAt: now}
	c.rp.statuses = append(c.rp.statuses, s)
	h.publishLocked(Event{Kind: "status", Owner: c.rp.owner, Repo: c.rp.name, Number: h.prNumberForSHALocked(c.rp, sha), SHA: sha, Actor: c.u.restLogin, Detail: in.Context + "=" + in.State})
	c.reply(201, h.statusJSON(c.rp, s))
}

func (h *Hub) prNumberForSHALocked(rp *repo, sha string) int {
	for _, p := range rp.prs {
		if p.headSHA == sha {
			return p.number
		}
	}
	return 0
}

func (c *restCtx) resolveRef() (string, bool) {
	sha, err := revParse(c.ctx(), c.rp.dir, c.r.PathValue("ref"))
	if err != nil || sha == "" {
		c.reply(http.StatusUnprocessableEntity, map[string]any{"message": "No commit found for SHA: " + c.r.PathValue("ref"), "documentation_url": docURL})
		return "", false
	}
	return sha, true
}

func (h *Hub) restCombinedStatus(c *restCtx) {
	sha, ok := c.resolveRef()
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	sts := c.rp.latestStatuses(sha)
	state := "pending"
	if len(sts) > 0 {
		state = "success"
		for _, s := range sts {
			switch s.state {
			case "failure", "error":
				state = "failure"
			case "pending":
				if state == "success" {
					state = "pending"
				}
			}
		}
	}
	out := []any{}
	for _, s := range sts {
		out = append(out, h.statusJSON(c.rp, s))
	}
	commit := h.APIURL() + "/repos/" + c.rp.fullName() + "/commits/" + sha
	c.reply(200, map[string]any{"state": state, "sha": sha, "total_count": len(sts), "statuses": out, "repository": h.repoJSON(c.rp, c.u),
		"commit_url": commit, "url": commit + "/status"})
}

func (h *Hub) restListStatuses(c *restCtx) {
	sha, ok := c.resolveRef()
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var sts []*commitStatus
	for i := len(c.rp.statuses) - 1; i >= 0; i-- {
		if c.rp.statuses[i].sha == sha {
			sts = append(sts, c.rp.statuses[i])
		}
	}
	out := []any{}
	for _, s := range paged(c, sts) {
		out = append(out, h.statusJSON(c.rp, s))
	}
	c.reply(200, out)
}

func (h *Hub) checkRunJSON(rp *repo, cr *checkRun) map[string]any {
	var app any
	if cr.app != nil {
		name := cr.app.login
		if cr.app.login == LoginCI {
			name = "GitHub Actions"
		}
		// GitHub's integration object: the App and its owner, what
		// it may do and the events it receives.
		app = map[string]any{"id": cr.app.id, "slug": cr.app.login, "name": name, "node_id": fmt.Sprintf("A_fh%d", cr.app.id),
			"owner": h.userJSON(h.ownerUser(rp.owner), rp.owner), "description": "", "external_url": h.BaseURL(),
			"html_url": h.BaseURL() + "/apps/" + cr.app.login, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
			"permissions": map[string]any{"checks": "write", "contents": "read", "metadata": "read", "pull_requests": "write", "statuses": "write"},
			"events":      []any{"check_run", "check_suite", "pull_request"}}
	}
	var concl any
	if cr.conclusion != "" {
		concl = cr.conclusion
	}
	return map[string]any{
		"id": cr.id, "node_id": cr.nodeID(), "head_sha": cr.sha, "name": cr.name, "status": cr.status, "conclusion": concl,
		"started_at": ts(cr.startedAt), "completed_at": ts(cr.completedAt), "details_url": cr.detailsURL,
		"url":      fmt.Sprintf("%s/repos/%s/check-runs/%d", h.APIURL(), rp.fullName(), cr.id),
		"html_url": fmt.Sprintf("%s/%s/runs/%d", h.BaseURL(), rp.fullName(), cr.id),
		"output": map[string]any{"title": strp(cr.title), "summary": strp(cr.summary), "text": strp(cr.text), "annotations_count": len(cr.annotations),
			"annotations_url": fmt.Sprintf("%s/repos/%s/check-runs/%d/annotations", h.APIURL(), rp.fullName(), cr.id)},
		"external_id": "",
		"check_suite": map[string]any{"id": cr.id}, "app": app, "pull_requests": []any{},
	}
}

type checkRunInput struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	DetailsURL  *string    `json:"details_url"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title       string `json:"title"`
		Summary     string `json:"summary"`
		Text        string `json:"text"`
		Annotations []struct {
			Path            string `json:"path"`
			StartLine       int    `json:"start_line"`
			EndLine         int    `json:"end_line"`
			AnnotationLevel string `json:"annotation_level"`
			Title           string `json:"title"`
			Message         string `json:"message"`
		} `json:"annotations"`
	} `json:"output"`
}

// applyCheckRun validates and applies in to cr; "" when fine.
func applyCheckRun(cr *checkRun, in checkRunInput, now time.Time) string {
	if in.Name != nil {
		cr.name = *in.Name
	}
	if in.DetailsURL != nil {
		cr.detailsURL = *in.DetailsURL
	}
	if in.Status != nil {
		switch *in.Status {
		case "queued", "in_progress", "completed":
			cr.status = *in.Status
		default:
			return "status"
		}
	}
	if in.Conclusion != nil {
		switch *in.Conclusion {
		case "action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out":
			cr.conclusion = *in.Conclusion
			cr.status = "completed"
		default:
			return "conclusion"
		}
	}
	if cr.status == "completed" && cr.conclusion == "" {
		return "conclusion"
	}
	if in.StartedAt != nil {
		cr.startedAt = in.StartedAt.UTC()
	}
	if in.CompletedAt != nil {
		cr.completedAt = in.CompletedAt.UTC()
	}
	if cr.status == "completed" && cr.completedAt.IsZero() {
		cr.completedAt = now
	}
	if in.Output != nil {
		cr.title, cr.summary, cr.text = in.Output.Title, in.Output.Summary, in.Output.Text
		// GitHub appends annotations across updates (at most 50 a request).
		for _, a := range in.Output.Annotations {
			switch a.AnnotationLevel {
			case "notice", "warning", "failure":
			default:
				return "annotation_level"
			}
			if a.Path == "" || a.Message == "" || a.StartLine <= 0 || a.EndLine < a.StartLine {
				return "annotations"
			}
			cr.annotations = append(cr.annotations, &checkAnnotation{path: a.Path, startLine: a.StartLine, endLine: a.EndLine,
				level: a.AnnotationLevel, title: a.Title, message: a.Message})
		}
	}
	return ""
}

func (h *Hub) restCreateCheckRun(c *restCtx) {
	var in checkRunInput
	if !c.decode(&in) {
		return
	}
	if c.u.typ != "Bot" {
		c.fail(http.StatusForbidden, "You must authenticate via a GitHub App.")
		return
	}
	if in.Name == nil || *in.Name == "" {
		c.invalid("CheckRun", "name", "missing_field", "")
		return
	}
	if in.HeadSHA == nil {
		c.invalid("CheckRun", "head_sha", "missing_field", "")
		return
	}
	sha, err := revParse(c.ctx(), c.rp.dir, *in.HeadSHA)
	if err != nil || sha != *in.HeadSHA {
		c.invalid("CheckRun", "head_sha", "invalid", "No commit found for SHA: "+*in.HeadSHA)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	cr := &checkRun{id: h.newIDLocked(), sha: sha, status: "queued", app: c.u, startedAt: now}
	if bad := applyCheckRun(cr, in, now); bad != "" {
		c.invalid("CheckRun", bad, "invalid", "")
		return
	}
	c.rp.checkRuns = append(c.rp.checkRuns, cr)
	h.nodes[cr.nodeID()] = cr
	h.publishLocked(Event{Kind: "check", Owner: c.rp.owner, Repo: c.rp.name, Number: h.prNumberForSHALocked(c.rp, sha), SHA: sha, Actor: c.u.restLogin, Detail: cr.status})
	c.reply(201, h.checkRunJSON(c.rp, cr))
}

func (h *Hub) findCheckRunLocked(c *restCtx) *checkRun {
	id, _ := strconv.ParseInt(c.r.PathValue("id"), 10, 64)
	for _, cr := range c.rp.checkRuns {
		if cr.id == id {
			return cr
		}
	}
	return nil
}

func (h *Hub) restUpdateCheckRun(c *restCtx) {
	var in checkRunInput
	if !c.decode(&in) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cr := h.findCheckRunLocked(c)
	if cr == nil {
		c.notFound()
		return
	}
	if c.u != cr.app {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	if bad := applyCheckRun(cr, in, h.now()); bad != "" {
		c.invalid("CheckRun", bad, "invalid", "")
		return
	}
	h.publishLocked(Event{Kind: "check", Owner: c.rp.owner, Repo: c.rp.name, Number: h.prNumberForSHALocked(c.rp, cr.sha), SHA: cr.sha, Actor: c.u.restLogin, Detail: cr.status + ":" + cr.conclusion})
	c.reply(200, h.checkRunJSON(c.rp, cr))
}

func (h *Hub) restGetCheckRun(c *restCtx) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cr := h.findCheckRunLocked(c)
	if cr == nil {
		c.notFound()
		return
	}
	c.reply(200, h.checkRunJSON(c.rp, cr))
}

func (h *Hub) restListCheckRuns(c *restCtx) {
	sha, ok := c.resolveRef()
	if !ok {
		return
	}
	q := c.r.URL.Query()
	h.mu.Lock()
	defer h.mu.Unlock()
	var runs []*checkRun
	if q.Get("filter") == "all" {
		for _, cr := range c.rp.checkRuns {
			if cr.sha == sha {
				runs = append(runs, cr)
			}
		}
	} else {
		runs = c.rp.latestCheckRuns(sha)
	}
	out := []any{}
	for _, cr := range runs {
		if n := q.Get("check_name"); n != "" && n != cr.name {
			continue
		}
		if s := q.Get("status"); s != "" && s != cr.status {
			continue
		}
		if a := q.Get("app_id"); a != "" && (cr.app == nil || strconv.FormatInt(cr.app.id, 10) != a) {
			continue
		}
		out = append(out, h.checkRunJSON(c.rp, cr))
	}
	c.reply(200, map[string]any{"total_count": len(out), "check_runs": paged(c, out)})
}

func (h *Hub) restPermission(c *restCtx) {
	login := c.r.PathValue("login")
	u := h.userByLogin(login)
	perm := "none"
	switch {
	case strings.EqualFold(login, c.rp.owner):
		perm = "admin"
		if u == nil {
			u = h.ownerUser(c.rp.owner)
		}
	case u == nil:
		c.notFound()
		return
	default:
		perm = u.perm
	}
	c.reply(200, map[string]any{"permission": perm, "role_name": perm, "user": h.userJSON(u, login)})
}

// restCompare answers GET /repos/{owner}/{repo}/compare/{base}...{head}
// (two dots are taken too): how many commits head has that base lacks
// (ahead_by), and the reverse (behind_by), from the repository's git.
func (h *Hub) restCompare(c *restCtx) {
	baseRev, headRev, ok := strings.Cut(c.r.PathValue("basehead"), "...")
	if !ok {
		baseRev, headRev, ok = strings.Cut(c.r.PathValue("basehead"), "..")
	}
	if !ok || baseRev == "" || headRev == "" {
		c.notFound()
		return
	}
	ctx := c.ctx()
	base, err1 := revParse(ctx, c.rp.dir, baseRev)
	head, err2 := revParse(ctx, c.rp.dir, headRev)
	if err1 != nil || err2 != nil || base == "" || head == "" {
		c.notFound()
		return
	}
	counts, err := runGit(ctx, c.rp.dir, nil, nil, "rev-list", "--left-right", "--count", base+"..."+head)
	mergeBase, err2 := runGit(ctx, c.rp.dir, nil, nil, "merge-base", base, head)
	var behind, ahead int
	if err == nil {
		_, err = fmt.Sscanf(strings.TrimSpace(counts), "%d %d", &behind, &ahead)
	}
	if err != nil || err2 != nil {
		c.fail(http.StatusInternalServerError, "compare: "+fmt.Sprint(err, err2))
		return
	}
	commits, err := h.prCommits(ctx, c.rp.dir, base, head)
	if err != nil {
		c.fail(http.StatusInternalServerError, "compare: "+err.Error())
		return
	}
	status := "diverged"
	switch {
	case ahead == 0 && behind == 0:
		status = "identical"
	case behind == 0:
		status = "ahead"
	case ahead == 0:
		status = "behind"
	}
	repoURL := h.APIURL() + "/repos/" + c.rp.fullName()
	htmlURL := h.BaseURL() + "/" + c.rp.fullName() + "/compare/" + base + "..." + head
	cs := []any{}
	for _, ci := range commits {
		cs = append(cs, h.commitJSON(c.rp, ci))
	}
	// The files changed from the merge base to head, as GitHub's
	// three-dot compare lists them.
	changed, err := h.prFiles(ctx, c.rp.dir, base, head)
	if err != nil {
		c.fail(http.StatusInternalServerError, "compare: "+err.Error())
		return
	}
	files := []any{}
	for _, f := range changed {
		files = append(files, h.fileJSON(c.rp, head, f))
	}
	c.reply(200, map[string]any{
		"files": files,
		"url":   repoURL + "/compare/" + baseRev + "..." + headRev, "html_url": htmlURL,
		"permalink_url": htmlURL, "diff_url": htmlURL + ".diff", "patch_url": htmlURL + ".patch",
		"base_commit":       h.commitAt(ctx, c.rp, base),
		"merge_base_commit": h.commitAt(ctx, c.rp, strings.TrimSpace(mergeBase)),
		"status":            status, "ahead_by": ahead, "behind_by": behind, "total_commits": ahead, "commits": cs,
	})
}

// avatarOf is a status's avatar: its creator's (GitHub shows the App's or
// the user's picture beside it).
func avatarOf(h *Hub, u *user) any {
	if u == nil {
		return nil
	}
	return fmt.Sprintf("%s/avatars/u/%d", h.BaseURL(), u.id)
}

// commitAt is the commit object of sha as compare gives its base and merge
// base; just its sha and url when git cannot read it.
func (h *Hub) commitAt(ctx context.Context, rp *repo, sha string) map[string]any {
	ci, err := commitOne(ctx, rp.dir, sha)
	if err != nil {
		return map[string]any{"sha": sha, "url": h.APIURL() + "/repos/" + rp.fullName() + "/commits/" + sha}
	}
	return h.commitJSON(rp, ci)
}
