package fakehub

import "strings"

// ETags as GitHub's REST API serves them: every 200 answer to a GET
// carries a weak validator derived from the body (serveREST), so any
// change to what the endpoint returns changes it, and nothing else does.
// A request whose If-None-Match names it is answered 304 Not Modified
// with no body and is free on the primary rate limit.

// etagMatches is If-None-Match's weak comparison (RFC 9110 13.1.2): the
// header lists validators, or is "*"; W/ prefixes are ignored on both
// sides.
func etagMatches(header, etag string) bool {
	header = strings.TrimSpace(header)
	if header == "" || etag == "" {
		return false
	}
	if header == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, v := range strings.Split(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(v), "W/") == want {
			return true
		}
	}
	return false
}
