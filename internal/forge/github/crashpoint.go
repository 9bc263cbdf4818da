package github

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
// operation), and reports whether req is one.
func writeName(req *http.Request) (string, bool) {
	switch kindOf(req.Context()) {
	case kindGraphQLQuery:
		return "", false
	case kindGraphQLMutation:
		return "graphql " + forgehttp.GraphQLOperation(req), true
	}
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return "", false
	}
	return req.Method + " " + req.URL.Path, true
}
