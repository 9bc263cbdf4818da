package httpmock

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// recT records what the registry reports instead of failing the test.
type recT struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recT) Helper()                        {}
func (r *recT) Cleanup(f func())               { r.cleanups = append(r.cleanups, f) }
func (r *recT) Errorf(format string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(format, a...)) }
func (r *recT) Error(a ...any)                 { r.errs = append(r.errs, fmt.Sprint(a...)) }
func (r *recT) end() {
	for _, f := range r.cleanups {
		f()
	}
}
func (r *recT) saw(sub string) bool { return strings.Contains(strings.Join(r.errs, "\n"), sub) }

// TestStubsAnswerInOrderAndUnusedFail: stubs answer matching requests once
// each in order; a request no stub matches and a stub never used both
// fail the test.
func TestStubsAnswerInOrderAndUnusedFail(t *testing.T) {
	rt := &recT{}
	reg := New(rt)
	reg.NoSchemaCheck = true
	reg.REST("GET", "/a", StringResponse(200, "first"))
	reg.REST("GET", "/a", JSON(201, map[string]string{"n": "second"}, "X-Test", "yes"))
	reg.REST("GET", "/never", StringResponse(200, ""))
	c := &http.Client{Transport: reg}

	for i, want := range []string{"first", `{"n":"second"}`} {
		resp, err := c.Get("https://h.example/a")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want || resp.Header.Get("Date") == "" {
			t.Errorf("request %d: %q (Date %q), want %q", i, b, resp.Header.Get("Date"), want)
		}
	}
	if _, err := c.Get("https://h.example/a"); err == nil {
		t.Error("a third request found a stub")
	}
	rt.end()
	if !rt.saw("no stub for GET h.example/a") || !rt.saw("stub never used: GET /never") {
		t.Errorf("registry reported %q", rt.errs)
	}
	if n := len(reg.Requests()); n != 3 {
		t.Errorf("recorded %d requests, want 3", n)
	}
}

// TestGraphQLMatchesByOperation: GraphQL stubs match by operation name
// (from operationName or the document) and the bodies are captured.
func TestGraphQLMatchesByOperation(t *testing.T) {
	rt := &recT{}
	reg := New(rt)
	reg.NoSchemaCheck = true
	reg.GraphQL("Two", GraphQLErrors("NOT_FOUND", "gone"))
	reg.GraphQL("One", GraphQLData(map[string]int{"x": 1}))
	c := &http.Client{Transport: reg}
	for _, body := range []string{
		`{"query":"query One { x }","variables":{"n":7}}`,
		`{"query":"mutation Two { y }","operationName":"Two"}`,
	} {
		resp, err := c.Post("https://h.example/api/graphql", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	reg.MarkAllUsed()
	rt.end()
	if len(rt.errs) != 0 {
		t.Errorf("errors: %q", rt.errs)
	}
	sent := reg.GraphQLSent()
	if len(sent) != 2 || sent[0].Variables["n"] == nil || reg.Requests()[1].OpName != "Two" {
		t.Errorf("captured %+v", sent)
	}
	if _, err := Error(errors.New("boom"))(nil); err == nil {
		t.Error("Error responder did not fail")
	}
}
