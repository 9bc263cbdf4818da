package graphql

import (
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// TestPR_O1_StatusRollupOfTheHeadOnly: the observation reads CI on the
// head commit alone — statusCheckRollup appears only under a
// commits(last: 1) — not on each of the branch's last hundred commits.
func TestPR_O1_StatusRollupOfTheHeadOnly(t *testing.T) {
	doc, err := parser.ParseQuery(&ast.Source{Name: "observe.graphql", Input: Doc("observe")})
	if err != nil {
		t.Fatal(err)
	}
	frags := map[string]*ast.FragmentDefinition{}
	for _, f := range doc.Fragments {
		frags[f.Name] = f
	}
	rollups := 0
	var walk func(set ast.SelectionSet, commits string)
	walk = func(set ast.SelectionSet, commits string) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				in := commits
				if s.Name == "commits" {
					in = ""
					for _, a := range s.Arguments {
						in += a.Name + ":" + a.Value.Raw
					}
				}
				if s.Name == "statusCheckRollup" {
					rollups++
					if commits != "last:1" {
						t.Errorf("statusCheckRollup under commits(%s): want commits(last: 1), the head alone", commits)
					}
				}
				walk(s.SelectionSet, in)
			case *ast.InlineFragment:
				walk(s.SelectionSet, commits)
			case *ast.FragmentSpread:
				walk(frags[s.Name].SelectionSet, commits)
			}
		}
	}
	for _, op := range doc.Operations {
		walk(op.SelectionSet, "")
	}
	if rollups != 1 {
		t.Errorf("%d statusCheckRollup selections, want exactly one (the head's)", rollups)
	}
}
