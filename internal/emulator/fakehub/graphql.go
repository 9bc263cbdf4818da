package fakehub

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	graphqlgo "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"
)

//go:embed schema.graphql
var schemaSDL string

// SchemaSDL is the emulator's GraphQL schema, for fidelity tests.
func SchemaSDL() string { return schemaSDL }

type ctxKey int

const userKey ctxKey = 1

func ctxUser(ctx context.Context) *user {
	u, _ := ctx.Value(userKey).(*user)
	return u
}

type gqlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// gqlError is a resolver error carrying GitHub's error type.
type gqlError struct {
	typ string
	msg string
}

func (e *gqlError) Error() string { return e.msg }

func (e *gqlError) Extensions() map[string]any { return map[string]any{"type": e.typ} }

func notFoundf(format string, args ...any) error {
	return &gqlError{typ: "NOT_FOUND", msg: fmt.Sprintf(format, args...)}
}

func forbiddenf(format string, args ...any) error {
	return &gqlError{typ: "FORBIDDEN", msg: fmt.Sprintf(format, args...)}
}

func unprocessablef(format string, args ...any) error {
	return &gqlError{typ: "UNPROCESSABLE", msg: fmt.Sprintf(format, args...)}
}

func (h *Hub) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	u := h.authenticate(r)
	if u == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials", "documentation_url": docURL})
		return
	}
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusNotFound, notFoundBody())
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON", "documentation_url": docURL})
		return
	}
	h.log.Debug("fakehub graphql", "body", string(body))
	var req gqlRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Query == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON", "documentation_url": docURL})
		return
	}
	if f := h.takeGraphQLFault(req); f != nil {
		writeFault(w, f.status)
		return
	}
	sc := scoreGraphQL(req.Query, req.OperationName, req.Variables)
	h.mu.Lock()
	h.countLocked("graphql", u)
	h.tallyGraphQLLocked(u, sc)
	rw := h.rateLocked(u)
	rw.graphqlUsed += sc.Points
	used, reset := rw.graphqlUsed, rw.reset
	h.mu.Unlock()
	remaining := max(0, rateLimit-used)
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("X-RateLimit-Used", strconv.Itoa(used))
	w.Header().Set("X-RateLimit-Resource", "graphql")
	ex := &gqlExec{rateUsed: used, rateReset: reset, cost: sc.Points, reads: map[*pr]int64{}}
	ctx := context.WithValue(context.WithValue(r.Context(), userKey, u), execKey, ex)
	// One request, one snapshot: a reader must never see a review without
	// the threads written in the same change (PR-O2).
	lock, unlock := h.mu.RLock, h.mu.RUnlock
	if isMutation(req.Query) {
		lock, unlock = h.mu.Lock, h.mu.Unlock
		fields := mutationFields(req.Query)
		h.wlog.add(u, "graphql", mutationName(req.Query), fields...)
	}
	resp := func() *graphqlgo.Response {
		lock()
		defer unlock()
		return h.schema.Exec(ctx, req.Query, req.OperationName, req.Variables)
	}()
	out := map[string]any{}
	if len(resp.Errors) > 0 {
		out["errors"] = githubErrors(resp.Errors)
	}
	if resp.Data != nil {
		out["data"] = resp.Data
	}
	writeJSON(w, http.StatusOK, out)
}

// writeFault answers an injected fault.
func writeFault(w http.ResponseWriter, status int) {
	if status == http.StatusOK {
		writeJSON(w, status, map[string]any{"data": nil, "errors": []any{map[string]any{
			"message": "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug. Please include `F4K3:H0B` when reporting this issue.",
		}}})
		return
	}
	writeJSON(w, status, map[string]any{"message": http.StatusText(status), "documentation_url": docURL})
}

// gqlExec is one GraphQL request as its resolvers see it: the rate window
// counted before execution (resolvers may not write the model under a read
// lock) and the lag fault's clock, the read number of each PR it touched.
type gqlExec struct {
	rateUsed  int
	rateReset time.Time
	cost      int // the request's primary points (points.go)

	mu    sync.Mutex
	reads map[*pr]int64
}

const execKey ctxKey = 2

func execOf(ctx context.Context) *gqlExec {
	ex, _ := ctx.Value(execKey).(*gqlExec)
	return ex
}

// readOf returns this request's read number of p, counting the read on
// first use: every request that touches a PR is one read of it.
func (h *Hub) readOf(ctx context.Context, p *pr) int64 {
	ex := execOf(ctx)
	if ex == nil {
		return p.reads.Load()
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	n, ok := ex.reads[p]
	if !ok {
		n = p.reads.Add(1)
		ex.reads[p] = n
	}
	return n
}

// isMutation reports whether the document holds a mutation operation. It
// is lexical and errs towards true, which only costs a write lock.
func isMutation(doc string) bool {
	depth := 0
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == '#':
			for i < len(doc) && doc[i] != '\n' {
				i++
			}
		case c == '"':
			if strings.HasPrefix(doc[i:], `"""`) {
				end := strings.Index(doc[i+3:], `"""`)
				if end < 0 {
					return true
				}
				i += end + 5
				continue
			}
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case c == '{' || c == '(':
			depth++
		case c == '}' || c == ')':
			depth--
		case isNameStart(c):
			j := i
			for j < len(doc) && isNameChar(doc[j]) {
				j++
			}
			if depth == 0 && doc[i:j] == "mutation" {
				return true
			}
			i = j - 1
		}
	}
	return false
}

// selectsField reports whether doc names field other than as an argument,
// a variable or part of a longer name.
func selectsField(doc, field string) bool {
	for off := 0; ; {
		k := strings.Index(doc[off:], field)
		if k < 0 {
			return false
		}
		i, j := off+k, off+k+len(field)
		off = j
		if i > 0 && (isNameChar(doc[i-1]) || doc[i-1] == '$') {
			continue
		}
		if j < len(doc) && isNameChar(doc[j]) {
			continue
		}
		rest := strings.TrimLeft(doc[j:], " \t\r\n,")
		if strings.HasPrefix(rest, ":") {
			continue
		}
		return true
	}
}

func isNameStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isNameChar(c byte) bool { return isNameStart(c) || ('0' <= c && c <= '9') }

// githubErrors reshapes errors as GitHub sends them: the error type at the
// top level next to path and message.
func githubErrors(errs []*gqlerrors.QueryError) []map[string]any {
	var out []map[string]any
	for _, e := range errs {
		m := map[string]any{"message": e.Message}
		if len(e.Path) > 0 {
			m["path"] = e.Path
		}
		if len(e.Locations) > 0 {
			m["locations"] = e.Locations
		}
		if t, ok := e.Extensions["type"]; ok {
			m["type"] = t
		} else if e.Rule != "" {
			m["extensions"] = map[string]any{"code": e.Rule}
		}
		out = append(out, m)
	}
	return out
}

// Custom scalars, serialised as GitHub does.

type gqlDateTime struct{ time.Time }

func (gqlDateTime) ImplementsGraphQLType(name string) bool { return name == "DateTime" }
func (t *gqlDateTime) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("wrong type for DateTime: %T", input)
	}
	v, err := time.Parse(time.RFC3339, s)
	t.Time = v
	return err
}
func (t gqlDateTime) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.UTC().Format(time.RFC3339))
}

func dt(t time.Time) gqlDateTime { return gqlDateTime{t} }

func dtp(t time.Time) *gqlDateTime {
	if t.IsZero() {
		return nil
	}
	return &gqlDateTime{t}
}

type gqlURI string

func (gqlURI) ImplementsGraphQLType(name string) bool { return name == "URI" }
func (u *gqlURI) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("wrong type for URI: %T", input)
	}
	*u = gqlURI(s)
	return nil
}

type gqlGitObjectID string

func (gqlGitObjectID) ImplementsGraphQLType(name string) bool { return name == "GitObjectID" }
func (g *gqlGitObjectID) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("wrong type for GitObjectID: %T", input)
	}
	*g = gqlGitObjectID(s)
	return nil
}

// gqlBigInt is serialised as a JSON string, as GitHub does.
type gqlBigInt string

func (gqlBigInt) ImplementsGraphQLType(name string) bool { return name == "BigInt" }
func (b *gqlBigInt) UnmarshalGraphQL(input any) error {
	switch v := input.(type) {
	case string:
		*b = gqlBigInt(v)
	case int32:
		*b = gqlBigInt(strconv.Itoa(int(v)))
	default:
		return fmt.Errorf("wrong type for BigInt: %T", input)
	}
	return nil
}

func bigint(n int64) *gqlBigInt {
	b := gqlBigInt(strconv.FormatInt(n, 10))
	return &b
}

// Pagination with opaque cursors over a list's indexes.

type pageArgs struct {
	After  *string
	Before *string
	First  *int32
	Last   *int32
}

type pageInfo struct {
	start, end int
	total      int
	empty      bool
}

func (p *pageInfo) HasNextPage() bool     { return p.end < p.total }
func (p *pageInfo) HasPreviousPage() bool { return p.start > 0 }
func (p *pageInfo) StartCursor() *string {
	if p.empty {
		return nil
	}
	c := cursor(p.start)
	return &c
}
func (p *pageInfo) EndCursor() *string {
	if p.empty {
		return nil
	}
	c := cursor(p.end - 1)
	return &c
}

func cursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i)))
}

func parseCursor(c string) (int, bool) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(b), "cursor:v2:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// paginate picks [start, end) of n items as GitHub's connections do,
// refusing page sizes over 100.
func paginate(n int, a pageArgs, conn string) (int, int, *pageInfo, error) {
	start, end := 0, n
	if a.After != nil && *a.After != "" {
		i, ok := parseCursor(*a.After)
		if !ok {
			return 0, 0, nil, &gqlError{typ: "INVALID_CURSOR_ARGUMENTS", msg: fmt.Sprintf("`%s` does not appear to be a valid cursor.", *a.After)}
		}
		start = min(i+1, n)
	}
	if a.Before != nil && *a.Before != "" {
		i, ok := parseCursor(*a.Before)
		if !ok {
			return 0, 0, nil, &gqlError{typ: "INVALID_CURSOR_ARGUMENTS", msg: fmt.Sprintf("`%s` does not appear to be a valid cursor.", *a.Before)}
		}
		end = max(min(i, end), start)
	}
	for _, lim := range []struct {
		name string
		v    *int32
	}{{"first", a.First}, {"last", a.Last}} {
		if lim.v != nil && (*lim.v < 0 || *lim.v > 100) {
			return 0, 0, nil, &gqlError{typ: "EXCESSIVE_PAGINATION", msg: fmt.Sprintf("Requesting %d records on the `%s` connection exceeds the `%s` limit of 100 records.", *lim.v, conn, lim.name)}
		}
	}
	if a.First != nil {
		end = min(end, start+int(*a.First))
	}
	if a.Last != nil {
		start = max(start, end-int(*a.Last))
	}
	if a.First == nil && a.Last == nil {
		end = min(end, start+100)
	}
	return start, end, &pageInfo{start: start, end: end, total: n, empty: end <= start}, nil
}

// writeJSON answers with GitHub's JSON conventions.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

const docURL = "https://docs.github.com/rest"

func notFoundBody() map[string]any {
	return map[string]any{"message": "Not Found", "documentation_url": docURL, "status": "404"}
}
