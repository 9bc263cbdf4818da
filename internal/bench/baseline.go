package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// Baseline is a PR loop client as the source documents' loop talks to
// GitHub (seed 002): on every poll, separate calls for the pull request,
// its line comments, its review threads, its requested reviewers and its
// events; one REST reply and one GraphQL resolve per thread. It is what
// converge's frugal client is measured against, on the same emulator.
type Baseline struct {
	HTTP   *http.Client
	APIURL string // REST base, …/api/v3
	GQLURL string
	Token  string
}

// Observe is one poll: five requests whatever changed.
func (b *Baseline) Observe(ctx context.Context, ref forge.PRRef) error {
	base := fmt.Sprintf("%s/repos/%s/%s", b.APIURL, ref.Owner, ref.Repo)
	for _, p := range []string{
		fmt.Sprintf("/pulls/%d", ref.Number),
		fmt.Sprintf("/pulls/%d/comments?per_page=100", ref.Number),
		fmt.Sprintf("/pulls/%d/requested_reviewers", ref.Number),
		fmt.Sprintf("/issues/%d/events?per_page=100", ref.Number),
	} {
		if err := b.do(ctx, http.MethodGet, base+p, nil, nil); err != nil {
			return err
		}
	}
	_, err := b.threads(ctx, ref)
	return err
}

// threadRef is what the baseline keeps of a thread: its node id and the
// database id of its first comment, which REST replies need.
type threadRef struct {
	ID        string
	CommentID int64
}

const baselineThreads = `query Threads($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100) {
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}`

func (b *Baseline) threads(ctx context.Context, ref forge.PRRef) ([]threadRef, error) {
	var out struct {
		Data struct {
			Repository struct {
				PullRequest struct {
					ReviewThreads struct {
						Nodes []struct {
							ID         string
							IsResolved bool
							Comments   struct {
								Nodes []struct{ DatabaseID int64 }
							}
						}
					}
				}
			}
		}
	}
	vars := map[string]any{"owner": ref.Owner, "name": ref.Repo, "number": ref.Number}
	if err := b.do(ctx, http.MethodPost, b.GQLURL, map[string]any{"query": baselineThreads, "variables": vars}, &out); err != nil {
		return nil, err
	}
	var ts []threadRef
	for _, n := range out.Data.Repository.PullRequest.ReviewThreads.Nodes {
		if n.IsResolved || len(n.Comments.Nodes) == 0 {
			continue
		}
		ts = append(ts, threadRef{ID: n.ID, CommentID: n.Comments.Nodes[0].DatabaseID})
	}
	return ts, nil
}

const baselineResolve = `mutation Resolve($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id } } }`

// Answer replies to and resolves every thread of ts (read by a poll),
// one request each, as the source documents' thread disposal does.
func (b *Baseline) Answer(ctx context.Context, ref forge.PRRef, ts []threadRef, body string) error {
	for _, t := range ts {
		u := fmt.Sprintf("%s/repos/%s/%s/pulls/%d/comments/%d/replies", b.APIURL, ref.Owner, ref.Repo, ref.Number, t.CommentID)
		if err := b.do(ctx, http.MethodPost, u, map[string]any{"body": body}, nil); err != nil {
			return err
		}
		if err := b.do(ctx, http.MethodPost, b.GQLURL, map[string]any{"query": baselineResolve, "variables": map[string]any{"id": t.ID}}, nil); err != nil {
			return err
		}
	}
	return nil
}

func (b *Baseline) do(ctx context.Context, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+b.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("baseline %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("baseline %s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("baseline %s: %w", method, err)
		}
	}
	if bytes.Contains(raw, []byte(`"errors"`)) && strings.HasSuffix(u, "graphql") {
		return fmt.Errorf("baseline graphql: %s", strings.TrimSpace(string(raw)))
	}
	return nil
}
