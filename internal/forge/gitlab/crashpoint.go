package gitlab

import (
	"net/http"

	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// crashWrites puts REL-2's crash boundaries before and after every write
// to the forge, named by writeName (forgehttp.CrashWrites); next itself
// unless a test arms the hook.
func crashWrites(next http.RoundTripper) http.RoundTripper {
	return forgehttp.CrashWrites(next, writeName)
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
		return "graphql " + forgehttp.GraphQLOperation(req), true
	}
	return req.Method + " " + req.URL.EscapedPath(), true
}
