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
}

// writeLog records every write request, so a test can assert that a mode
// which must write nothing (PR-M1 --dry-run) wrote nothing at all.
type writeLog struct {
	mu     sync.Mutex
	writes []Write
}

func (l *writeLog) add(u *user, surface, what string) {
	actor := ""
	if u != nil {
		actor = u.restLogin
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, Write{Actor: actor, Surface: surface, What: what})
}

// Writes lists the write requests received so far, oldest first.
func (h *Hub) Writes() []Write {
	h.wlog.mu.Lock()
	defer h.wlog.mu.Unlock()
	return append([]Write(nil), h.wlog.writes...)
}

// mutationName is the operation's first selection, for the write log.
func mutationName(doc string) string {
	i := strings.Index(doc, "{")
	if i < 0 {
		return "mutation"
	}
	f := strings.FieldsFunc(doc[i+1:], func(r rune) bool { return r == '(' || r == '{' || r == ' ' || r == '\n' || r == '\t' })
	if len(f) == 0 {
		return "mutation"
	}
	if j := strings.Index(f[0], ":"); j >= 0 && j < len(f[0])-1 {
		return f[0][j+1:] // an alias
	}
	return f[0]
}
