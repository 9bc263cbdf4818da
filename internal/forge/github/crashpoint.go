package github

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/convergeloop/converge/internal/crashpoint"
)

// crashWrites puts REL-2's crash boundaries (package crashpoint) before
// and after every write to the forge: a REST request that is not a GET
// or HEAD, and a GraphQL mutation. It wraps the retrying transport, so a
// write retried after a fault is one boundary pair. Without the hook it
// is next itself.
func crashWrites(next http.RoundTripper) http.RoundTripper {
	if !crashpoint.Armed() {
		return next
	}
	return crashTransport{next}
}

type crashTransport struct{ next http.RoundTripper }

func (t crashTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	name, write := writeName(req)
	if !write {
		return t.next.RoundTrip(req)
	}
	crashpoint.Hit("forge " + name + ": before")
	resp, err := t.next.RoundTrip(req)
	// Past here the forge may hold the write whatever the answer says.
	crashpoint.Hit("forge " + name + ": after")
	return resp, err
}

// writeName names a write request (the method and path, or the GraphQL
// operation), and reports whether req is one.
func writeName(req *http.Request) (string, bool) {
	switch kindOf(req.Context()) {
	case kindGraphQLQuery:
		return "", false
	case kindGraphQLMutation:
		op := "mutation"
		if req.GetBody != nil {
			if body, err := req.GetBody(); err == nil {
				var r struct {
					OperationName string `json:"operationName"`
				}
				if b, err := io.ReadAll(body); err == nil && json.Unmarshal(b, &r) == nil && r.OperationName != "" {
					op = r.OperationName
				}
				body.Close()
			}
		}
		return "graphql " + op, true
	}
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return "", false
	}
	return req.Method + " " + req.URL.Path, true
}
