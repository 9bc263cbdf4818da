package graphql_test

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge/github/graphql"
	"github.com/convergeloop/converge/internal/testutil/ghschema"
)

// TestPR_O1_ClientDocumentsValidAgainstGitHubSchema holds every document the
// client sends to GitHub's public schema (plus additions).
func TestPR_O1_ClientDocumentsValidAgainstGitHubSchema(t *testing.T) {
	s := ghschema.Load(t)
	docs := graphql.All()
	if len(docs) < 7 {
		t.Fatalf("expected at least 7 documents, got %d", len(docs))
	}
	for name, doc := range docs {
		if err := ghschema.ValidateDocument(s, doc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
