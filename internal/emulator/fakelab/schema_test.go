package fakelab

import (
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/convergeloop/converge/internal/testutil/glschema"
)

// TestSchemaIsASubsetOfGitLabs: every type, field, argument and enum
// value the emulator serves is GitLab's, with GitLab's types, so a
// document that works on the emulator means the same on GitLab.
func TestSchemaIsASubsetOfGitLabs(t *testing.T) {
	ours, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: SchemaSDL()})
	if err != nil {
		t.Fatalf("the emulator's schema does not load: %v", err)
	}
	for _, p := range glschema.CheckSubset(glschema.Load(t), ours) {
		t.Error(p)
	}
}
