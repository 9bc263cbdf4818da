// Package ghschema loads GitHub's public GraphQL schema (plus the later
// additions), kept in testdata/ with its source and date (see
// testdata/README.md) and embedded, so the fidelity tests run from any
// clone; it checks documents and our own SDL against it.
package ghschema

import (
	_ "embed"
	"fmt"
	"sync"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/convergeloop/converge/internal/testutil/schemacheck"
)

var (
	//go:embed testdata/schema.graphql
	schemaSDL string
	//go:embed testdata/schema-additions.graphql
	additionsSDL string
)

var (
	once    sync.Once
	schema  *ast.Schema
	loadErr error
)

// Load returns GitHub's schema; a schema that does not load fails the test.
func Load(t testing.TB) *ast.Schema {
	t.Helper()
	once.Do(func() {
		s, err := gqlparser.LoadSchema(
			&ast.Source{Name: "schema.graphql", Input: schemaSDL},
			&ast.Source{Name: "schema-additions.graphql", Input: additionsSDL},
		)
		if err != nil {
			loadErr = fmt.Errorf("load GitHub schema: %w", err)
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
// union member and interface of ours that GitHub's schema lacks or types
// differently. Built-in introspection types are ignored.
func CheckSubset(github, ours *ast.Schema) []string {
	return schemacheck.CheckSubset("GitHub", github, ours)
}
