package github

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// TestREL2_CrashBoundariesAreTheWrites: the crash matrix's forge
// boundaries are the writes: REST requests other than GET and HEAD, and
// GraphQL mutations by operation name; queries, GraphQL's included, are
// none.
func TestREL2_CrashBoundariesAreTheWrites(t *testing.T) {
	gql := `{"query":"mutation ResolveThread($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id } } }","operationName":"ResolveThread"}`
	for _, tc := range []struct {
		method, url string
		kind        reqKind
		body        string
		want        string // "" : not a write
	}{
		{"GET", "https://api.example/repos/o/r/pulls/1", kindREST, "", ""},
		{"HEAD", "https://api.example/repos/o/r", kindREST, "", ""},
		{"POST", "https://api.example/repos/o/r/issues/1/labels", kindREST, `["x"]`, "POST /repos/o/r/issues/1/labels"},
		{"DELETE", "https://api.example/repos/o/r/issues/1/labels/x", kindREST, "", "DELETE /repos/o/r/issues/1/labels/x"},
		{"PATCH", "https://api.example/repos/o/r/check-runs/4", kindREST, `{}`, "PATCH /repos/o/r/check-runs/4"},
		{"POST", "https://api.example/graphql", kindGraphQLQuery, `{"query":"query PR { x }"}`, ""},
		{"POST", "https://api.example/graphql", kindGraphQLMutation, gql, "graphql ResolveThread"},
		{"POST", "https://api.example/graphql", kindGraphQLMutation, `{"query":"mutation { x }"}`, "graphql mutation"},
	} {
		req, err := http.NewRequestWithContext(withKind(context.Background(), tc.kind), tc.method, tc.url, bytes.NewReader([]byte(tc.body)))
		if err != nil {
			t.Fatal(err)
		}
		name, write := writeName(req)
		if write != (tc.want != "") || name != tc.want {
			t.Errorf("%s %s (%v): got %q write=%v, want %q", tc.method, tc.url, tc.kind, name, write, tc.want)
		}
	}
}
