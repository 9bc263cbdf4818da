// Package ghschema loads GitHub's public GraphQL schema (plus the later
// additions), kept in testdata/ with its source and date (see
// testdata/README.md) and embedded, so the fidelity tests run from any
// clone; it checks documents and our own SDL against it.
package ghschema

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
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
	// The list is a slice: compare it, not an error interface holding it.
	if _, errs := gqlparser.LoadQueryWithRules(s, doc, nil); len(errs) > 0 {
		return errs
	}
	return nil
}

// CheckSubset reports every type, field, argument, input field, enum value,
// union member and interface of ours that GitHub's schema lacks or types
// differently. Built-in introspection types are ignored.
func CheckSubset(github, ours *ast.Schema) []string {
	var probs []string
	names := make([]string, 0, len(ours.Types))
	for n := range ours.Types {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		def := ours.Types[name]
		if def.BuiltIn || strings.HasPrefix(name, "__") {
			continue
		}
		gh := github.Types[name]
		if gh == nil {
			probs = append(probs, fmt.Sprintf("type %s: not in GitHub's schema", name))
			continue
		}
		if gh.Kind != def.Kind {
			probs = append(probs, fmt.Sprintf("type %s: kind %s, GitHub has %s", name, def.Kind, gh.Kind))
			continue
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			gf := gh.Fields.ForName(f.Name)
			if gf == nil {
				probs = append(probs, fmt.Sprintf("%s.%s: not in GitHub's schema", name, f.Name))
				continue
			}
			if gf.Type.String() != f.Type.String() {
				probs = append(probs, fmt.Sprintf("%s.%s: type %s, GitHub has %s", name, f.Name, f.Type, gf.Type))
			}
			for _, a := range f.Arguments {
				ga := gf.Arguments.ForName(a.Name)
				if ga == nil {
					probs = append(probs, fmt.Sprintf("%s.%s(%s): argument not in GitHub's schema", name, f.Name, a.Name))
				} else if ga.Type.String() != a.Type.String() {
					probs = append(probs, fmt.Sprintf("%s.%s(%s): type %s, GitHub has %s", name, f.Name, a.Name, a.Type, ga.Type))
				}
			}
		}
		for _, ev := range def.EnumValues {
			if gh.EnumValues.ForName(ev.Name) == nil {
				probs = append(probs, fmt.Sprintf("enum %s.%s: not in GitHub's schema", name, ev.Name))
			}
		}
		for _, t := range def.Types {
			if !contains(gh.Types, t) {
				probs = append(probs, fmt.Sprintf("union %s: member %s not in GitHub's union", name, t))
			}
		}
		for _, i := range def.Interfaces {
			if !contains(gh.Interfaces, i) {
				probs = append(probs, fmt.Sprintf("type %s: implements %s, GitHub's does not", name, i))
			}
		}
	}
	return probs
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
