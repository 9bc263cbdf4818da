package gitlab

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/convergeloop/converge/internal/crashpoint"
)

// crashWrites puts REL-2's crash boundaries (package crashpoint) before
// and after every write to GitLab, named as the GitHub client names its
// own: "forge METHOD PATH: before|after" for a REST write (the escaped
// path, as it went on the wire) and "forge graphql OPERATION: …" for a
// GraphQL mutation, so the batch of thread replies passes
// "forge graphql BatchReply: after" on both forges and a scenario can
// crash there by name whichever forge it runs on. It wraps the retrying
// transport, so a write retried after a fault is one boundary pair.
// Without the hook it is next itself.
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
	// Past here GitLab may hold the write whatever the answer says.
	crashpoint.Hit("forge " + name + ": after")
	return resp, err
}

// writeName names a write request (the method and path, or the GraphQL
// operation), and reports whether req is one. A POST to GraphQL is a
// write only when the client marked it so (asWrite): converge sends
// GitLab mutations only.
func writeName(req *http.Request) (string, bool) {
	if !isWrite(req) {
		return "", false
	}
	if w, ok := req.Context().Value(keyWrite).(bool); ok && w {
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
	return req.Method + " " + req.URL.EscapedPath(), true
}
