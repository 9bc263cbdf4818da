package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

type gqlError struct {
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

// graphQL posts one mutation document (a write: never retried once it may
// have landed) and returns the answer's data and errors.
func (c *Client) graphQL(ctx context.Context, op, doc string, vars map[string]any) (map[string]json.RawMessage, []gqlError, error) {
	body, err := json.Marshal(map[string]any{"query": doc, "variables": vars, "operationName": operationName(doc)})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(asWrite(ctx), http.MethodPost, c.graphqlURL.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, c.mapErr(op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, c.mapErr(op, err)
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil, c.fail(forge.KindUnreachable, op, fmt.Sprintf("no GraphQL endpoint at %s (404); check --api-url", c.graphqlURL), nil)
		}
		return nil, nil, c.statusErr(op, resp.StatusCode, errorMessage(b), resp.Header, nil)
	}
	var r struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []gqlError                 `json:"errors"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, c.fail(forge.KindUnreachable, op, fmt.Sprintf("%s did not answer with GraphQL JSON; check --api-url", c.graphqlURL), err)
	}
	return r.Data, r.Errors, nil
}

func operationName(doc string) string {
	f := strings.Fields(doc)
	if len(f) >= 2 && (f[0] == "mutation" || f[0] == "query") {
		name, _, _ := strings.Cut(f[1], "(")
		return name
	}
	return ""
}

// batch sends one aliased mutation document and splits its answer per
// alias: each item has its payload or its error. A request that failed
// fails every item (they may or may not have landed).
func (c *Client) batch(ctx context.Context, op, doc string, inputs []map[string]any) ([]json.RawMessage, []error) {
	vars := make(map[string]any, len(inputs))
	for i, in := range inputs {
		vars[fmt.Sprintf("i%d", i)] = in
	}
	answers := make([]json.RawMessage, len(inputs))
	errs := make([]error, len(inputs))
	data, gerrs, err := c.graphQL(ctx, op, doc, vars)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return answers, errs
	}
	for i := range inputs {
		alias := fmt.Sprintf("m%d", i)
		var mine []string
		for _, e := range gerrs {
			if len(e.Path) == 0 || fmt.Sprint(e.Path[0]) == alias {
				mine = append(mine, e.Message)
			}
		}
		var payload struct {
			Errors []string `json:"errors"`
		}
		a, ok := data[alias]
		if ok && string(a) != "null" && json.Unmarshal(a, &payload) == nil && len(payload.Errors) == 0 && len(mine) == 0 {
			answers[i] = a
			continue
		}
		mine = append(mine, payload.Errors...)
		if len(mine) == 0 {
			mine = []string{"no answer for " + alias}
		}
		errs[i] = c.gqlItemErr(op, strings.Join(mine, "; "))
	}
	return answers, errs
}

// gqlItemErr maps one mutation's errors: GitLab's "does not exist or you
// don't have permission" is not found, anything else a refusal.
func (c *Client) gqlItemErr(op, msg string) error {
	if strings.Contains(msg, "does not exist") || strings.Contains(strings.ToLower(msg), "not found") {
		return c.fail(forge.KindNotFound, op, msg, nil)
	}
	return c.fail(forge.KindInvalid, op, fmt.Sprintf("%s refused: %s", c.graphqlURL.Host, msg), nil)
}

// mrID is the MR's database id for its global id, from the last
// observation or one read.
func (c *Client) mrID(ctx context.Context, ref forge.PRRef) (int64, error) {
	c.mu.Lock()
	id := c.mrIDs[ref]
	c.mu.Unlock()
	if id != 0 {
		return id, nil
	}
	var mr mergeRequest
	if _, err := c.do(ctx, http.MethodGet, mrPath(ref), nil, &mr); err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.mrIDs[ref] = mr.ID
	c.mu.Unlock()
	return mr.ID, nil
}

func discussionGID(id string) string { return "gid://gitlab/Discussion/" + id }

// ReplyToThreads posts replies with aliased createNote mutations, MaxBatch
// to a request, answering per reply in order (PR-S12). A reply counts as
// posted only when GitLab returned its note; a request that failed in
// flight leaves each of its replies unknown (an error).
func (c *Client) ReplyToThreads(ctx context.Context, ref forge.PRRef, replies []forge.ThreadReply) []forge.ThreadReplyResult {
	const op = "reply to threads"
	out := make([]forge.ThreadReplyResult, len(replies))
	if len(replies) == 0 {
		return out
	}
	id, err := c.mrID(ctx, ref)
	if err != nil {
		err = c.mapErr(op, err)
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	for lo := 0; lo < len(replies); lo += MaxBatch {
		chunk := replies[lo:min(lo+MaxBatch, len(replies))]
		var inputs []map[string]any
		var at []int // chunk index of each input
		for i, r := range chunk {
			if err := c.blank(op, r.Body); err != nil {
				out[lo+i].Err = err
				continue
			}
			inputs = append(inputs, map[string]any{"noteableId": mrGID(id), "discussionId": discussionGID(r.ThreadID), "body": TruncateBody(r.Body)})
			at = append(at, i)
		}
		if len(inputs) == 0 {
			continue
		}
		answers, errs := c.batch(ctx, op, BatchReplyDoc(len(inputs)), inputs)
		for k, i := range at {
			res := &out[lo+i]
			if errs[k] != nil {
				res.Err = errs[k]
				continue
			}
			var a struct {
				Note *struct {
					ID     string `json:"id"`
					Body   string `json:"body"`
					Author *struct {
						Username string `json:"username"`
					} `json:"author"`
					CreatedAt time.Time `json:"createdAt"`
				} `json:"note"`
			}
			if err := json.Unmarshal(answers[k], &a); err != nil || a.Note == nil || a.Note.ID == "" {
				res.Err = c.fail(forge.KindInvalid, op, "GitLab returned no note for discussion "+chunk[i].ThreadID, err)
				continue
			}
			dbID := gidNumber(a.Note.ID)
			cm := forge.Comment{ID: a.Note.ID, DatabaseID: dbID, Body: a.Note.Body, CreatedAt: a.Note.CreatedAt,
				URL: ref.String() + "#note_" + strconv.FormatInt(dbID, 10)}
			if a.Note.Author != nil {
				cm.Author = a.Note.Author.Username
			}
			res.Comment = cm
		}
	}
	return out
}

// ResolveThreads resolves discussions with aliased discussionToggleResolve
// mutations, MaxBatch to a request, answering per thread in order.
func (c *Client) ResolveThreads(ctx context.Context, ref forge.PRRef, threadIDs []string) []error {
	const op = "resolve threads"
	out := make([]error, len(threadIDs))
	for lo := 0; lo < len(threadIDs); lo += MaxBatch {
		chunk := threadIDs[lo:min(lo+MaxBatch, len(threadIDs))]
		inputs := make([]map[string]any, len(chunk))
		for i, id := range chunk {
			inputs[i] = map[string]any{"id": discussionGID(id), "resolve": true}
		}
		answers, errs := c.batch(ctx, op, BatchResolveDoc(len(chunk)), inputs)
		for i := range chunk {
			if errs[i] != nil {
				out[lo+i] = errs[i]
				continue
			}
			var a struct {
				Discussion *struct {
					Resolved bool `json:"resolved"`
				} `json:"discussion"`
			}
			if err := json.Unmarshal(answers[i], &a); err != nil || a.Discussion == nil || !a.Discussion.Resolved {
				out[lo+i] = c.fail(forge.KindInvalid, op, "GitLab did not resolve discussion "+chunk[i], err)
			}
		}
	}
	return out
}

// gidNumber is the number ending a global id ("gid://gitlab/Note/7" → 7).
func gidNumber(gid string) int64 {
	n, _ := strconv.ParseInt(gid[strings.LastIndex(gid, "/")+1:], 10, 64)
	return n
}
