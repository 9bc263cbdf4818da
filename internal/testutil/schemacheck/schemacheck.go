// Package schemacheck holds the forge-neutral checks the fidelity tests run
// against a forge's published GraphQL schema: one document against a schema,
// and our emulator's SDL as a subset of the forge's. ghschema (GitHub) and
// glschema (GitLab) load their schema and delegate here, so both forges are
// checked by one implementation.
package schemacheck

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// ValidateDocument checks one executable document against the schema.
func ValidateDocument(s *ast.Schema, doc string) error {
	// The list is a slice: compare it, not an error interface holding it.
	if _, errs := gqlparser.LoadQueryWithRules(s, doc, nil); len(errs) > 0 {
		return errs
	}
	return nil
}

// CheckSubset reports every type, field, argument, input field, enum value,
// union member and interface of ours that the forge's schema lacks or types
// differently; forge names the forge in the messages ("GitHub", "GitLab").
// Built-in introspection types are ignored.
func CheckSubset(forge string, upstream, ours *ast.Schema) []string {
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
		up := upstream.Types[name]
		if up == nil {
			probs = append(probs, fmt.Sprintf("type %s: not in %s's schema", name, forge))
			continue
		}
		if up.Kind != def.Kind {
			probs = append(probs, fmt.Sprintf("type %s: kind %s, %s has %s", name, def.Kind, forge, up.Kind))
			continue
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			uf := up.Fields.ForName(f.Name)
			if uf == nil {
				probs = append(probs, fmt.Sprintf("%s.%s: not in %s's schema", name, f.Name, forge))
				continue
			}
			if uf.Type.String() != f.Type.String() {
				probs = append(probs, fmt.Sprintf("%s.%s: type %s, %s has %s", name, f.Name, f.Type, forge, uf.Type))
			}
			for _, a := range f.Arguments {
				ua := uf.Arguments.ForName(a.Name)
				if ua == nil {
					probs = append(probs, fmt.Sprintf("%s.%s(%s): argument not in %s's schema", name, f.Name, a.Name, forge))
				} else if ua.Type.String() != a.Type.String() {
					probs = append(probs, fmt.Sprintf("%s.%s(%s): type %s, %s has %s", name, f.Name, a.Name, a.Type, forge, ua.Type))
				}
			}
		}
		for _, ev := range def.EnumValues {
			if up.EnumValues.ForName(ev.Name) == nil {
				probs = append(probs, fmt.Sprintf("enum %s.%s: not in %s's schema", name, ev.Name, forge))
			}
		}
		for _, t := range def.Types {
			if !contains(up.Types, t) {
				probs = append(probs, fmt.Sprintf("union %s: member %s not in %s's union", name, t, forge))
			}
		}
		for _, i := range def.Interfaces {
			if !contains(up.Interfaces, i) {
				probs = append(probs, fmt.Sprintf("type %s: implements %s, %s's does not", name, i, forge))
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
