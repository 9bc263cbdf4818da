package github

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

var _ forge.ThreadBatcher = (*Client)(nil)

// MaxBatch bounds the mutations in one batched request. Fifty keeps a
// round's replies to 50 threads in one request and their resolves in one
// more; a request's secondary cost is 5 points whatever it holds, while
// GitHub counts each created comment against its content-creation limit
// (80 a minute), which a bigger batch would not spare.
const MaxBatch = 50

// partialData receives a GraphQL answer's data even beside errors: a
// batch of aliased mutations answers per alias, and a field that failed
// leaves the others standing.
type partialData struct{ data json.RawMessage }

func (p *partialData) UnmarshalJSON(b []byte) error {
	p.data = append(p.data[:0], b...)
	return nil
}

// replyFields is what a batched reply returns: enough to prove the reply
// is there (its id) and to hand back the comment.
const replyFields = `comment { id fullDatabaseId author { login } body path url createdAt pullRequestReview { id } originalCommit { oid } }`

// ReplyToThreads posts replies with aliased addPullRequestReviewThreadReply
// mutations, MaxBatch to a request, and answers per reply in order
// (PR-S12). A reply counts as posted only when GitHub returned its
// comment; a request that failed in flight leaves each of its replies
// unknown (an error), and the markers the next observation reads say
// which landed.
func (c *Client) ReplyToThreads(ctx context.Context, ref forge.PRRef, replies []forge.ThreadReply) []forge.ThreadReplyResult {
	const op = "reply to threads"
	out := make([]forge.ThreadReplyResult, len(replies))
	for lo := 0; lo < len(replies); lo += MaxBatch {
		chunk := replies[lo:min(lo+MaxBatch, len(replies))]
		inputs := make([]map[string]any, len(chunk))
		for i, r := range chunk {
			inputs[i] = map[string]any{"pullRequestReviewThreadId": r.ThreadID, "body": TruncateBody(r.Body)}
		}
		doc := batchDoc("BatchReply", "addPullRequestReviewThreadReply", "AddPullRequestReviewThreadReplyInput", replyFields, len(chunk))
		answers, errs := c.batch(ctx, op, doc, inputs)
		for i := range chunk {
			res := &out[lo+i]
			if errs[i] != nil {
				res.Err = errs[i]
				continue
			}
			var a struct {
				Comment *commentNode `json:"comment"`
			}
			if err := json.Unmarshal(answers[i], &a); err != nil || a.Comment == nil || a.Comment.ID == "" {
				res.Err = c.fail(forge.KindInvalid, op, "GitHub returned no comment for thread "+chunk[i].ThreadID, err)
				continue
			}
			res.Comment = toComment(*a.Comment)
		}
	}
	return out
}

// ResolveThreads resolves threads with aliased resolveReviewThread
// mutations, MaxBatch to a request, and answers per thread in order. The
// caller resolves only threads whose reply is proven (PR-S12).
func (c *Client) ResolveThreads(ctx context.Context, ref forge.PRRef, threadIDs []string) []error {
	const op = "resolve threads"
	out := make([]error, len(threadIDs))
	for lo := 0; lo < len(threadIDs); lo += MaxBatch {
		chunk := threadIDs[lo:min(lo+MaxBatch, len(threadIDs))]
		inputs := make([]map[string]any, len(chunk))
		for i, id := range chunk {
			inputs[i] = map[string]any{"threadId": id}
		}
		doc := batchDoc("BatchResolve", "resolveReviewThread", "ResolveReviewThreadInput", "thread { id isResolved }", len(chunk))
		answers, errs := c.batch(ctx, op, doc, inputs)
		for i := range chunk {
			if errs[i] != nil {
				out[lo+i] = errs[i]
				continue
			}
			var a struct {
				Thread *struct {
					IsResolved bool `json:"isResolved"`
				} `json:"thread"`
			}
			if err := json.Unmarshal(answers[i], &a); err != nil || a.Thread == nil || !a.Thread.IsResolved {
				out[lo+i] = c.fail(forge.KindInvalid, op, "GitHub did not resolve thread "+chunk[i], err)
			}
		}
	}
	return out
}

// batchDoc writes one mutation document of n aliased fields m0..m(n-1),
// each taking its input from variable $i0..$i(n-1).
func batchDoc(name, field, inputType, selection string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mutation %s(", name)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$i%d: %s!", i, inputType)
	}
	b.WriteString(") {\n")
	for i := range n {
		fmt.Fprintf(&b, "  m%d: %s(input: $i%d) { %s }\n", i, field, i, selection)
	}
	b.WriteString("}\n")
	return b.String()
}

// batch sends one batched mutation and splits the answer per alias: each
// item has its data or its error. A failed request fails every item.
func (c *Client) batch(ctx context.Context, op, doc string, inputs []map[string]any) ([]json.RawMessage, []error) {
	vars := make(map[string]any, len(inputs))
	for i, in := range inputs {
		vars[fmt.Sprintf("i%d", i)] = in
	}
	answers := make([]json.RawMessage, len(inputs))
	errs := make([]error, len(inputs))
	var pd partialData
	_, err := c.graphQL(ctx, op, doc, vars, true, &pd)
	ge, partial := err.(*gqlErrors)
	if err != nil && !partial {
		for i := range errs {
			errs[i] = err
		}
		return answers, errs
	}
	var data map[string]json.RawMessage
	if len(pd.data) > 0 {
		_ = json.Unmarshal(pd.data, &data)
	}
	for i := range inputs {
		alias := fmt.Sprintf("m%d", i)
		if a, ok := data[alias]; ok && string(a) != "null" {
			answers[i] = a
			continue
		}
		errs[i] = c.gqlFail(op, itemErrors(ge, alias))
	}
	return answers, errs
}

// itemErrors picks the errors of one alias (by path); with none, every
// error of the request, since none of them can be ruled out for it.
func itemErrors(ge *gqlErrors, alias string) error {
	if ge == nil {
		return &gqlErrors{errs: []gqlError{{Message: "no answer for " + alias}}}
	}
	var mine []gqlError
	for _, e := range ge.errs {
		if len(e.Path) > 0 && fmt.Sprint(e.Path[0]) == alias {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 {
		return ge
	}
	return &gqlErrors{errs: mine, header: ge.header}
}
