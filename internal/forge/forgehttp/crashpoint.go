package forgehttp

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/convergeloop/converge/internal/crashpoint"
)

// CrashWrites puts REL-2's crash boundaries (package crashpoint) before
// and after every write a forge client sends: "forge NAME: before" and
// "forge NAME: after", NAME as writeName names the request (false: not
// a write). Both clients wrap their retrying transport with it, so a
// write retried after a fault is one boundary pair, and a scenario names
// a boundary the same on either forge. Without the hook it is next
// itself.
func CrashWrites(next http.RoundTripper, writeName func(*http.Request) (string, bool)) http.RoundTripper {
	if !crashpoint.Armed() {
		return next
	}
	return crashTransport{next: next, name: writeName}
}

type crashTransport struct {
	next http.RoundTripper
	name func(*http.Request) (string, bool)
}

func (t crashTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	name, write := t.name(req)
	if !write {
		return t.next.RoundTrip(req)
	}
	crashpoint.Hit("forge " + name + ": before")
	resp, err := t.next.RoundTrip(req)
	// Past here the forge may hold the write whatever the answer says.
	crashpoint.Hit("forge " + name + ": after")
	return resp, err
}

// GraphQLOperation is a GraphQL request's operationName, read from a
// copy of its body; "mutation" when it names none.
func GraphQLOperation(req *http.Request) string {
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
	return op
}
