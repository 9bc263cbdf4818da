package fakelab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

func itoa(n int) string { return strconv.Itoa(n) }

func msg(s string) map[string]any { return map[string]any{"message": s} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// params are a request's parameters: the query, then a form or JSON body,
// flattened the way Rails sees them ("position[new_line]", "reviewer_ids[]").
type params url.Values

func (p params) get(k string) string { return url.Values(p).Get(k) }

func (p params) list(k string) []string {
	if v := p[k+"[]"]; len(v) > 0 {
		return v
	}
	if v := p[k]; len(v) == 1 && strings.Contains(v[0], ",") {
		return strings.Split(v[0], ",")
	}
	return p[k]
}

func readParams(r *http.Request) (params, error) {
	out := params(r.URL.Query())
	if r.Body == nil || r.Method == http.MethodGet {
		return out, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case len(body) == 0:
	case ct == "application/json" || body[0] == '{':
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("body is not valid JSON: %w", err)
		}
		flatten(out, "", m)
	default:
		vs, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, err
		}
		for k, v := range vs {
			out[k] = append(out[k], v...)
		}
	}
	return out, nil
}

func flatten(out params, prefix string, v any) {
	key := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "[" + k + "]"
	}
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			flatten(out, key(k), vv)
		}
	case []any:
		for _, vv := range x {
			out[prefix+"[]"] = append(out[prefix+"[]"], scalar(vv))
		}
		if len(x) == 0 {
			out[prefix+"[]"] = []string{}
		}
	case nil:
	default:
		out[prefix] = append(out[prefix], scalar(x))
	}
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// segments splits the escaped path so "g%2Fp" stays one segment.
func segments(r *http.Request) []string {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4/")
	parts := strings.Split(strings.Trim(raw, "/"), "/")
	for i, s := range parts {
		if u, err := url.PathUnescape(s); err == nil {
			parts[i] = u
		}
	}
	return parts
}

type rateWindow struct {
	reset time.Time
	used  int
}

// rateLocked counts a request against u's minute and sets GitLab's rate
// headers; false when the limit is spent (429).
func (l *Lab) rateLocked(w http.ResponseWriter, u *user) bool {
	if l.opts.RateLimit < 0 {
		return true
	}
	rw := l.rate[u.token]
	if rw == nil || time.Now().After(rw.reset) {
		rw = &rateWindow{reset: time.Now().Add(time.Minute).Truncate(time.Second)}
		l.rate[u.token] = rw
	}
	rw.used++
	h := w.Header()
	h.Set("RateLimit-Limit", itoa(l.opts.RateLimit))
	h.Set("RateLimit-Observed", itoa(rw.used))
	h.Set("RateLimit-Remaining", itoa(max(l.opts.RateLimit-rw.used, 0)))
	h.Set("RateLimit-Reset", strconv.FormatInt(rw.reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", rw.reset.UTC().Format(http.TimeFormat))
	if rw.used > l.opts.RateLimit {
		h.Set("Retry-After", itoa(max(int(time.Until(rw.reset).Seconds()+0.999), 1)))
		return false
	}
	return true
}

// paginate sets GitLab's pagination headers and returns the page's bounds.
func paginate(w http.ResponseWriter, r *http.Request, total int) (int, int) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	pages := max((total+per-1)/per, 1)
	h := w.Header()
	h.Set("X-Page", itoa(page))
	h.Set("X-Per-Page", itoa(per))
	h.Set("X-Total", itoa(total))
	h.Set("X-Total-Pages", itoa(pages))
	h.Set("X-Prev-Page", "")
	h.Set("X-Next-Page", "")
	if page > 1 {
		h.Set("X-Prev-Page", itoa(page-1))
	}
	if page < pages {
		h.Set("X-Next-Page", itoa(page+1))
		u := *r.URL
		vs := u.Query()
		vs.Set("page", itoa(page+1))
		vs.Set("per_page", itoa(per))
		u.RawQuery = vs.Encode()
		h.Set("Link", fmt.Sprintf(`<%s>; rel="next"`, u.String()))
	}
	start := min((page-1)*per, total)
	return start, min(start+per, total)
}

func pageOf[T any](w http.ResponseWriter, r *http.Request, xs []T) []T {
	s, e := paginate(w, r, len(xs))
	out := xs[s:e]
	if out == nil {
		out = []T{}
	}
	return out
}

// serveREST answers /api/v4 with the lab's lock held for the whole
// request (the per-request snapshot).
func (l *Lab) serveREST(w http.ResponseWriter, r *http.Request) {
	ps, err := readParams(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts.REST++
	u := l.authenticate(r)
	if u == nil {
		writeJSON(w, http.StatusUnauthorized, msg("401 Unauthorized"))
		return
	}
	if !l.rateLocked(w, u) {
		writeJSON(w, http.StatusTooManyRequests, msg("429 Too Many Requests"))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		l.logWriteLocked(u, "rest", r.Method+" "+r.URL.Path, nil)
	}
	status, body := l.restLocked(r, ps, u, segments(r), w)
	if body == nil {
		body = msg(fmt.Sprintf("%d %s", status, http.StatusText(status)))
	}
	writeJSON(w, status, body)
}

var (
	notFound  = msg("404 Not found")
	forbidden = msg("403 Forbidden")
)

func badRequest(s string) any { return msg("400 Bad request - " + s) }

func (l *Lab) restLocked(r *http.Request, ps params, u *user, seg []string, w http.ResponseWriter) (int, any) {
	get, post, put := r.Method == http.MethodGet, r.Method == http.MethodPost, r.Method == http.MethodPut
	switch {
	case len(seg) == 1 && seg[0] == "user" && get:
		return 200, l.currentUserJSON(u)
	case len(seg) == 1 && seg[0] == "users" && get:
		var out []any
		for _, x := range l.users {
			if n := ps.get("username"); n == "" || strings.EqualFold(n, x.username) {
				out = append(out, map[string]any{"id": x.id, "username": x.username, "name": x.name, "state": "active",
					"bot": x.bot, "avatar_url": nil, "web_url": l.URL() + "/" + x.username, "locked": false})
			}
		}
		return 200, pageOf(w, r, out)
	case len(seg) >= 2 && seg[0] == "projects":
		p := l.projectLocked(seg[1])
		if p == nil || !p.canRead(u) {
			return 404, msg("404 Project Not Found")
		}
		return l.projectRoute(r, ps, u, p, seg[2:], w, get, post, put)
	}
	return 404, msg("404 Not Found")
}

func (l *Lab) currentUserJSON(u *user) map[string]any {
	j := map[string]any{"id": u.id, "username": u.username, "name": u.name, "state": "active", "bot": u.bot,
		"avatar_url": nil, "web_url": l.URL() + "/" + u.username, "locked": false}
	// GET /user's own profile, as GitLab gives it to its user: the
	// sandbox's people have none of it filled in.
	const joined = "2026-01-01T00:00:00.000Z"
	for k, v := range map[string]any{
		"created_at": joined, "updated_at": joined, "bio": "", "location": "", "public_email": "", "skype": "", "linkedin": "",
		"twitter": "", "discord": "", "github": "", "website_url": "", "organization": "", "job_title": "", "pronouns": nil,
		"work_information": nil, "local_time": nil, "last_sign_in_at": nil, "confirmed_at": joined, "last_activity_on": nil,
		"email": u.username + "@example.com", "theme_id": 1, "color_scheme_id": 1, "projects_limit": 100000,
		"current_sign_in_at": nil, "identities": []any{}, "can_create_group": true, "can_create_project": true,
		"two_factor_enabled": false, "external": false, "private_profile": false, "commit_email": u.username + "@example.com",
		"followers": 0, "following": 0, "is_followed": false,
	} {
		j[k] = v
	}
	return j
}

func (l *Lab) userBasic(u *user) any {
	if u == nil {
		return nil
	}
	return map[string]any{"id": u.id, "username": u.username, "name": u.name, "state": "active",
		"avatar_url": nil, "web_url": l.URL() + "/" + u.username, "locked": false}
}

func (l *Lab) projectJSON(p *project) map[string]any {
	parts := strings.Split(p.path, "/")
	vis := "public"
	if p.private {
		vis = "private"
	}
	return map[string]any{"id": p.id, "name": parts[len(parts)-1], "path": parts[len(parts)-1],
		"path_with_namespace": p.path, "name_with_namespace": strings.Join(parts, " / "),
		"http_url_to_repo": l.GitURL(p.path), "web_url": l.URL() + "/" + p.path,
		"default_branch": p.defaultBranch, "visibility": vis, "created_at": ts(p.createdAt),
		"namespace":                                        map[string]any{"full_path": strings.Join(parts[:len(parts)-1], "/"), "path": parts[len(parts)-2], "kind": "group"},
		"only_allow_merge_if_pipeline_succeeds":            p.opts.PipelineMustSucceed,
		"only_allow_merge_if_all_discussions_are_resolved": p.opts.ThreadsMustResolve,
		"merge_method":                                     map[bool]string{true: "ff", false: "merge"}[p.opts.FastForwardOnly]}
}

func (l *Lab) projectRoute(r *http.Request, ps params, u *user, p *project, seg []string, w http.ResponseWriter, get, post, put bool) (int, any) {
	switch {
	case len(seg) == 0 && get:
		return 200, l.projectJSON(p)
	case len(seg) >= 1 && seg[0] == "hooks":
		return l.hooksRoute(r, ps, u, p, seg[1:])
	case len(seg) == 3 && seg[0] == "members" && seg[1] == "all" && get:
		id, _ := strconv.Atoi(seg[2])
		m := l.userByID(id)
		if m == nil || p.access(m) == 0 {
			return 404, msg("404 Not found")
		}
		return 200, map[string]any{"id": m.id, "username": m.username, "name": m.name, "state": "active",
			"access_level": p.access(m), "avatar_url": nil, "web_url": l.URL() + "/" + m.username,
			// What GitLab shows of a membership beyond the level: none of
			// it set in the sandbox (GitLab gives email and the SAML
			// identity to group owners only).
			"created_at": "2026-01-01T00:00:00.000Z", "created_by": nil, "expires_at": nil, "email": nil, "group_saml_identity": nil,
			"membership_state": "active"}
	case len(seg) == 2 && seg[0] == "statuses" && post:
		return l.postStatus(ps, u, p, seg[1])
	case len(seg) == 4 && seg[0] == "repository" && seg[1] == "commits" && seg[3] == "statuses" && get:
		return 200, pageOf(w, r, l.commitStatuses(p, seg[2], ps))
	case len(seg) == 3 && seg[0] == "repository" && seg[1] == "commits" && get:
		cs, err := l.commits(p, seg[2]+"^!")
		if err != nil || len(cs) == 0 {
			return 404, msg("404 Commit Not Found")
		}
		return 200, cs[0]
	case len(seg) == 2 && seg[0] == "repository" && seg[1] == "compare" && get:
		from, to := ps.get("from"), ps.get("to")
		cs, err := l.commits(p, from+".."+to)
		if err != nil {
			return 404, msg("404 Ref Not Found")
		}
		diffs, err := l.compareDiffs(p, from, to, ps.get("straight") == "true")
		if err != nil {
			return 404, msg("404 Ref Not Found")
		}
		var last any // GitLab's "commit": the newest of the range
		if len(cs) > 0 {
			last = cs[0]
		}
		return 200, map[string]any{"commits": reverse(cs), "commit": last, "diffs": diffs, "compare_timeout": false, "compare_same_ref": from == to,
			"web_url": fmt.Sprintf("%s/%s/-/compare/%s...%s", l.URL(), p.path, from, to)}
	case len(seg) == 1 && seg[0] == "pipelines" && get:
		var out []any
		for i := len(p.pipelines) - 1; i >= 0; i-- {
			pl := p.pipelines[i]
			if (ps.get("sha") == "" || ps.get("sha") == pl.sha) && (ps.get("ref") == "" || ps.get("ref") == pl.ref) {
				out = append(out, l.pipelineJSON(p, pl))
			}
		}
		return 200, pageOf(w, r, out)
	case len(seg) >= 2 && seg[0] == "pipelines" && get:
		id, _ := strconv.Atoi(seg[1])
		for _, pl := range p.pipelines {
			if pl.id != id {
				continue
			}
			if len(seg) == 2 {
				return 200, l.pipelineJSON(p, pl)
			}
			if len(seg) == 3 && seg[2] == "jobs" {
				var out []any
				for _, j := range pl.jobs {
					out = append(out, l.jobJSON(p, pl, j))
				}
				return 200, pageOf(w, r, out)
			}
		}
		return 404, msg("404 Not found")
	case len(seg) == 1 && seg[0] == "merge_requests" && get:
		var out []any
		for i := len(p.mrs) - 1; i >= 0; i-- {
			m := p.mrs[i]
			if st := ps.get("state"); st != "" && st != "all" && st != m.state {
				continue
			}
			if a := ps.get("author_username"); a != "" && !strings.EqualFold(a, m.author.username) {
				continue
			}
			if lb := ps.get("labels"); lb != "" && !hasLabels(m, strings.Split(lb, ",")) {
				continue
			}
			out = append(out, l.mrJSON(m))
		}
		return 200, pageOf(w, r, out)
	case len(seg) >= 2 && seg[0] == "merge_requests":
		iid, _ := strconv.Atoi(seg[1])
		m := p.mr(iid)
		if m == nil {
			return 404, notFound
		}
		return l.mrRoute(r, ps, u, m, seg[2:], w, get, post, put)
	}
	return 404, msg("404 Not Found")
}

func hasLabels(m *mr, want []string) bool {
	for _, x := range want {
		found := false
		for _, y := range m.labels {
			found = found || strings.EqualFold(strings.TrimSpace(x), y)
		}
		if !found {
			return false
		}
	}
	return true
}

func reverse[T any](xs []T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[len(xs)-1-i] = x
	}
	return out
}

func (l *Lab) mrRoute(r *http.Request, ps params, u *user, m *mr, seg []string, w http.ResponseWriter, get, post, put bool) (int, any) {
	p := m.proj
	what := ""
	if len(seg) > 0 {
		what = seg[0]
	}
	switch {
	case what == "" && get:
		return 200, l.mrJSON(m)
	case what == "" && put:
		return l.updateMR(ps, u, m)
	case what == "discussions" && len(seg) == 1 && get:
		m.reads++
		var out []any
		for _, d := range l.visibleDiscussions(m) {
			out = append(out, l.discussionJSON(m, d))
		}
		return 200, pageOf(w, r, out)
	case what == "discussions" && len(seg) == 1 && post:
		pos, err := positionParam(ps)
		if err != nil {
			return 400, badRequest(err.Error())
		}
		d, err := l.createDiscussionLocked(m, u, ps.get("body"), pos)
		if err != nil {
			return 400, badRequest(err.Error())
		}
		return 201, l.discussionJSON(m, d)
	case what == "discussions" && len(seg) >= 2:
		d := l.findDiscussion(m, seg[1])
		if d == nil {
			return 404, msg("404 Discussion Not Found")
		}
		switch {
		case len(seg) == 2 && get:
			return 200, l.discussionJSON(m, d)
		case len(seg) == 2 && put:
			resolved, err := strconv.ParseBool(ps.get("resolved"))
			if err != nil {
				return 400, map[string]any{"error": "resolved is missing"}
			}
			if err := l.resolveLocked(m, u, d, resolved); err != nil {
				if errors.Is(err, errForbidden) {
					return 403, forbidden
				}
				return 400, badRequest(err.Error())
			}
			return 200, l.discussionJSON(m, d)
		case len(seg) == 3 && seg[2] == "notes" && post:
			n, err := l.replyLocked(m, u, d, ps.get("body"))
			if err != nil {
				return 400, badRequest(err.Error())
			}
			return 201, l.noteJSON(m, n)
		}
	case what == "notes" && len(seg) == 1 && get:
		m.reads++
		var ns []*note
		for _, d := range l.visibleDiscussions(m) {
			ns = append(ns, d.notes...)
		}
		asc := ps.get("sort") == "asc"
		byUpdated := ps.get("order_by") == "updated_at"
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := ns[i].createdAt, ns[j].createdAt
			if byUpdated {
				a, b = ns[i].updatedAt, ns[j].updatedAt
			}
			if a.Equal(b) {
				if asc {
					return ns[i].id < ns[j].id
				}
				return ns[i].id > ns[j].id
			}
			if asc {
				return a.Before(b)
			}
			return a.After(b)
		})
		var out []any
		for _, n := range ns {
			out = append(out, l.noteJSON(m, n))
		}
		return 200, pageOf(w, r, out)
	case what == "notes" && len(seg) == 1 && post:
		n, err := l.topNoteLocked(m, u, ps.get("body"))
		if err != nil {
			return 400, badRequest(err.Error())
		}
		return 201, l.noteJSON(m, n)
	case what == "commits" && get:
		cs, err := l.commits(p, m.version().base+".."+m.headSHA)
		if err != nil {
			return 500, nil
		}
		return 200, pageOf(w, r, cs)
	case what == "versions" && get:
		var out []any
		for i := len(m.versions) - 1; i >= 0; i-- {
			v := m.versions[i]
			out = append(out, map[string]any{"id": v.id, "head_commit_sha": v.head, "base_commit_sha": v.base,
				"start_commit_sha": v.start, "created_at": ts(v.createdAt), "merge_request_id": m.id,
				"state": "collected", "real_size": itoa(v.realSize), "patch_id_sha": v.head})
		}
		return 200, pageOf(w, r, out)
	case what == "approvals" && get:
		var by []any
		for _, a := range m.approvedBy {
			by = append(by, map[string]any{"user": l.userBasic(a)})
		}
		if by == nil {
			by = []any{}
		}
		left := max(p.opts.ApprovalsRequired-len(m.approvedBy), 0)
		_, conflict := l.detailedStatusLocked(m)
		return 200, map[string]any{"id": m.id, "iid": m.iid, "project_id": p.id, "title": m.title, "state": m.state,
			"description": m.description, "created_at": ts(m.createdAt), "updated_at": ts(m.updatedAt),
			"merge_status":       map[bool]string{false: "can_be_merged", true: "cannot_be_merged"}[conflict],
			"approved":           left == 0, // as GitLab: true once no approval is left to give
			"approvals_required": p.opts.ApprovalsRequired, "approvals_left": left, "approved_by": by,
			"user_has_approved": m.approved(u), "user_can_approve": p.canWrite(u) && !m.approved(u)}
	case what == "approve" && post:
		if err := l.approveLocked(m, u); err != nil {
			if errors.Is(err, errForbidden) {
				return 403, forbidden
			}
			return 401, msg("401 Unauthorized")
		}
		return 201, l.mrApprovalJSON(m, u)
	case what == "unapprove" && post:
		if err := l.unapproveLocked(m, u); err != nil {
			return 404, notFound
		}
		return 201, l.mrApprovalJSON(m, u)
	case what == "reviewers" && get:
		var out []any
		for _, rv := range m.reviewers {
			out = append(out, map[string]any{"user": l.userBasic(rv.u), "state": rv.state, "created_at": ts(rv.createdAt)})
		}
		if out == nil {
			out = []any{}
		}
		return 200, out
	case what == "resource_label_events" && get:
		var out []any
		for _, e := range m.labelEvents {
			out = append(out, map[string]any{"id": e.id, "user": l.userBasic(e.u), "created_at": ts(e.at),
				"resource_type": "MergeRequest", "resource_id": m.id, "action": e.action,
				"label": map[string]any{"id": labelID(e.label), "name": e.label, "color": "#428BCA", "description": nil}})
		}
		return 200, pageOf(w, r, out)
	case what == "pipelines" && get:
		var out []any
		for i := len(p.pipelines) - 1; i >= 0; i-- {
			pl := p.pipelines[i]
			for _, v := range m.versions {
				if v.head == pl.sha {
					out = append(out, l.pipelineJSON(p, pl))
					break
				}
			}
		}
		return 200, pageOf(w, r, out)
	}
	return 404, msg("404 Not Found")
}

func labelID(name string) int {
	h := 0
	for _, c := range name {
		h = h*31 + int(c)
	}
	return h&0xffffff + 1
}

func (l *Lab) mrApprovalJSON(m *mr, u *user) any {
	var by []any
	for _, a := range m.approvedBy {
		by = append(by, map[string]any{"user": l.userBasic(a)})
	}
	if by == nil {
		by = []any{}
	}
	return map[string]any{"id": m.id, "iid": m.iid, "project_id": m.proj.id, "approved": len(m.approvedBy) >= m.proj.opts.ApprovalsRequired, "approved_by": by}
}

func (l *Lab) visibleDiscussions(m *mr) []*discussion {
	var out []*discussion
	for _, d := range m.discussions {
		if d.visibleAt < m.reads || d.visibleAt == 0 {
			out = append(out, d)
		}
	}
	return out
}

func positionParam(ps params) (*Position, error) {
	if ps.get("position[position_type]") == "" && ps.get("position[new_line]") == "" && ps.get("position[old_line]") == "" {
		return nil, nil
	}
	if t := ps.get("position[position_type]"); t != "" && t != "text" {
		return nil, fmt.Errorf("position_type %q is not supported", t)
	}
	atoi := func(k string) int { n, _ := strconv.Atoi(ps.get(k)); return n }
	pos := &Position{BaseSHA: ps.get("position[base_sha]"), StartSHA: ps.get("position[start_sha]"), HeadSHA: ps.get("position[head_sha]"),
		OldPath: ps.get("position[old_path]"), NewPath: ps.get("position[new_path]"),
		OldLine: atoi("position[old_line]"), NewLine: atoi("position[new_line]")}
	if pos.HeadSHA != "" && (pos.BaseSHA == "" || pos.StartSHA == "") {
		return nil, errors.New("position base_sha and start_sha are missing")
	}
	return pos, nil
}

func (l *Lab) updateMR(ps params, u *user, m *mr) (int, any) {
	if !m.proj.canWrite(u) && u != m.author {
		return 403, forbidden
	}
	if _, ok := ps["reviewer_ids[]"]; ok || ps.get("reviewer_ids") != "" {
		var ids []int
		for _, s := range ps.list("reviewer_ids") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			id, err := strconv.Atoi(s)
			if err != nil {
				return 400, map[string]any{"error": "reviewer_ids is invalid"}
			}
			if id != 0 {
				ids = append(ids, id)
			}
		}
		if err := l.setReviewersLocked(m, u, ids); err != nil {
			return 400, badRequest(err.Error())
		}
	}
	for _, lb := range splitLabels(strings.Join(ps.list("add_labels"), ",")) {
		l.addLabelLocked(m, u, lb)
	}
	for _, lb := range splitLabels(strings.Join(ps.list("remove_labels"), ",")) {
		l.removeLabelLocked(m, u, lb)
	}
	if _, ok := ps["labels"]; ok || ps["labels[]"] != nil {
		want := splitLabels(strings.Join(ps.list("labels"), ","))
		for _, have := range append([]string(nil), m.labels...) {
			if !contains(want, have) {
				l.removeLabelLocked(m, u, have)
			}
		}
		for _, lb := range want {
			l.addLabelLocked(m, u, lb)
		}
	}
	if t := ps.get("title"); t != "" {
		m.title = t
		if d, ok := strings.CutPrefix(t, "Draft: "); ok {
			m.title = d
			l.setDraftLocked(m, u, true)
		}
	}
	if _, ok := ps["description"]; ok {
		l.setDescriptionLocked(m, u, ps.get("description"))
	}
	if e := ps.get("state_event"); e != "" {
		if err := l.setStateLocked(m, u, e); err != nil {
			return 400, map[string]any{"error": err.Error()}
		}
	}
	m.updatedAt = l.now()
	return 200, l.mrJSON(m)
}

func splitLabels(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (l *Lab) postStatus(ps params, u *user, p *project, sha string) (int, any) {
	if !p.canWrite(u) {
		return 403, forbidden
	}
	state := ps.get("state")
	switch state {
	case "pending", "running", "success", "failed", "canceled":
	default:
		return 400, map[string]any{"error": "state does not have a valid value"}
	}
	full, err := fakegit.RevParse(l.Context(), p.dir, sha)
	if err != nil {
		return 404, msg("404 Commit Not Found")
	}
	name := ps.get("name")
	if name == "" {
		name = ps.get("context")
	}
	if name == "" {
		name = "default"
	}
	now := l.now()
	// A status of the same name on the same sha is updated in place.
	var cs *commitStatus
	for _, x := range p.statuses {
		if x.sha == full && x.name == name {
			cs = x
		}
	}
	if cs == nil {
		cs = &commitStatus{id: l.newIDLocked(), sha: full, name: name, createdAt: now, author: u}
		p.statuses = append(p.statuses, cs)
	}
	cs.status, cs.description, cs.targetURL, cs.ref = state, ps.get("description"), ps.get("target_url"), ps.get("ref")
	l.publishLocked(Event{Kind: "status", Project: p.path, SHA: full, Actor: u.username, Detail: name + ":" + state})
	return 201, l.statusJSON(cs)
}

func (l *Lab) statusJSON(cs *commitStatus) map[string]any {
	return map[string]any{"id": cs.id, "sha": cs.sha, "ref": cs.ref, "status": cs.status, "name": cs.name,
		"description": nilIfEmpty(cs.description), "target_url": nilIfEmpty(cs.targetURL), "created_at": ts(cs.createdAt),
		"started_at": nil, "finished_at": nil, "allow_failure": false, "coverage": nil, "author": l.userBasic(cs.author)}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// commitStatuses lists the jobs of the sha's pipelines and the external
// statuses posted on it, newest first, as GitLab's statuses API does.
func (l *Lab) commitStatuses(p *project, sha string, ps params) []any {
	full, err := fakegit.RevParse(l.Context(), p.dir, sha)
	if err != nil {
		full = sha
	}
	type entry struct {
		id int
		v  any
	}
	var es []entry
	for _, pl := range p.pipelines {
		if pl.sha != full {
			continue
		}
		for _, j := range pl.jobs {
			es = append(es, entry{j.id, map[string]any{"id": j.id, "sha": pl.sha, "ref": pl.ref, "status": j.status, "name": j.name,
				"description": nil, "target_url": l.jobURL(p, j), "created_at": ts(j.createdAt), "started_at": ts(j.started),
				"finished_at": ts(j.finished), "allow_failure": false, "coverage": nil, "pipeline_id": pl.id}})
		}
	}
	for _, cs := range p.statuses {
		if cs.sha == full && (ps.get("name") == "" || ps.get("name") == cs.name) {
			es = append(es, entry{cs.id, l.statusJSON(cs)})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].id > es[j].id })
	out := []any{}
	for _, e := range es {
		out = append(out, e.v)
	}
	return out
}

func (l *Lab) jobURL(p *project, j *job) string {
	return fmt.Sprintf("%s/%s/-/jobs/%d", l.URL(), p.path, j.id)
}

func (l *Lab) pipelineJSON(p *project, pl *pipeline) map[string]any {
	return map[string]any{"id": pl.id, "iid": pl.iid, "project_id": p.id, "sha": pl.sha, "ref": pl.ref, "status": pl.status,
		"source": pl.source, "created_at": ts(pl.createdAt), "updated_at": ts(pl.updatedAt),
		"web_url": fmt.Sprintf("%s/%s/-/pipelines/%d", l.URL(), p.path, pl.id),
		// GitLab's other fields of a pipeline; the emulator times none
		// and triggers them as nobody in particular.
		"before_sha": nil, "tag": false, "yaml_errors": nil, "user": nil, "started_at": nil, "finished_at": nil,
		"committed_at": nil, "duration": nil, "queued_duration": nil, "coverage": nil,
		"detailed_status": map[string]any{"icon": "status_" + pl.status, "text": pl.status, "label": pl.status, "group": pl.status,
			"tooltip": pl.status, "has_details": true, "details_path": fmt.Sprintf("/%s/-/pipelines/%d", p.path, pl.id),
			"illustration": nil, "favicon": "/assets/ci_favicons/favicon_status_" + pl.status + ".png"}}
}

func (l *Lab) jobJSON(p *project, pl *pipeline, j *job) map[string]any {
	return map[string]any{"id": j.id, "name": j.name, "stage": j.stage, "status": j.status, "ref": pl.ref,
		"created_at": ts(j.createdAt), "started_at": ts(j.started), "finished_at": ts(j.finished),
		"allow_failure": false, "web_url": l.jobURL(p, j),
		"pipeline": map[string]any{"id": pl.id, "sha": pl.sha, "ref": pl.ref, "status": pl.status},
		"commit":   map[string]any{"id": pl.sha}}
}

// commits lists a revision range newest first in GitLab's commit shape.
func (l *Lab) commits(p *project, rng string) ([]any, error) {
	out, err := fakegit.RunAt(l.Context(), p.dir, rangeEnds(rng), "log", "--format=%H%x00%P%x00%cI%x00%aI%x00%an%x00%ae%x00%cn%x00%ce%x00%B%x1e", rng)
	if err != nil {
		return nil, err
	}
	cs := []any{}
	for _, rec := range strings.Split(out, "\x1e") {
		f := strings.SplitN(strings.TrimLeft(rec, "\n"), "\x00", 9)
		if len(f) < 9 {
			continue
		}
		message := strings.TrimRight(f[8], "\n")
		title, _, _ := strings.Cut(message, "\n")
		parents := strings.Fields(f[1])
		if parents == nil {
			parents = []string{}
		}
		cs = append(cs, map[string]any{"id": f[0], "short_id": f[0][:8], "title": title, "message": message + "\n",
			"parent_ids": parents, "committed_date": f[2], "authored_date": f[3], "created_at": f[2],
			"author_name": f[4], "author_email": f[5], "committer_name": f[6], "committer_email": f[7],
			"web_url": fmt.Sprintf("%s/%s/-/commit/%s", l.URL(), p.path, f[0]),
			// Git trailers as GitLab parses them; converge reads its own
			// from the message.
			"trailers": map[string]any{}, "extended_trailers": map[string]any{}})
	}
	return cs, nil
}

// rangeEnds are the revisions of a range as commits builds them (a..b or
// a^!), or the whole range when it is neither.
func rangeEnds(rng string) []string {
	if a, b, ok := strings.Cut(rng, ".."); ok {
		return []string{a, b}
	}
	if a, ok := strings.CutSuffix(rng, "^!"); ok {
		return []string{a}
	}
	return []string{rng}
}

func (l *Lab) positionJSON(pos *Position) any {
	if pos == nil {
		return nil
	}
	line := func(n int) any {
		if n == 0 {
			return nil
		}
		return n
	}
	return map[string]any{"base_sha": pos.BaseSHA, "start_sha": pos.StartSHA, "head_sha": pos.HeadSHA,
		"old_path": pos.OldPath, "new_path": pos.NewPath, "position_type": "text",
		"old_line": line(pos.OldLine), "new_line": line(pos.NewLine), "line_range": nil}
}

func (l *Lab) noteJSON(m *mr, n *note) map[string]any {
	var typ any
	if n.typ != "" {
		typ = n.typ
	}
	out := map[string]any{"id": n.id, "type": typ, "body": n.body, "attachment": nil, "author": l.userBasic(n.author),
		"created_at": ts(n.createdAt), "updated_at": ts(n.updatedAt), "system": n.system, "noteable_id": m.id,
		"noteable_type": "MergeRequest", "project_id": m.proj.id, "resolvable": n.resolvable,
		"confidential": false, "internal": false, "noteable_iid": m.iid, "commands_changes": map[string]any{}}
	if n.resolvable {
		out["resolved"] = n.resolved
		out["resolved_by"] = l.userBasic(n.resolvedBy)
		out["resolved_at"] = nil
		if n.resolved {
			out["resolved_at"] = ts(n.resolvedAt)
		}
	}
	if n.position != nil {
		out["position"] = l.positionJSON(n.position)
	}
	return out
}

func (l *Lab) discussionJSON(m *mr, d *discussion) map[string]any {
	var ns []any
	for _, n := range d.notes {
		ns = append(ns, l.noteJSON(m, n))
	}
	return map[string]any{"id": d.id, "individual_note": d.individual, "notes": ns}
}

func (l *Lab) mrJSON(m *mr) map[string]any {
	p := m.proj
	v := m.version()
	status, conflict := l.detailedStatusLocked(m)
	var hp any
	if pl := headPipelineLocked(m); pl != nil {
		hp = l.pipelineJSON(p, pl)
	}
	var reviewers []any
	for _, rv := range m.reviewers {
		reviewers = append(reviewers, l.userBasic(rv.u))
	}
	if reviewers == nil {
		reviewers = []any{}
	}
	labels := append([]string{}, m.labels...)
	legacy := "can_be_merged"
	if conflict {
		legacy = "cannot_be_merged"
	}
	title := m.title
	if m.draft {
		title = "Draft: " + title
	}
	return map[string]any{"id": m.id, "iid": m.iid, "project_id": p.id, "title": title, "description": m.description,
		"state": m.state, "draft": m.draft, "work_in_progress": m.draft, "author": l.userBasic(m.author),
		"source_branch": m.source, "target_branch": m.target, "source_project_id": p.id, "target_project_id": p.id,
		"sha": m.headSHA, "diff_refs": map[string]any{"base_sha": v.base, "head_sha": v.head, "start_sha": v.start},
		"detailed_merge_status": status, "merge_status": legacy, "has_conflicts": conflict, "labels": labels,
		"reviewers": reviewers, "assignees": []any{}, "head_pipeline": hp, "pipeline": hp, "web_url": m.webURL(l),
		"created_at": ts(m.createdAt), "updated_at": ts(m.updatedAt), "merged_by": nil, "merged_at": nil,
		"closed_by": nil, "closed_at": nil, "user_notes_count": userNotes(m), "merge_when_pipeline_succeeds": false,
		"references":                    map[string]any{"short": "!" + itoa(m.iid), "relative": "!" + itoa(m.iid), "full": p.path + "!" + itoa(m.iid)},
		"reference":                     "!" + itoa(m.iid),
		"blocking_discussions_resolved": !p.opts.ThreadsMustResolve || l.allResolvedLocked(m),
		// GitLab's other fields of a merge request, as a project that
		// uses none of what they describe (milestones, squash, time
		// tracking, votes) shows them.
		"assignee": nil, "milestone": nil, "merge_user": nil, "merge_commit_sha": nil, "squash_commit_sha": nil,
		"squash": false, "squash_on_merge": false, "should_remove_source_branch": nil, "force_remove_source_branch": false,
		"discussion_locked": nil, "upvotes": 0, "downvotes": 0, "imported": false, "imported_from": "none",
		"merge_after": nil, "prepared_at": ts(m.createdAt), "approvals_before_merge": nil, "subscribed": true,
		"task_completion_status": map[string]any{"count": 0, "completed_count": 0},
		"time_stats":             map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"merge_error":            nil, "latest_build_started_at": nil, "latest_build_finished_at": nil,
		"first_deployed_to_production_at": nil, "diverged_commits_count": 0, "rebase_in_progress": false,
		"first_contribution": false, "user": map[string]any{"can_merge": true}, "changes_count": nil}
}

func userNotes(m *mr) int {
	n := 0
	for _, d := range m.discussions {
		for _, x := range d.notes {
			if !x.system {
				n++
			}
		}
	}
	return n
}

type mergeInfo struct{ conflict, behind bool }

// detailedStatusLocked computes detailed_merge_status from git and the
// project's merge checks, in GitLab's order of checks.
func (l *Lab) detailedStatusLocked(m *mr) (string, bool) {
	ctx := l.Context()
	p := m.proj
	target, _ := fakegit.RevParse(ctx, p.dir, "refs/heads/"+m.target)
	key := p.dir + "\x00" + target + "\x00" + m.headSHA
	mi, ok := l.mergeCache[key]
	if !ok {
		_, conflict, err := fakegit.MergeTree(ctx, p.dir, target, m.headSHA)
		if err == nil {
			anc, _ := fakegit.IsAncestor(ctx, p.dir, target, m.headSHA)
			mi = mergeInfo{conflict: conflict, behind: !anc}
			l.mergeCache[key] = mi
		}
	}
	switch {
	case m.state != "opened":
		return "not_open", mi.conflict
	case m.draft:
		return "draft_status", mi.conflict
	case p.opts.ThreadsMustResolve && !l.allResolvedLocked(m):
		return "discussions_not_resolved", mi.conflict
	case p.opts.ApprovalsRequired > len(m.approvedBy):
		return "not_approved", mi.conflict
	case mi.conflict:
		return "conflict", true
	case p.opts.FastForwardOnly && mi.behind:
		return "need_rebase", false
	}
	if p.opts.PipelineMustSucceed {
		pl := headPipelineLocked(m)
		switch {
		case pl == nil && len(p.testCommand) > 0, pl != nil && (pl.status == "running" || pl.status == "pending" || pl.status == "created"):
			return "ci_still_running", false
		case pl == nil || pl.status != "success":
			return "ci_must_pass", false
		}
	}
	return "mergeable", false
}

// compareDiffs are a compare's file diffs as GitLab gives them: each
// file's unified diff from its first hunk header (no ---/+++ lines),
// from the merge base of from and to, or from from itself when straight.
func (l *Lab) compareDiffs(p *project, from, to string, straight bool) ([]any, error) {
	ctx := l.Context()
	rng := from + "..." + to
	if straight {
		rng = from + ".." + to
	}
	ends := []string{from, to}
	names, err := fakegit.RunAt(ctx, p.dir, ends, "diff", "--no-renames", "--name-status", "-z", rng)
	if err != nil {
		return nil, err
	}
	out := []any{}
	fields := strings.Split(names, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status, path := fields[i], fields[i+1]
		d, err := fakegit.RunAt(ctx, p.dir, ends, "diff", "--no-color", "--no-ext-diff", "-U3", rng, "--", path)
		if err != nil {
			return nil, err
		}
		if at := strings.Index(d, "\n@@"); at >= 0 {
			d = d[at+1:] + "\n"
		} else {
			d = "" // binary or mode-only
		}
		out = append(out, map[string]any{"old_path": path, "new_path": path, "a_mode": "100644", "b_mode": "100644", "diff": d,
			"new_file": status == "A", "renamed_file": false, "deleted_file": status == "D"})
	}
	return out, nil
}
