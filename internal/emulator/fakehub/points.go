package fakehub

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// GitHub's published rate-limit arithmetic, as the emulator charges it.
//
// Primary GraphQL points ("Calculating a rate limit score before running
// the call"): every connection (a field given first or last) needs one
// request per node of the connections around it, assuming each reaches
// its first/last; the sum divided by 100 and rounded to the nearest whole
// number is the call's score, and a call costs at least 1. GitHub's own
// example: 1 + 100 + 100×50 = 5,101 requests cost 51 points. A mutation
// is scored the same way (its selections rarely hold a connection, so 1).
//
// Secondary points (per minute, across REST and GraphQL): a GraphQL query
// 1, a mutation 5; a REST GET, HEAD or OPTIONS 1, any other method 5.
//
// REST primary: 1 per request, except a conditional request answered 304,
// which GitHub does not count.

const (
	secondaryQuery    = 1
	secondaryMutation = 5
	secondaryRead     = 1
	secondaryWrite    = 5
)

// gqlScore is one GraphQL call's cost: the requests its connections may
// need and the points they come to.
type gqlScore struct {
	Requests int
	Points   int
	// Mutation: the operation is a mutation; Fields counts its top-level
	// fields, each one write (aliased mutations in one request).
	Mutation bool
	Fields   int
}

// scoreGraphQL computes the cost of the operation doc's opName names (the
// only one when opName is empty). A document that does not parse costs 1,
// as GitHub charges for a call it rejects.
func scoreGraphQL(doc, opName string, vars map[string]any) gqlScore {
	q, err := parser.ParseQuery(&ast.Source{Input: doc})
	if err != nil {
		return gqlScore{Points: 1}
	}
	var op *ast.OperationDefinition
	for _, o := range q.Operations {
		if opName == "" || o.Name == opName {
			op = o
			break
		}
	}
	if op == nil {
		return gqlScore{Points: 1}
	}
	frags := map[string]*ast.FragmentDefinition{}
	for _, f := range q.Fragments {
		frags[f.Name] = f
	}
	var requests int
	var walk func(set ast.SelectionSet, outer int, depth int)
	walk = func(set ast.SelectionSet, outer int, depth int) {
		if depth > 64 {
			return // a fragment cycle; validation refuses the call anyway
		}
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				inner := outer
				if n, ok := pageSize(s.Arguments, vars); ok {
					requests += outer
					inner = outer * n
				}
				walk(s.SelectionSet, inner, depth+1)
			case *ast.InlineFragment:
				walk(s.SelectionSet, outer, depth+1)
			case *ast.FragmentSpread:
				if f := frags[s.Name]; f != nil {
					walk(f.SelectionSet, outer, depth+1)
				}
			}
		}
	}
	walk(op.SelectionSet, 1, 0)
	sc := gqlScore{Requests: requests, Points: pointsFor(requests), Mutation: op.Operation == ast.Mutation}
	if sc.Mutation {
		sc.Fields = len(op.SelectionSet)
	}
	return sc
}

// pointsFor is requests/100 rounded to the nearest whole number, at least 1.
func pointsFor(requests int) int {
	return max(1, int(math.Round(float64(requests)/100)))
}

// pageSize is a connection's first or last (the larger when both), from a
// literal or a variable; ok is false for a field that is no connection.
func pageSize(args ast.ArgumentList, vars map[string]any) (int, bool) {
	n, ok := 0, false
	for _, a := range args {
		if a.Name != "first" && a.Name != "last" {
			continue
		}
		v, found := argInt(a.Value, vars)
		if !found {
			continue
		}
		n, ok = max(n, v), true
	}
	return n, ok
}

func argInt(v *ast.Value, vars map[string]any) (int, bool) {
	if v == nil {
		return 0, false
	}
	switch v.Kind {
	case ast.IntValue:
		n, err := strconv.Atoi(v.Raw)
		return n, err == nil
	case ast.Variable:
		switch x := vars[v.Raw].(type) {
		case float64:
			return int(x), true
		case int:
			return x, true
		case int32:
			return int(x), true
		case int64:
			return int(x), true
		case json.Number:
			n, err := strconv.Atoi(string(x))
			return n, err == nil
		}
	}
	return 0, false
}
