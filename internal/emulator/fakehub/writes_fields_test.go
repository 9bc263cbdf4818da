package fakehub

import (
	"slices"
	"testing"
)

// TestWriteLogNamesEachBatchedMutation: a batch of aliased mutations is
// logged as one request with each field by its name, not by its alias, so
// a test counting writes counts a batched resolve as a resolve.
func TestWriteLogNamesEachBatchedMutation(t *testing.T) {
	for doc, want := range map[string][]string{
		"mutation BatchResolve($i0: ResolveReviewThreadInput!, $i1: ResolveReviewThreadInput!) {\n  m0: resolveReviewThread(input: $i0) { thread { id isResolved } }\n  m1: resolveReviewThread(input: $i1) { thread { id isResolved } }\n}\n": {"resolveReviewThread", "resolveReviewThread"},
		`mutation { addPullRequestReviewThreadReply(input: {body: "a: {b}"}) { comment { id } } }`:             {"addPullRequestReviewThreadReply"},
		"mutation{a:resolveReviewThread(input:$x){thread{id}} b :unresolveReviewThread(input:$y){thread{id}}}": {"resolveReviewThread", "unresolveReviewThread"},
	} {
		if got := mutationFields(doc); !slices.Equal(got, want) {
			t.Errorf("mutationFields(%q) = %v, want %v", doc, got, want)
		}
		if got := mutationName(doc); got != want[0] {
			t.Errorf("mutationName(%q) = %q, want %q", doc, got, want[0])
		}
	}
}
