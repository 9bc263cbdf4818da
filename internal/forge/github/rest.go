package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/forge"
)

// MaxBodyChars is GitHub's limit for comment and check-run bodies.
const MaxBodyChars = 65536

// maxStatusDescription is GitHub's limit for a commit status description;
// a longer one is refused with 422.
const maxStatusDescription = 140

// TruncateBody cuts body to GitHub's limit, ending it with a note that says
// so (PR-G6). Shorter bodies are returned unchanged.
func TruncateBody(body string) string {
	return truncateChars(body, MaxBodyChars, func(omitted int) string {
		return fmt.Sprintf("\n\n…\n\n_(truncated by converge: %d characters omitted to fit GitHub's %d-character limit)_", omitted, MaxBodyChars)
	})
}

func truncateChars(s string, limit int, note func(omitted int) string) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	// The note's length depends on the count it reports; a second pass
	// settles it since the count's width changes at most once.
	keep := limit - utf8.RuneCountInString(note(n))
	keep = limit - utf8.RuneCountInString(note(n-keep))
	if keep < 0 {
		keep = 0
	}
	i, r := 0, 0
	for i = range s {
		if r == keep {
			break
		}
		r++
	}
	return s[:i] + note(n-keep)
}

// cachedPage is one conditional GET's answer, kept for its ETag (PR-O1).
type cachedPage struct {
	etag   string
	events []forge.Event
	next   int
}

// IssueEvents lists the PR's issue events, oldest first. Each page is a
// conditional request: a 304 (free on the primary limit) reuses the page
// kept from the last call.
func (c *Client) IssueEvents(ctx context.Context, ref forge.PRRef) ([]forge.Event, error) {
	const op = "list issue events"
	var all []forge.Event
	for page := 1; page != 0; {
		u := fmt.Sprintf("repos/%s/%s/issues/%d/events?per_page=100", url.PathEscape(ref.Owner), url.PathEscape(ref.Repo), ref.Number)
		if page > 1 {
			u += "&page=" + strconv.Itoa(page)
		}
		req, err := c.rest.NewRequest(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		key := req.URL.String()
		c.mu.Lock()
		cached, ok := c.etags[key]
		c.mu.Unlock()
		if ok && cached.etag != "" {
			req.Header.Set("If-None-Match", cached.etag)
		}
		var evs []*gh.IssueEvent
		resp, err := c.rest.Do(req, &evs)
		if ok && resp != nil && resp.StatusCode == http.StatusNotModified {
			all = append(all, cached.events...)
			page = cached.next
			continue
		}
		if err != nil {
			return nil, c.mapErr(op, c.restURL, err)
		}
		cp := cachedPage{etag: resp.Header.Get("ETag"), next: resp.NextPage}
		for _, e := range evs {
			cp.events = append(cp.events, forge.Event{
				ID:        e.GetID(),
				Event:     e.GetEvent(),
				Actor:     e.GetActor().GetLogin(),
				Label:     e.GetLabel().GetName(),
				CreatedAt: e.GetCreatedAt().Time,
			})
		}
		c.mu.Lock()
		c.etags[key] = cp
		c.mu.Unlock()
		all = append(all, cp.events...)
		page = cp.next
	}
	return all, nil
}

// AddLabels adds labels to the PR; labels already there are kept.
func (c *Client) AddLabels(ctx context.Context, ref forge.PRRef, labels ...string) error {
	if len(labels) == 0 {
		return nil
	}
	_, _, err := c.rest.Issues.AddLabelsToIssue(ctx, ref.Owner, ref.Repo, ref.Number, labels)
	return c.mapErr("add labels", c.restURL, err)
}

// RemoveLabel removes a label; a label that is not there is not an error.
func (c *Client) RemoveLabel(ctx context.Context, ref forge.PRRef, label string) error {
	// go-github puts the name in the path verbatim; labels hold spaces,
	// colons and slashes.
	_, err := c.rest.Issues.RemoveLabelForIssue(ctx, ref.Owner, ref.Repo, ref.Number, url.PathEscape(label))
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return c.mapErr("remove label", c.restURL, err)
}

// CreateIssueComment posts a PR conversation comment (truncated per PR-G6).
func (c *Client) CreateIssueComment(ctx context.Context, ref forge.PRRef, body string) (forge.IssueComment, error) {
	ic, _, err := c.rest.Issues.CreateComment(ctx, ref.Owner, ref.Repo, ref.Number, gh.IssueCommentRequest{Body: TruncateBody(body)})
	if err != nil {
		return forge.IssueComment{}, c.mapErr("create issue comment", c.restURL, err)
	}
	return toIssueComment(ic), nil
}

// ListIssueComments lists the PR's conversation comments, oldest first.
func (c *Client) ListIssueComments(ctx context.Context, ref forge.PRRef) ([]forge.IssueComment, error) {
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var out []forge.IssueComment
	for {
		ics, resp, err := c.rest.Issues.ListComments(ctx, ref.Owner, ref.Repo, ref.Number, opts)
		if err != nil {
			return nil, c.mapErr("list issue comments", c.restURL, err)
		}
		for _, ic := range ics {
			out = append(out, toIssueComment(ic))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func toIssueComment(ic *gh.IssueComment) forge.IssueComment {
	return forge.IssueComment{
		ID:        ic.GetID(),
		NodeID:    ic.GetNodeID(),
		Author:    ic.GetUser().GetLogin(),
		Body:      ic.GetBody(),
		CreatedAt: ic.GetCreatedAt().Time,
	}
}

// SetCommitStatus posts a commit status on sha.
func (c *Client) SetCommitStatus(ctx context.Context, ref forge.PRRef, sha string, st forge.CommitStatus) error {
	state := string(st.State)
	rs := gh.RepoStatus{State: &state, Context: &st.Context}
	if st.Description != "" {
		d := truncateChars(st.Description, maxStatusDescription, func(int) string { return "…" })
		rs.Description = &d
	}
	if st.TargetURL != "" {
		rs.TargetURL = &st.TargetURL
	}
	_, _, err := c.rest.Repositories.CreateStatus(ctx, ref.Owner, ref.Repo, sha, rs)
	return c.mapErr("set commit status", c.restURL, err)
}

// CreateCheckRun creates a check run and returns its id; GitHub accepts
// this only from an App installation token.
func (c *Client) CreateCheckRun(ctx context.Context, ref forge.PRRef, cr forge.CheckRun) (int64, error) {
	opts := gh.CreateCheckRunOptions{Name: cr.Name, HeadSHA: cr.HeadSHA}
	if cr.Status != "" {
		opts.Status = &cr.Status
	}
	if cr.Conclusion != "" {
		opts.Conclusion = &cr.Conclusion
	}
	if cr.Title != "" || cr.Summary != "" || cr.Text != "" {
		title, summary := cr.Title, TruncateBody(cr.Summary)
		opts.Output = &gh.CheckRunOutput{Title: &title, Summary: &summary}
		if cr.Text != "" {
			txt := TruncateBody(cr.Text)
			opts.Output.Text = &txt
		}
	}
	run, _, err := c.rest.Checks.CreateCheckRun(ctx, ref.Owner, ref.Repo, opts)
	if err != nil {
		return 0, c.mapErr("create check run", c.restURL, err)
	}
	return run.GetID(), nil
}

// Permission returns login's permission on the repository (admin, maintain,
// write, triage, read or none); someone who is not a collaborator is none.
func (c *Client) Permission(ctx context.Context, ref forge.PRRef, login string) (forge.Permission, error) {
	p, _, err := c.rest.Repositories.GetPermissionLevel(ctx, ref.Owner, ref.Repo, login)
	if isStatus(err, http.StatusNotFound) {
		return forge.PermNone, nil
	}
	if err != nil {
		return "", c.mapErr("read permission", c.restURL, err)
	}
	// permission is the legacy four-level value; role_name says maintain
	// and triage too, but may be a custom role's name.
	switch role := forge.Permission(p.GetRoleName()); role {
	case forge.PermAdmin, forge.PermMaintain, forge.PermWrite, forge.PermTriage, forge.PermRead:
		return role, nil
	}
	if perm := p.GetPermission(); perm != "" {
		return forge.Permission(perm), nil
	}
	return forge.PermNone, nil
}

// CommitsBehind compares base...head (GET /repos/{o}/{r}/compare): its
// behind_by. One commit a page: the count is all that is read.
func (c *Client) CommitsBehind(ctx context.Context, ref forge.PRRef, base, head string) (int, error) {
	cmp, _, err := c.rest.Repositories.CompareCommits(ctx, ref.Owner, ref.Repo, base, head, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return 0, c.mapErr("compare commits", c.restURL, err)
	}
	if cmp.BehindBy == nil {
		return 0, fmt.Errorf("compare commits %s...%s: no behind_by in the answer", base, head)
	}
	return cmp.GetBehindBy(), nil
}

func isStatus(err error, status int) bool {
	var er *gh.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == status
}

// Viewer returns the login the token acts as (GET /user), cached: it is
// converge's own identity for a run.
func (c *Client) Viewer(ctx context.Context) (string, error) {
	c.viewerMu.Lock()
	defer c.viewerMu.Unlock()
	if c.viewer != "" {
		return c.viewer, nil
	}
	if c.app != nil {
		return c.appViewer(ctx)
	}
	u, _, err := c.rest.Users.Get(ctx, "")
	if err != nil {
		return "", c.mapErr("read viewer", c.restURL, err)
	}
	c.viewer = u.GetLogin()
	return c.viewer, nil
}
