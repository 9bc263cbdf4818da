// Package glschema loads GitLab's public GraphQL schema — a verbatim excerpt
// of the SDL GitLab committed in its source, kept in testdata/ with its
// source, commit and the excerpt rule (see testdata/README.md) and embedded,
// so the fidelity tests run from any clone. It checks documents and the
// emulator's SDL against it, with the same checks ghschema runs for GitHub.
package glschema

import (
	_ "embed"
	"fmt"
	"sync"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/convergeloop/converge/internal/testutil/schemacheck"
)

//go:embed testdata/gitlab_schema.graphql
var schemaSDL string

var (
	once    sync.Once
	schema  *ast.Schema
	loadErr error
)

// Load returns GitLab's schema (the excerpt); a schema that does not load
// fails the test.
func Load(t testing.TB) *ast.Schema {
	t.Helper()
	once.Do(func() {
		s, err := gqlparser.LoadSchema(&ast.Source{Name: "gitlab_schema.graphql", Input: schemaSDL})
		if err != nil {
			loadErr = fmt.Errorf("load GitLab schema: %w", err)
			return
		}
		schema = s
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return schema
}

// ValidateDocument checks one executable document against the schema.
func ValidateDocument(s *ast.Schema, doc string) error {
	return schemacheck.ValidateDocument(s, doc)
}

// CheckSubset reports every type, field, argument, input field, enum value,
// union member and interface of ours that GitLab's schema lacks or types
// differently. The excerpt holds only what converge and its emulator reach,
// so a field of ours outside it is reported too: add it to the excerpt from
// GitLab's file (see testdata/README.md) rather than loosen the check.
func CheckSubset(gitlab, ours *ast.Schema) []string {
	return schemacheck.CheckSubset("GitLab", gitlab, ours)
}
