package github

import (
	"context"
	"net/http"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/forge"
)

var _ forge.VerdictPublisher = (*Client)(nil)

// maxCheckOutput is GitHub's limit on a check run's output.summary (and
// output.text): 65535 characters.
const maxCheckOutput = 65535

// PublishVerdict is PR-T10. With an App the verdict is the head's
// `converge` check run: the one this App already made on the head is
// found by name and App and updated, so a rerun after a crash between the
// create and its record leaves exactly one. With a token it is a commit
// status, whose context GitHub already keeps one of per head.
func (c *Client) PublishVerdict(ctx context.Context, ref forge.PRRef, v forge.Verdict) error {
	if c.app == nil {
		return c.SetCommitStatus(ctx, ref, v.SHA, forge.CommitStatus{State: v.State, Context: v.Name, Description: v.Title})
	}
	id, err := c.ownCheckRun(ctx, ref, v.SHA, v.Name)
	if err != nil {
		return err
	}
	status, concl := "in_progress", (*string)(nil)
	if v.State != forge.StatusPending && v.Conclusion != "" {
		status, concl = "completed", &v.Conclusion
	}
	title := truncateChars(v.Title, 1000, func(int) string { return "…" })
	summary := truncateChars(v.Summary, maxCheckOutput, func(int) string { return "…" })
	out := &gh.CheckRunOutput{Title: &title, Summary: &summary}
	var details *string
	if v.DetailsURL != "" {
		details = &v.DetailsURL
	}
	if id == 0 {
		_, _, err = c.rest.Checks.CreateCheckRun(ctx, ref.Owner, ref.Repo, gh.CreateCheckRunOptions{
			Name: v.Name, HeadSHA: v.SHA, Status: &status, Conclusion: concl, Output: out, DetailsURL: details,
		})
		return c.mapErr("create check run", c.restURL, err)
	}
	_, _, err = c.rest.Checks.UpdateCheckRun(ctx, ref.Owner, ref.Repo, id, gh.UpdateCheckRunOptions{
		Name: v.Name, Status: &status, Conclusion: concl, Output: out, DetailsURL: details,
	})
	return c.mapErr("update check run", c.restURL, err)
}

// ownCheckRun is the id of this App's latest check run named name on sha,
// 0 when there is none.
func (c *Client) ownCheckRun(ctx context.Context, ref forge.PRRef, sha, name string) (int64, error) {
	appID := c.app.ID()
	res, _, err := c.rest.Checks.ListCheckRunsForRef(ctx, ref.Owner, ref.Repo, sha, &gh.ListCheckRunsOptions{
		CheckName: &name, AppID: &appID, ListOptions: gh.ListOptions{PerPage: 100},
	})
	if isStatus(err, http.StatusNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, c.mapErr("list check runs", c.restURL, err)
	}
	for _, r := range res.CheckRuns {
		// The filter is the API's; the name and App are checked again so
		// another App's check of the same name is never taken over.
		if r.GetName() == name && r.GetApp().GetID() == appID {
			return r.GetID(), nil
		}
	}
	return 0, nil
}
