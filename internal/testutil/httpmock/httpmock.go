// Package httpmock is an http.RoundTripper of stubs for tests, in the style
// of cli/cli's httpmock: each stub answers one matching request, in
// registration order, and the test fails if a request finds no stub or a
// stub is never used. Every GraphQL request is captured and validated
// against GitHub's public schema (see ghschema) with its variables.
package httpmock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Matcher tells whether a stub answers a request; body is the request body,
// already read (req.Body is left readable).
type Matcher func(req *http.Request, body []byte) bool

// Responder builds a stub's answer.
type Responder func(*http.Request) (*http.Response, error)

// Registry is the transport. Use it as an http.Client's Transport.
type Registry struct {
	// NoSchemaCheck skips the schema check at the end of the test (a test
	// sending junk on purpose, or checking the schema itself).
	NoSchemaCheck bool

	t     testing.TB
	mu    sync.Mutex
	stubs []*stub
	reqs  []Recorded
	gql   []SentGraphQL
}

type stub struct {
	desc    string
	match   Matcher
	respond Responder
	used    bool
}

// Recorded is one request the registry saw.
type Recorded struct {
	Method, Host, Path, Query string
	Header                    http.Header
	Body                      []byte
	OpName                    string // GraphQL operation name, "" for REST
}

// SentGraphQL is one GraphQL request body as sent (numbers kept as
// json.Number, so a string where an Int belongs is visible).
type SentGraphQL struct {
	Query         string
	OperationName string
	Variables     map[string]any
}

// Date is the Date header stubs carry unless they set their own.
var Date = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// New returns a registry that verifies its stubs when the test ends.
func New(t testing.TB) *Registry {
	r := &Registry{t: t}
	t.Cleanup(r.verify)
	return r
}

func (r *Registry) verify() {
	r.t.Helper()
	r.mu.Lock()
	stubs, gql := r.stubs, append([]SentGraphQL(nil), r.gql...)
	r.mu.Unlock()
	for _, s := range stubs {
		if !s.used {
			r.t.Errorf("httpmock: stub never used: %s", s.desc)
		}
	}
	if !r.NoSchemaCheck && len(gql) > 0 {
		CheckAgainstSchema(r.t, gql)
	}
}

// Register adds a stub answering the first unanswered request match
// accepts; desc names it in failures.
func (r *Registry) Register(desc string, match Matcher, respond Responder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stubs = append(r.stubs, &stub{desc: desc, match: match, respond: respond})
}

// REST registers a stub for method and path (any host).
func (r *Registry) REST(method, path string, respond Responder) {
	r.Register(method+" "+path, func(req *http.Request, _ []byte) bool {
		return req.Method == method && req.URL.Path == path
	}, respond)
}

// GraphQL registers a stub for one operation name.
func (r *Registry) GraphQL(op string, respond Responder) {
	r.Register("graphql "+op, func(req *http.Request, body []byte) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "graphql") && gqlOpName(body) == op
	}, respond)
}

// MarkAllUsed excuses every stub registered so far from the end-of-test
// check (a test whose path through the stubs is not fixed).
func (r *Registry) MarkAllUsed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.stubs {
		s.used = true
	}
}

// Requests returns every request seen, in order.
func (r *Registry) Requests() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.reqs...)
}

// GraphQLSent returns every GraphQL request body seen, in order.
func (r *Registry) GraphQLSent() []SentGraphQL {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SentGraphQL(nil), r.gql...)
}

// RoundTrip answers req from the first unused stub that matches it.
func (r *Registry) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	op := ""
	if strings.HasSuffix(req.URL.Path, "graphql") {
		op = gqlOpName(body)
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, Recorded{req.Method, req.URL.Host, req.URL.Path, req.URL.RawQuery, req.Header.Clone(), body, op})
	if op != "" {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var g SentGraphQL
		if err := dec.Decode(&g); err != nil {
			r.t.Errorf("httpmock: GraphQL body is not JSON: %v", err)
		}
		r.gql = append(r.gql, g)
	}
	var hit *stub
	for _, s := range r.stubs {
		if !s.used && s.match(req, body) {
			hit = s
			s.used = true
			break
		}
	}
	r.mu.Unlock()
	if hit == nil {
		r.t.Errorf("httpmock: no stub for %s %s%s %s", req.Method, req.URL.Host, req.URL.EscapedPath(), op)
		return nil, fmt.Errorf("httpmock: no stub for %s %s", req.Method, req.URL)
	}
	resp, err := hit.respond(req)
	if resp != nil {
		resp.Request = req
		if resp.Header == nil {
			resp.Header = http.Header{}
		}
		if resp.Header.Get("Date") == "" {
			resp.Header.Set("Date", Date.Format(http.TimeFormat))
		}
	}
	return resp, err
}

var opNameRE = regexp.MustCompile(`(?m)^\s*(?:query|mutation)\s+([_A-Za-z][_0-9A-Za-z]*)`)

// OperationName is the name of a document's first named operation.
func OperationName(doc string) string {
	if m := opNameRE.FindStringSubmatch(doc); m != nil {
		return m[1]
	}
	return ""
}

func gqlOpName(body []byte) string {
	var b struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	if b.OperationName != "" {
		return b.OperationName
	}
	return OperationName(b.Query)
}

// Responders.

// StringResponse answers status with body (JSON content type) and header
// pairs hdr (name, value, name, value, …).
func StringResponse(status int, body string, hdr ...string) Responder {
	return func(req *http.Request) (*http.Response, error) {
		h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
		for i := 0; i+1 < len(hdr); i += 2 {
			h.Set(hdr[i], hdr[i+1])
		}
		return &http.Response{
			StatusCode: status,
			Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
			Header:     h,
			Body:       io.NopCloser(strings.NewReader(body)),
			Request:    req,
		}, nil
	}
}

// JSON answers status with v encoded as JSON.
func JSON(status int, v any, hdr ...string) Responder {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return StringResponse(status, string(b), hdr...)
}

// GraphQLData answers 200 with {"data": data}.
func GraphQLData(data any, hdr ...string) Responder {
	return JSON(200, map[string]any{"data": data}, hdr...)
}

// GraphQLErrors answers 200 with one GraphQL error of GitHub's type typ
// ("" for none) and no data.
func GraphQLErrors(typ, msg string, hdr ...string) Responder {
	e := map[string]any{"message": msg, "locations": []any{map[string]int{"line": 2, "column": 3}}}
	if typ != "" {
		e["type"] = typ
	}
	return JSON(200, map[string]any{"data": nil, "errors": []any{e}}, hdr...)
}

// Error fails the round trip with err (a network fault).
func Error(err error) Responder {
	return func(*http.Request) (*http.Response, error) { return nil, err }
}
