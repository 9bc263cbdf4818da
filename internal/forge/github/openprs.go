package github

import (
	"context"

	gh "github.com/google/go-github/v93/github"
)

// OpenPR is one open pull request as a repository's list shows it: what
// `converge serve` needs to tell whether a watched repository's PR is one
// to drive (its label or its author).
type OpenPR struct {
	Number int
	URL    string // web URL
	Author string
	Labels []string
}

// OpenPRs lists a repository's open pull requests, every page.
func (c *Client) OpenPRs(ctx context.Context, owner, repo string) ([]OpenPR, error) {
	opts := &gh.PullRequestListOptions{State: "open", ListOptions: gh.ListOptions{PerPage: 100}}
	var out []OpenPR
	for {
		ps, resp, err := c.rest.PullRequests.List(ctx, owner, repo, opts)
		if err != nil {
			return nil, c.mapErr("list pull requests", c.restURL, err)
		}
		for _, p := range ps {
			o := OpenPR{Number: p.GetNumber(), URL: p.GetHTMLURL(), Author: p.GetUser().GetLogin()}
			for _, l := range p.Labels {
				o.Labels = append(o.Labels, l.GetName())
			}
			out = append(out, o)
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}
