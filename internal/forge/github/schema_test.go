package github

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/github/graphql"
	"github.com/convergeloop/converge/internal/testutil/ghschema"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

// TestPR_O1_SentGraphQLValidAgainstSchema drives every GraphQL operation
// the client has and holds what actually went over the wire (document,
// operation name and variables) to GitHub's public schema. Under CI=true a
// missing schema fails instead of skipping.
func TestPR_O1_SentGraphQLValidAgainstSchema(t *testing.T) {
	s := ghschema.Load(t)
	reg := httpmock.New(t)
	reg.NoSchemaCheck = true // checked here, explicitly
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var full []any
	for range 100 {
		full = append(full, comment("C", 1, "a", "b", at))
	}
	reg.GraphQL("PullRequestObservation", httpmock.GraphQLData(observeFixture([]any{thread("T1", full, true)}, page(true, "CUR"))))
	reg.GraphQL("PullRequestThreadsPage", httpmock.GraphQLData(map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"reviewThreads": map[string]any{"pageInfo": page(false, "CUR2"), "nodes": []any{}}}}}))
	reg.GraphQL("ThreadCommentsPage", httpmock.GraphQLData(map[string]any{"node": map[string]any{"comments": map[string]any{"pageInfo": page(false, "X"), "nodes": []any{}}}}))
	reg.GraphQL("RequestReviewsByLogin", httpmock.GraphQLData(map[string]any{"requestReviewsByLogin": map[string]any{"clientMutationId": nil}}))
	reg.GraphQL("AddThreadReply", httpmock.GraphQLData(map[string]any{"addPullRequestReviewThreadReply": map[string]any{"comment": comment("C", 1, "a", "b", at)}}))
	reg.GraphQL("ResolveThread", httpmock.GraphQLData(map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": "T1", "isResolved": true}}}))
	reg.GraphQL("UnresolveThread", httpmock.GraphQLData(map[string]any{"unresolveReviewThread": map[string]any{"thread": map[string]any{"id": "T1", "isResolved": false}}}))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()

	if _, err := c.Observe(ctx, testRef); err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviews(ctx, &forge.PullRequest{Ref: testRef, ID: "PR_1"}, []string{"bob"}, []string{"copilot-pull-request-reviewer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReplyToThread(ctx, testRef, "T1", "ok"); err != nil {
		t.Fatal(err)
	}
	if err := c.ResolveThread(ctx, testRef, "T1"); err != nil {
		t.Fatal(err)
	}
	if err := c.UnresolveThread(ctx, testRef, "T1"); err != nil {
		t.Fatal(err)
	}

	if len(reg.GraphQLSent()) != len(graphql.All()) {
		t.Errorf("sent %d GraphQL requests, want one per document (%d)", len(reg.GraphQLSent()), len(graphql.All()))
	}
	for _, p := range httpmock.SchemaProblems(s, reg.GraphQLSent()) {
		t.Error(p)
	}

	// The check itself bites: wrong variable types, undeclared variables
	// and unknown input fields are all caught.
	bad := func(doc, vars string) httpmock.SentGraphQL {
		var v map[string]any
		d := json.NewDecoder(strings.NewReader(vars))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return httpmock.SentGraphQL{Query: graphql.Doc(doc), OperationName: operationName(graphql.Doc(doc)), Variables: v}
	}
	for _, g := range []httpmock.SentGraphQL{
		bad("observe", `{"owner":"o","name":"r","number":"7"}`),
		bad("observe", `{"owner":"o","name":"r","number":7,"extra":1}`),
		bad("resolve", `{"input":{"threadId":"T","isResolved":true}}`),
		bad("request_reviews", `{"input":{"pullRequestId":"P","botLogins":["copilot"],"union":"true"}}`),
		bad("threads_page", `{"owner":"o","name":"r","number":7}`),
	} {
		if len(httpmock.SchemaProblems(s, []httpmock.SentGraphQL{g})) == 0 {
			t.Errorf("schema check accepted bad variables %v for %s", g.Variables, g.OperationName)
		}
	}
}
