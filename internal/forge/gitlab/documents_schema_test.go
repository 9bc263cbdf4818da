package gitlab_test

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/testutil/glschema"
)

// TestDocumentsValidateAgainstGitLabsSchema: every GraphQL document the
// backend may send validates against GitLab's own schema (the early-2021
// SDL excerpt), at both batch sizes that bound it.
func TestDocumentsValidateAgainstGitLabsSchema(t *testing.T) {
	s := glschema.Load(t)
	docs := gitlab.Documents()
	if len(docs) == 0 {
		t.Fatal("Documents lists nothing")
	}
	for name, doc := range docs {
		if err := glschema.ValidateDocument(s, doc); err != nil {
			t.Errorf("%s: %v\n%s", name, err, doc)
		}
	}
}
