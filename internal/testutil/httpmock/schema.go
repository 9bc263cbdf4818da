package httpmock

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/convergeloop/converge/internal/testutil/ghschema"
)

// CheckAgainstSchema validates each sent document and its variables
// against GitHub's public schema plus additions, reporting problems as
// test errors (it skips, or fails under CI=true, without the schema).
func CheckAgainstSchema(t testing.TB, sent []SentGraphQL) {
	t.Helper()
	for _, p := range SchemaProblems(ghschema.Load(t), sent) {
		t.Error(p)
	}
}

// SchemaProblems lists what in sent does not fit schema s.
func SchemaProblems(s *ast.Schema, sent []SentGraphQL) []string {
	var probs []string
	for _, g := range sent {
		doc, errs := gqlparser.LoadQueryWithRules(s, g.Query, nil)
		if errs != nil {
			probs = append(probs, fmt.Sprintf("GraphQL %s not valid against GitHub's schema: %v", g.OperationName, errs))
			continue
		}
		op := doc.Operations.ForName(g.OperationName)
		if op == nil || len(doc.Operations) != 1 {
			probs = append(probs, fmt.Sprintf("GraphQL: operationName %q does not name the document's one operation", g.OperationName))
			continue
		}
		if _, err := validator.VariableValues(s, op, g.Variables); err != nil {
			probs = append(probs, fmt.Sprintf("GraphQL %s: variables %v do not fit the operation: %v", g.OperationName, g.Variables, err))
		}
		for name, v := range g.Variables {
			def := op.VariableDefinitions.ForName(name)
			if def == nil {
				probs = append(probs, fmt.Sprintf("GraphQL %s: variable $%s is not declared", g.OperationName, name))
				continue
			}
			for _, p := range strictValue(s, def.Type, v, "$"+name) {
				probs = append(probs, fmt.Sprintf("GraphQL %s: %s", g.OperationName, p))
			}
		}
	}
	return probs
}

// strictValue checks JSON scalars as GitHub does: gqlparser's coercion lets
// "7" pass for Int, GitHub does not.
func strictValue(s *ast.Schema, t *ast.Type, v any, path string) []string {
	if v == nil {
		if t.NonNull {
			return []string{path + ": null for non-null " + t.String()}
		}
		return nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return strictValue(s, t.Elem, v, path) // a single value coerces to a list
		}
		var probs []string
		for i, x := range list {
			probs = append(probs, strictValue(s, t.Elem, x, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return probs
	}
	def := s.Types[t.NamedType]
	if def == nil {
		return []string{path + ": unknown type " + t.NamedType}
	}
	bad := func() []string { return []string{fmt.Sprintf("%s: %T %v is not a %s", path, v, v, t.NamedType)} }
	switch def.Kind {
	case ast.Scalar:
		switch t.NamedType {
		case "Int", "Float":
			if _, ok := v.(json.Number); !ok {
				return bad()
			}
			if _, err := v.(json.Number).Int64(); t.NamedType == "Int" && err != nil {
				return bad()
			}
		case "Boolean":
			if _, ok := v.(bool); !ok {
				return bad()
			}
		case "String":
			if _, ok := v.(string); !ok {
				return bad()
			}
		case "ID":
			if _, ok := v.(string); !ok {
				if _, ok := v.(json.Number); !ok {
					return bad()
				}
			}
		}
	case ast.Enum:
		str, ok := v.(string)
		if !ok || def.EnumValues.ForName(str) == nil {
			return bad()
		}
	case ast.InputObject:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		var probs []string
		for k, x := range m {
			f := def.Fields.ForName(k)
			if f == nil {
				probs = append(probs, path+"."+k+": no such input field")
				continue
			}
			probs = append(probs, strictValue(s, f.Type, x, path+"."+k)...)
		}
		return probs
	}
	return nil
}
