package fakelab

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Write is one write request the lab served, by anyone.
type Write struct {
	Actor   string // the token's username
	Surface string // graphql, rest or git
	What    string // "mutation", method and path, or the push path
	// Fields are a GraphQL mutation's fields in order, aliases dropped: a
	// batch of aliased mutations is one request and one Write, but a
	// write of each field.
	Fields []string
}

// Writes lists every write request so far, oldest first, so a test can
// hold a mode that must write nothing to nothing, or count a bot's writes.
func (l *Lab) Writes() []Write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Write(nil), l.writes...)
}

func (l *Lab) logWriteLocked(u *user, surface, what string, fields []string) {
	name := ""
	if u != nil {
		name = u.username
	}
	l.writes = append(l.writes, Write{Actor: name, Surface: surface, What: what, Fields: fields})
}

// mutationFields are the top-level fields of a document's mutations; nil
// when it has none (or does not parse: it will fail anyway).
func mutationFields(query string) []string {
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil
	}
	var out []string
	for _, op := range doc.Operations {
		if op.Operation != ast.Mutation {
			continue
		}
		for _, s := range op.SelectionSet {
			if f, ok := s.(*ast.Field); ok {
				out = append(out, f.Name)
			}
		}
	}
	return out
}
