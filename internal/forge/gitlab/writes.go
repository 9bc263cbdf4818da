package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
)

// MaxBodyChars bounds the bodies converge writes. GitLab takes notes up
// to 1,000,000 characters; converge keeps to GitHub's 65,536 on both
// forges so a body means the same wherever it is posted (PR-G6).
const MaxBodyChars = 65536

// maxStatusDescription bounds a commit status description (GitLab's
// column is 255 characters).
const maxStatusDescription = 255

// TruncateBody cuts body to MaxBodyChars, ending with a note saying so.
func TruncateBody(body string) string {
	return truncateChars(body, MaxBodyChars, func(omitted int) string {
		return fmt.Sprintf("\n\n…\n\n_(truncated by converge: %d characters omitted to fit a %d-character limit)_", omitted, MaxBodyChars)
	})
}

func truncateChars(s string, limit int, note func(omitted int) string) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	keep := limit - utf8.RuneCountInString(note(n))
	keep = limit - utf8.RuneCountInString(note(n-keep))
	keep = max(keep, 0)
	i, r := 0, 0
	for i = range s {
		if r == keep {
			break
		}
		r++
	}
	return s[:i] + note(n-keep)
}

func (c *Client) blank(op, body string) error {
	if strings.TrimSpace(body) == "" {
		return c.fail(forge.KindInvalid, op, "empty body", nil)
	}
	return nil
}

// discussionPath addresses one discussion of the MR.
func discussionPath(ref forge.PRRef, id string) string {
	return mrPath(ref) + "/discussions/" + url.PathEscape(id)
}

// ReplyToThread adds a note to the discussion threadID (truncated per
// PR-G6). A blank body is refused before any request.
func (c *Client) ReplyToThread(ctx context.Context, ref forge.PRRef, threadID, body string) (forge.Comment, error) {
	const op = "reply to thread"
	if err := c.blank(op, body); err != nil {
		return forge.Comment{}, err
	}
	var n note
	if _, err := c.do(ctx, http.MethodPost, discussionPath(ref, threadID)+"/notes", map[string]string{"body": TruncateBody(body)}, &n); err != nil {
		return forge.Comment{}, c.mapErr(op, err)
	}
	if n.ID == 0 {
		return forge.Comment{}, c.fail(forge.KindInvalid, op, "GitLab returned no note for discussion "+threadID, nil)
	}
	return toComment(&n, ref.String()), nil
}

// ResolveThread resolves the discussion; resolving a resolved one is
// harmless.
func (c *Client) ResolveThread(ctx context.Context, ref forge.PRRef, threadID string) error {
	return c.setResolved(ctx, "resolve thread", ref, threadID, true)
}

// UnresolveThread reopens the discussion.
func (c *Client) UnresolveThread(ctx context.Context, ref forge.PRRef, threadID string) error {
	return c.setResolved(ctx, "unresolve thread", ref, threadID, false)
}

func (c *Client) setResolved(ctx context.Context, op string, ref forge.PRRef, id string, resolved bool) error {
	path := fmt.Sprintf("%s?resolved=%v", discussionPath(ref, id), resolved)
	var d discussion
	if _, err := c.do(ctx, http.MethodPut, path, nil, &d); err != nil {
		return c.mapErr(op, err)
	}
	return nil
}

// AddLabels adds labels (add_labels keeps the others). GitLab's list is
// comma-separated, so a label holding a comma is refused as invalid.
func (c *Client) AddLabels(ctx context.Context, ref forge.PRRef, labels ...string) error {
	const op = "add labels"
	if len(labels) == 0 {
		return nil
	}
	for _, l := range labels {
		if strings.Contains(l, ",") || strings.TrimSpace(l) == "" {
			return c.fail(forge.KindInvalid, op, fmt.Sprintf("label %q: GitLab labels are listed comma-separated, so none may hold a comma or be blank", l), nil)
		}
	}
	_, err := c.do(ctx, http.MethodPut, mrPath(ref), map[string]string{"add_labels": strings.Join(labels, ",")}, nil)
	return c.mapErr(op, err)
}

// RemoveLabel removes a label; one that is not there is not an error.
func (c *Client) RemoveLabel(ctx context.Context, ref forge.PRRef, label string) error {
	const op = "remove label"
	if strings.Contains(label, ",") {
		return c.fail(forge.KindInvalid, op, fmt.Sprintf("label %q holds a comma", label), nil)
	}
	_, err := c.do(ctx, http.MethodPut, mrPath(ref), map[string]string{"remove_labels": label}, nil)
	return c.mapErr(op, err)
}

// CreateIssueComment posts a top-level note (truncated per PR-G6).
func (c *Client) CreateIssueComment(ctx context.Context, ref forge.PRRef, body string) (forge.IssueComment, error) {
	const op = "create issue comment"
	if err := c.blank(op, body); err != nil {
		return forge.IssueComment{}, err
	}
	var n note
	if _, err := c.do(ctx, http.MethodPost, mrPath(ref)+"/notes", map[string]string{"body": TruncateBody(body)}, &n); err != nil {
		return forge.IssueComment{}, c.mapErr(op, err)
	}
	return toIssueComment(&n), nil
}

// ListIssueComments lists the MR's top-level notes, oldest first.
func (c *Client) ListIssueComments(ctx context.Context, ref forge.PRRef) ([]forge.IssueComment, error) {
	notes, _, err := getAll[note](ctx, c, mrPath(ref)+"/notes?sort=asc&order_by=created_at", 0)
	if err != nil {
		return nil, c.mapErr("list issue comments", err)
	}
	return issueComments(notes), nil
}

// gitlabStatus is the GitLab state a converge status is posted as:
// pending, success and failure as pending, success and failed; error as
// canceled, so it reads back as ERROR (rollup) and converge does not
// post its verdict again for a state it cannot tell apart. Both failed
// and canceled fail a pipeline.
func gitlabStatus(s forge.CommitStatusState) (string, bool) {
	switch s {
	case forge.StatusPending:
		return "pending", true
	case forge.StatusSuccess:
		return "success", true
	case forge.StatusFailure:
		return "failed", true
	case forge.StatusError:
		return "canceled", true
	}
	return "", false
}

// transitionRE is GitLab's refusal of a status it already has: "Cannot
// transition status via :enqueue from :pending".
var transitionRE = regexp.MustCompile(`Cannot transition status via :(\w+) from :(\w+)`)

// SetCommitStatus posts a commit status on sha (POST statuses/:sha). A
// repeat of the state the status already has, which GitLab refuses as an
// impossible transition, is success: the status is what was asked.
func (c *Client) SetCommitStatus(ctx context.Context, ref forge.PRRef, sha string, st forge.CommitStatus) error {
	const op = "set commit status"
	state, ok := gitlabStatus(st.State)
	if !ok {
		return c.fail(forge.KindInvalid, op, fmt.Sprintf("commit status state %q: want pending, success, failure or error", st.State), nil)
	}
	body := map[string]string{"state": state, "name": st.Context}
	if st.Description != "" {
		body["description"] = truncateChars(st.Description, maxStatusDescription, func(int) string { return "…" })
	}
	if st.TargetURL != "" {
		body["target_url"] = st.TargetURL
	}
	_, err := c.do(ctx, http.MethodPost, projectPath(ref)+"/statuses/"+url.PathEscape(sha), body, nil)
	var ae *apiError
	if errors.As(err, &ae) {
		if m := transitionRE.FindStringSubmatch(ae.message); m != nil && ae.status == http.StatusBadRequest && m[2] == state {
			return nil
		}
		if m := strings.ToLower(ae.message); ae.status == http.StatusNotFound && !strings.Contains(m, "project") {
			// GitLab answers "404 Commit Not Found" for a SHA it lacks: the
			// request, not the project, is wrong. A bare 404 is told apart
			// by reading the project.
			invalid := strings.Contains(m, "commit")
			if !invalid {
				_, perr := c.do(ctx, http.MethodGet, projectPath(ref), nil, nil)
				invalid = perr == nil
			}
			if invalid {
				return c.fail(forge.KindInvalid, op, fmt.Sprintf("commit %s is not in %s", sha, ref.FullName()), err)
			}
		}
	}
	return c.mapErr(op, err)
}

// Viewer returns the username the token acts as (GET /user), cached.
func (c *Client) Viewer(ctx context.Context) (string, error) {
	c.viewerMu.Lock()
	defer c.viewerMu.Unlock()
	if c.viewer != "" {
		return c.viewer, nil
	}
	var u user
	if _, err := c.do(ctx, http.MethodGet, "user", nil, &u); err != nil {
		return "", c.mapErr("read viewer", err)
	}
	if u.Username == "" {
		return "", c.fail(forge.KindOther, "read viewer", "GitLab named no user for the token", nil)
	}
	c.viewer = u.Username
	return c.viewer, nil
}

// userByName looks a username up (GET /users?username=); nil when GitLab
// knows no such user.
func (c *Client) userByName(ctx context.Context, login string) (*user, error) {
	var us []user
	if _, err := c.do(ctx, http.MethodGet, "users?username="+url.QueryEscape(login), nil, &us); err != nil {
		return nil, err
	}
	for i := range us {
		if strings.EqualFold(us[i].Username, login) {
			return &us[i], nil
		}
	}
	return nil, nil
}

// Permission maps login's access level on the project, inherited
// memberships included (members/all), to converge's levels (SEC-1):
// owner (50) admin, maintainer (40) maintain, developer (30) write,
// reporter (20) and guest (10) read, minimal access (5) or none none. A
// user GitLab does not know, who is not a member, or whose account is not
// active has none.
func (c *Client) Permission(ctx context.Context, ref forge.PRRef, login string) (forge.Permission, error) {
	const op = "read permission"
	u, err := c.userByName(ctx, login)
	if err != nil {
		return "", c.mapErr(op, err)
	}
	if u == nil || (u.State != "" && u.State != "active") {
		return forge.PermNone, nil
	}
	var m struct {
		AccessLevel int    `json:"access_level"`
		State       string `json:"state"`
	}
	_, err = c.do(ctx, http.MethodGet, fmt.Sprintf("%s/members/all/%d", projectPath(ref), u.ID), nil, &m)
	if statusOf(err) == http.StatusNotFound {
		// Not a member, or no such project: tell them apart.
		if _, perr := c.do(ctx, http.MethodGet, projectPath(ref), nil, nil); perr != nil {
			return "", c.mapErr(op, perr)
		}
		return forge.PermNone, nil
	}
	if err != nil {
		return "", c.mapErr(op, err)
	}
	if m.State != "" && m.State != "active" {
		return forge.PermNone, nil // an awaiting or blocked membership
	}
	return accessPermission(m.AccessLevel), nil
}

func accessPermission(level int) forge.Permission {
	switch {
	case level >= 50:
		return forge.PermAdmin
	case level >= 40:
		return forge.PermMaintain
	case level >= 30:
		return forge.PermWrite
	case level >= 10:
		return forge.PermRead
	}
	return forge.PermNone
}

// RequestReviews makes the MR's reviewers the union of those it has now
// (read fresh: pr may be old) and the named logins, bots and users alike
// (PR-O5, PR-S1). A login GitLab does not know is KindInvalid wrapping
// ErrReviewerUnavailable, and nothing is written. The MR is addressed by
// pr.Ref.
func (c *Client) RequestReviews(ctx context.Context, pr *forge.PullRequest, userLogins, botLogins []string) error {
	const op = "request reviews"
	logins := append(slices.Clone(userLogins), botLogins...)
	if len(logins) == 0 {
		return nil
	}
	if pr == nil {
		return c.fail(forge.KindInvalid, op, "no merge request to request reviews on", nil)
	}
	var mr mergeRequest
	if _, err := c.do(ctx, http.MethodGet, mrPath(pr.Ref), nil, &mr); err != nil {
		return c.mapErr(op, err)
	}
	var ids []int64
	for _, r := range mr.Reviewers {
		ids = append(ids, r.ID)
	}
	before := len(ids)
	var again []int64 // named reviewers who finished: asked anew
	for _, l := range logins {
		u, err := c.userByName(ctx, l)
		if err != nil {
			return c.mapErr(op, err)
		}
		if u == nil {
			fe := c.fail(forge.KindInvalid, op, fmt.Sprintf("cannot request a review from %s: GitLab knows no such user", l), nil)
			fe.Err = ErrReviewerUnavailable
			return fe
		}
		if !slices.Contains(ids, u.ID) {
			ids = append(ids, u.ID)
		} else if done, err := c.reviewFinished(ctx, pr.Ref, u.ID); err != nil {
			return c.mapErr(op, err)
		} else if done {
			again = append(again, u.ID)
		}
	}
	if len(ids) == before && len(again) == 0 {
		return nil // all requested already, none of them finished
	}
	if len(again) > 0 {
		// GitLab keeps a reviewer who finished (GitLab Duo among them)
		// and asks nothing when reviewer_ids already holds them: a new
		// review is asked by removing them, then adding them again
		// (rerequest.go).
		kept := slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return slices.Contains(again, id) })
		if _, err := c.do(ctx, http.MethodPut, mrPath(pr.Ref), map[string]any{"reviewer_ids": emptyIfNil(kept)}, nil); err != nil {
			return c.mapErr(op, err)
		}
	}
	_, err := c.do(ctx, http.MethodPut, mrPath(pr.Ref), map[string]any{"reviewer_ids": ids}, nil)
	return c.mapErr(op, err)
}
