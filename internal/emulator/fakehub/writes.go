package fakehub

import (
	"strings"
	"sync"
)

// Write is one write request the hub received, whatever its outcome: a
// GraphQL mutation, a REST call that is not a read, or a git push.
type Write struct {
	Actor   string // the REST login of the token's user
	Surface string // graphql, rest or git
	What    string // the operation, method and path, or push path
	// Fields are a GraphQL mutation's fields in order, aliases dropped:
	// a batch of aliased mutations (m0: resolveReviewThread, m1: …) is
	// one request and one Write, but a write of each field.
	Fields []string
}

// writeLog records every write request, so a test can assert that a mode
// which must write nothing (PR-M1 --dry-run) wrote nothing at all.
type writeLog struct {
	mu     sync.Mutex
	writes []Write
}

func (l *writeLog) add(u *user, surface, what string, fields ...string) {
	actor := ""
	if u != nil {
		actor = u.restLogin
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, Write{Actor: actor, Surface: surface, What: what, Fields: fields})
}

// Writes lists the write requests received so far, oldest first.
func (h *Hub) Writes() []Write {
	h.wlog.mu.Lock()
	defer h.wlog.mu.Unlock()
	return append([]Write(nil), h.wlog.writes...)
}

// mutationName is the operation's first field, for the write log.
func mutationName(doc string) string {
	if f := mutationFields(doc); len(f) > 0 {
		return f[0]
	}
	return "mutation"
}

// mutationFields are the top-level fields of the operation, in order, by
// name: an alias ("m0: resolveReviewThread" or "m0:resolveReviewThread")
// is dropped. It is lexical: enough for the documents clients send.
func mutationFields(doc string) []string {
	i := strings.Index(doc, "{")
	if i < 0 {
		return nil
	}
	// The names and colons at the top level of the selection set.
	var toks []string
	depth, parens, word := 1, 0, ""
	end := func() {
		if word != "" && depth == 1 && parens == 0 {
			toks = append(toks, word)
		}
		word = ""
	}
	for _, r := range doc[i+1:] {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			word += string(r)
			continue
		}
		end()
		switch {
		case r == '(':
			parens++
		case r == ')':
			parens--
		case parens > 0:
		case r == '{':
			depth++
		case r == '}':
			depth--
		case r == ':' && depth == 1:
			toks = append(toks, ":")
		}
		if depth == 0 {
			break
		}
	}
	var out []string
	for j, t := range toks {
		if t == ":" || (j+1 < len(toks) && toks[j+1] == ":") {
			continue // an alias and its colon
		}
		out = append(out, t)
	}
	return out
}
