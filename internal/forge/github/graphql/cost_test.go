package graphql

import (
	"strconv"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// TestPR_O1_ObservationCostStaysLow holds the observation to GitHub's
// rate-limit arithmetic: every connection (a field with first or last)
// may need one request per node of the connections around it, and a
// query costs the sum over 100, at least 1. Details that nest deep (a
// check run's annotations) must be read where few nodes surround them,
// or one observation costs a hundred points (PR-O1, PR-V5).
func TestPR_O1_ObservationCostStaysLow(t *testing.T) {
	doc, err := parser.ParseQuery(&ast.Source{Name: "observe.graphql", Input: Doc("observe")})
	if err != nil {
		t.Fatal(err)
	}
	frags := map[string]*ast.FragmentDefinition{}
	for _, f := range doc.Fragments {
		frags[f.Name] = f
	}
	var requests int
	var walk func(set ast.SelectionSet, outer int)
	walk = func(set ast.SelectionSet, outer int) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				inner := outer
				for _, a := range s.Arguments {
					if a.Name != "first" && a.Name != "last" {
						continue
					}
					n, err := strconv.Atoi(a.Value.Raw)
					if err != nil {
						t.Fatalf("%s(%s: %s): not a literal", s.Name, a.Name, a.Value.Raw)
					}
					requests += outer
					inner = outer * n
				}
				walk(s.SelectionSet, inner)
			case *ast.InlineFragment:
				walk(s.SelectionSet, outer)
			case *ast.FragmentSpread:
				walk(frags[s.Name].SelectionSet, outer)
			}
		}
	}
	for _, op := range doc.Operations {
		walk(op.SelectionSet, 1)
	}
	// 309 requests today (3 points by GitHub's rounding, 4 counted up
	// here): threads with their comments, commits with their parents, the
	// head's checks with their details. Checks under every commit would
	// add a hundred; annotations there would make it over a hundred points.
	if cost := max(1, (requests+99)/100); cost > 4 {
		t.Fatalf("the observation may need %d requests: %d points, want at most 4", requests, cost)
	}
}
