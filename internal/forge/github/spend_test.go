package github

import (
	"net/http"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// TestREL_4_ChargeReadsGitHubsAnswers: each answer's cost and limit are
// read from what GitHub sends, in the shapes its documentation shows
// (docs.github.com, "Rate limits for the REST API": x-ratelimit-limit,
// -remaining, -used, -reset, -resource; "Rate limits and query limits
// for the GraphQL API": rateLimit { cost limit remaining resetAt }).
func TestREL_4_ChargeReadsGitHubsAnswers(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	core := hdr("x-ratelimit-limit", "5000", "x-ratelimit-remaining", "4999", "x-ratelimit-used", "1",
		"x-ratelimit-reset", "1772604000", "x-ratelimit-resource", "core", "Date", "Wed, 04 Mar 2026 05:00:01 GMT")
	gql := hdr("x-ratelimit-limit", "5000", "x-ratelimit-remaining", "4990", "x-ratelimit-used", "10",
		"x-ratelimit-reset", "1772604000", "x-ratelimit-resource", "graphql")
	reset := time.Unix(1772604000, 0).UTC()
	cases := []struct {
		name    string
		status  int
		h       http.Header
		body    string
		graphQL bool
		want    forge.Charge
	}{
		{"a REST read", 200, core, "", false, forge.Charge{Resource: "core", Points: 1,
			Budget: forge.RateBudget{Limit: 5000, Used: 1, Remaining: 4999, ResetAt: reset}, At: time.Date(2026, 3, 4, 5, 0, 1, 0, time.UTC)}},
		{"a conditional read answered 304", 304, core, "", false, forge.Charge{Resource: "core", NotModified: true,
			Budget: forge.RateBudget{Limit: 5000, Used: 1, Remaining: 4999, ResetAt: reset}, At: time.Date(2026, 3, 4, 5, 0, 1, 0, time.UTC)}},
		{"a query that asked its cost", 200, gql,
			`{"data":{"rateLimit":{"cost":3,"limit":5000,"remaining":4987,"resetAt":"2026-03-04T06:00:00Z"},"repository":{"x":"\"rateLimit\""}}}`, true,
			forge.Charge{Resource: "graphql", Points: 3, Budget: forge.RateBudget{Limit: 5000, Used: 13, Remaining: 4987, ResetAt: reset}, At: now}},
		{"a mutation, which cannot ask", 200, gql, `{"data":{"resolveReviewThread":{"thread":{"id":"T"}}}}`, true,
			forge.Charge{Resource: "graphql", Points: 1, Estimated: true, Budget: forge.RateBudget{Limit: 5000, Used: 10, Remaining: 4990, ResetAt: reset}, At: now}},
		{"a query refused by the primary limit", 200, gql,
			`{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"API rate limit exceeded"}]}`, true,
			forge.Charge{Resource: "graphql", Budget: forge.RateBudget{Limit: 5000, Used: 10, Remaining: 4990, ResetAt: reset}, At: now}},
		{"an answer without headers", 200, http.Header{}, `{"data":{"viewer":{"login":"a"}}}`, true,
			forge.Charge{Resource: "graphql", Points: 1, Estimated: true, At: now}},
	}
	for _, tc := range cases {
		got := chargeOf(&http.Response{StatusCode: tc.status, Header: tc.h}, []byte(tc.body), tc.graphQL, now)
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
