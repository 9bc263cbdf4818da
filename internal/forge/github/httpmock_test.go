package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/convergeloop/converge/internal/testutil/ghschema"
)

// registry is a transport of stubs in the style of cli/cli's httpmock: each
// stub answers one matching request, in registration order, and the test
// fails if a request finds no stub or a stub is never used. Every GraphQL
// request is captured and, when GitHub's schema is at hand, validated
// against it with its variables.
type registry struct {
	t     *testing.T
	mu    sync.Mutex
	stubs []*stub
	reqs  []recorded
	gql   []sentGraphQL
	// noSchemaCheck skips the schema check (a test sending junk on purpose).
	noSchemaCheck bool
}

type stub struct {
	desc    string
	match   func(*http.Request, []byte) bool
	respond func(*http.Request) (*http.Response, error)
	used    bool
}

type recorded struct {
	Method, Host, Path, Query string
	Header                    http.Header
	Body                      []byte
	OpName                    string
}

type sentGraphQL struct {
	Query         string
	OperationName string
	Variables     map[string]any
}

func newRegistry(t *testing.T) *registry {
	r := &registry{t: t}
	t.Cleanup(r.verify)
	return r
}

func (r *registry) verify() {
	r.t.Helper()
	for _, s := range r.stubs {
		if !s.used {
			r.t.Errorf("httpmock: stub never used: %s", s.desc)
		}
	}
	if !r.noSchemaCheck && ghschema.Dir() != "" && len(r.gql) > 0 {
		checkAgainstSchema(r.t, r.gql)
	}
}

func (r *registry) register(desc string, match func(*http.Request, []byte) bool, respond func(*http.Request) (*http.Response, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stubs = append(r.stubs, &stub{desc: desc, match: match, respond: respond})
}

// REST registers a stub for method and path (any host).
func (r *registry) REST(method, path string, respond func(*http.Request) (*http.Response, error)) {
	r.register(method+" "+path, func(req *http.Request, _ []byte) bool {
		return req.Method == method && req.URL.Path == path
	}, respond)
}

// GraphQL registers a stub for one operation name.
func (r *registry) GraphQL(op string, respond func(*http.Request) (*http.Response, error)) {
	r.register("graphql "+op, func(req *http.Request, body []byte) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "graphql") && gqlOpName(body) == op
	}, respond)
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
	return operationName(b.Query)
}

func (r *registry) RoundTrip(req *http.Request) (*http.Response, error) {
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
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.Host, req.URL.Path, req.URL.RawQuery, req.Header.Clone(), body, op})
	if op != "" {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var g sentGraphQL
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
		if resp.Header.Get("Date") == "" {
			resp.Header.Set("Date", mockDate.Format(http.TimeFormat))
		}
	}
	return resp, err
}

func (r *registry) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

var mockDate = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Responders.

func respond(status int, body string, hdr ...string) func(*http.Request) (*http.Response, error) {
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

func jsonResp(status int, v any, hdr ...string) func(*http.Request) (*http.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return respond(status, string(b), hdr...)
}

func gqlData(data any, hdr ...string) func(*http.Request) (*http.Response, error) {
	return jsonResp(200, map[string]any{"data": data}, hdr...)
}

func gqlErrs(typ, msg string, hdr ...string) func(*http.Request) (*http.Response, error) {
	e := map[string]any{"message": msg, "locations": []any{map[string]int{"line": 2, "column": 3}}}
	if typ != "" {
		e["type"] = typ
	}
	return jsonResp(200, map[string]any{"data": nil, "errors": []any{e}}, hdr...)
}

func fail(err error) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return nil, err }
}

// checkAgainstSchema validates each sent document and its variables
// against GitHub's public schema plus additions.
func checkAgainstSchema(t *testing.T, sent []sentGraphQL) {
	t.Helper()
	for _, p := range schemaProblems(ghschema.Load(t), sent) {
		t.Error(p)
	}
}

func schemaProblems(s *ast.Schema, sent []sentGraphQL) []string {
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

// Test clients.

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

const testToken = "ghp_s3cretT0kenValue1234567890abcdefABCD"

// newTestClient returns a Client for an Enterprise-style host whose
// transport is reg, with recorded (not real) sleeps.
func newTestClient(t *testing.T, reg *registry, mutate ...func(*Options)) (*Client, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	opts := Options{
		APIURL:     "https://ghe.example.com/api/v3",
		Token:      testToken,
		HTTPClient: &http.Client{Transport: reg},
		Retry: RetryPolicy{
			Sleep: func(ctx context.Context, d time.Duration) error { return sl.sleep(ctx, d) },
			Now:   func() time.Time { return mockDate },
		},
	}
	for _, m := range mutate {
		m(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, sl
}
