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
	"time"

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
	h.mu.Lock()
	h.countLocked("graphql", u)
	rw := h.rateLocked(u)
	rw.graphqlUsed++
	remaining, reset := rateLimit-rw.graphqlUsed, rw.reset
	h.mu.Unlock()
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("X-RateLimit-Used", strconv.Itoa(rateLimit-remaining))
	w.Header().Set("X-RateLimit-Resource", "graphql")
	ctx := context.WithValue(r.Context(), userKey, u)
	resp := h.schema.Exec(ctx, req.Query, req.OperationName, req.Variables)
	out := map[string]any{}
	if len(resp.Errors) > 0 {
		out["errors"] = githubErrors(resp.Errors)
	}
	if resp.Data != nil {
		out["data"] = resp.Data
	}
	writeJSON(w, http.StatusOK, out)
}

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
