package github

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/ghschema"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

// TestPR_S12_BatchDocumentsValidAgainstSchema holds the batched reply and
// resolve documents (built per batch size) and their variables, as sent,
// to GitHub's public schema.
func TestPR_S12_BatchDocumentsValidAgainstSchema(t *testing.T) {
	s := ghschema.Load(t)
	reg := httpmock.New(t)
	reg.NoSchemaCheck = true // checked here, explicitly
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	reg.GraphQL("BatchReply", httpmock.GraphQLData(map[string]any{
		"m0": map[string]any{"comment": comment("C1", 1, "me", "a", at)},
		"m1": map[string]any{"comment": comment("C2", 2, "me", "b", at)},
	}))
	reg.GraphQL("BatchResolve", httpmock.GraphQLData(map[string]any{
		"m0": map[string]any{"thread": map[string]any{"id": "T1", "isResolved": true}},
		"m1": map[string]any{"thread": map[string]any{"id": "T2", "isResolved": true}},
	}))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()
	for _, r := range c.ReplyToThreads(ctx, testRef, []forge.ThreadReply{{ThreadID: "T1", Body: "a"}, {ThreadID: "T2", Body: "b"}}) {
		if r.Err != nil || r.Comment.ID == "" {
			t.Fatalf("reply: %+v", r)
		}
	}
	for _, err := range c.ResolveThreads(ctx, testRef, []string{"T1", "T2"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(reg.GraphQLSent()); n != 2 {
		t.Fatalf("sent %d GraphQL requests, want 2", n)
	}
	for _, p := range httpmock.SchemaProblems(s, reg.GraphQLSent()) {
		t.Error(p)
	}
	// The check bites on a batch document too.
	bad := reg.GraphQLSent()[1]
	bad.Variables = map[string]any{"i0": map[string]any{"threadId": "T1", "isResolved": true}, "i1": map[string]any{"threadId": "T2"}}
	if len(httpmock.SchemaProblems(s, []httpmock.SentGraphQL{bad})) == 0 {
		t.Error("schema check accepted an unknown input field in a batch")
	}
}
