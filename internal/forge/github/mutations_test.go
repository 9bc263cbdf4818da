package github

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

func sentVars(t *testing.T, r httpmock.Recorded) map[string]any {
	t.Helper()
	var b struct {
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("body: %v", err)
	}
	return b.Variables
}

func TestPR_O5_RequestReviewsByLoginUnion(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("RequestReviewsByLogin", httpmock.GraphQLData(map[string]any{"requestReviewsByLogin": map[string]any{"clientMutationId": nil}}))
	reg.GraphQL("RequestReviewsByLogin", httpmock.GraphQLData(map[string]any{"requestReviewsByLogin": map[string]any{"clientMutationId": nil}}))
	c, _ := newTestClient(t, reg)

	if err := c.RequestReviews(context.Background(), &forge.PullRequest{Ref: testRef, ID: "PR_kwDOA"}, nil, []string{"copilot-pull-request-reviewer"}); err != nil {
		t.Fatalf("RequestReviews: %v", err)
	}
	if err := c.RequestReviews(context.Background(), &forge.PullRequest{Ref: testRef, ID: "PR_kwDOA"}, []string{"bob"}, []string{"copilot-pull-request-reviewer"}); err != nil {
		t.Fatalf("RequestReviews: %v", err)
	}
	reqs := reg.Requests()
	want := []map[string]any{
		{"input": map[string]any{"pullRequestId": "PR_kwDOA", "union": true, "botLogins": []any{"copilot-pull-request-reviewer"}}},
		{"input": map[string]any{"pullRequestId": "PR_kwDOA", "union": true, "botLogins": []any{"copilot-pull-request-reviewer"}, "userLogins": []any{"bob"}}},
	}
	for i := range want {
		if got := sentVars(t, reqs[i]); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("request %d variables = %v, want %v", i, got, want[i])
		}
	}
	// Nothing to request costs nothing.
	if err := c.RequestReviews(context.Background(), &forge.PullRequest{Ref: testRef, ID: "PR_kwDOA"}, nil, nil); err != nil || len(reg.Requests()) != 2 {
		t.Errorf("empty request: err %v, requests %d", err, len(reg.Requests()))
	}
}

func TestPR_O5_RequestReviewsRefusedIsDetectable(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("RequestReviewsByLogin", httpmock.GraphQLErrors("UNPROCESSABLE", "Could not resolve bot copilot-pull-request-reviewer"))
	c, _ := newTestClient(t, reg)
	err := c.RequestReviews(context.Background(), &forge.PullRequest{Ref: testRef, ID: "PR_kwDOA"}, nil, []string{"copilot-pull-request-reviewer"})
	if forge.KindOf(err) != forge.KindInvalid || !errors.Is(err, ErrReviewerUnavailable) {
		t.Fatalf("err = %v (kind %v), want invalid wrapping ErrReviewerUnavailable", err, forge.KindOf(err))
	}
	if !strings.Contains(err.Error(), "Could not resolve bot") {
		t.Errorf("err %q lacks GitHub's message", err)
	}
	if n := len(reg.Requests()); n != 1 {
		t.Errorf("a refused mutation was sent %d times, want 1", n)
	}
}

func TestPR_O1_ReplyResolveUnresolveThread(t *testing.T) {
	reg := httpmock.New(t)
	at := time.Date(2026, 3, 2, 1, 2, 3, 0, time.UTC)
	reg.GraphQL("AddThreadReply", httpmock.GraphQLData(map[string]any{"addPullRequestReviewThreadReply": map[string]any{
		"comment": comment("PRRC_9", 99, "converge-bot", "Fixed in abc.", at)}}))
	reg.GraphQL("ResolveThread", httpmock.GraphQLData(map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": "PRRT_1", "isResolved": true}}}))
	reg.GraphQL("UnresolveThread", httpmock.GraphQLData(map[string]any{"unresolveReviewThread": map[string]any{"thread": map[string]any{"id": "PRRT_1", "isResolved": false}}}))
	c, _ := newTestClient(t, reg)
	ctx := context.Background()

	got, err := c.ReplyToThread(ctx, testRef, "PRRT_1", "Fixed in abc.")
	if err != nil {
		t.Fatalf("ReplyToThread: %v", err)
	}
	if got.ID != "PRRC_9" || got.DatabaseID != 99 || got.Author != "converge-bot" || !got.CreatedAt.Equal(at) {
		t.Errorf("reply = %+v", got)
	}
	if err := c.ResolveThread(ctx, testRef, "PRRT_1"); err != nil {
		t.Fatalf("ResolveThread: %v", err)
	}
	if err := c.UnresolveThread(ctx, testRef, "PRRT_1"); err != nil {
		t.Fatalf("UnresolveThread: %v", err)
	}
	reqs := reg.Requests()
	if v := sentVars(t, reqs[0]); !reflect.DeepEqual(v, map[string]any{"input": map[string]any{"pullRequestReviewThreadId": "PRRT_1", "body": "Fixed in abc."}}) {
		t.Errorf("reply variables = %v", v)
	}
	for _, r := range reqs[1:] {
		if v := sentVars(t, r); !reflect.DeepEqual(v, map[string]any{"input": map[string]any{"threadId": "PRRT_1"}}) {
			t.Errorf("%s variables = %v", r.OpName, v)
		}
	}
}

func TestPR_G6_TruncateBody(t *testing.T) {
	if s := strings.Repeat("a", MaxBodyChars); TruncateBody(s) != s {
		t.Error("a body at the limit was changed")
	}
	for _, n := range []int{MaxBodyChars + 1, MaxBodyChars + 5000, 3 * MaxBodyChars} {
		long := strings.Repeat("é", n) // multi-byte: the limit is in characters
		got := TruncateBody(long)
		if c := utf8.RuneCountInString(got); c > MaxBodyChars || c < MaxBodyChars-200 {
			t.Errorf("n=%d: truncated to %d characters, want just under %d", n, c, MaxBodyChars)
		}
		if !utf8.ValidString(got) || !strings.Contains(got, "truncated by converge") {
			t.Errorf("n=%d: no valid note in the truncated body", n)
		}
	}
}

func TestPR_G6_ReplyBodyIsTruncated(t *testing.T) {
	reg := httpmock.New(t)
	reg.GraphQL("AddThreadReply", httpmock.GraphQLData(map[string]any{"addPullRequestReviewThreadReply": map[string]any{
		"comment": comment("PRRC_9", 99, "me", "…", time.Now())}}))
	c, _ := newTestClient(t, reg)
	if _, err := c.ReplyToThread(context.Background(), testRef, "PRRT_1", strings.Repeat("x", 70000)); err != nil {
		t.Fatal(err)
	}
	body := sentVars(t, reg.Requests()[0])["input"].(map[string]any)["body"].(string)
	if utf8.RuneCountInString(body) > MaxBodyChars {
		t.Errorf("sent %d characters", utf8.RuneCountInString(body))
	}
}

// TestPR_M3_OnlyADefiniteRefusalIsRefused: of the ways a review request
// can fail, only GitHub's word that the reviewer cannot be requested is a
// refusal (KindInvalid wrapping ErrReviewerUnavailable); faults that may
// pass are unreachable or rate-limited and never read as one.
func TestPR_M3_OnlyADefiniteRefusalIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		resp    []func(*http.Request) (*http.Response, error)
		kind    forge.ErrorKind
		refused bool
	}{
		{"unknown bot", one(httpmock.GraphQLErrors("NOT_FOUND", "Could not resolve to a Bot with the login of 'copilot-pull-request-reviewer'.")), forge.KindInvalid, true},
		{"unprocessable", one(httpmock.GraphQLErrors("UNPROCESSABLE", "Review cannot be requested from pull request author.")), forge.KindInvalid, true},
		{"502 from the front end", one(httpmock.StringResponse(502, `{"message":"Server Error"}`)), forge.KindUnreachable, false},
		{"something went wrong", one(httpmock.GraphQLErrors("", "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug.")), forge.KindUnreachable, false},
		{"internal type", one(httpmock.GraphQLErrors("INTERNAL", "internal error")), forge.KindUnreachable, false},
		{"rate limited", []func(*http.Request) (*http.Response, error){
			httpmock.GraphQLErrors("RATE_LIMITED", "API rate limit exceeded", "Retry-After", "1"),
			httpmock.GraphQLErrors("RATE_LIMITED", "API rate limit exceeded", "Retry-After", "1"),
			httpmock.GraphQLErrors("RATE_LIMITED", "API rate limit exceeded", "Retry-After", "1"),
			httpmock.GraphQLErrors("RATE_LIMITED", "API rate limit exceeded", "Retry-After", "1"),
		}, forge.KindRateLimited, false},
		{"rate limited, today's shape", []func(*http.Request) (*http.Response, error){
			rateLimit(), rateLimit(), rateLimit(), rateLimit(),
		}, forge.KindRateLimited, false},
		{"forbidden", one(httpmock.GraphQLErrors("FORBIDDEN", "octo does not have the correct permissions to execute `RequestReviewsByLogin`")), forge.KindAuth, false},
		{"pr gone", one(httpmock.GraphQLErrors("NOT_FOUND", "Could not resolve to a node with the global id of 'PR_kwDOA'")), forge.KindNotFound, false},
		{"untyped", one(httpmock.GraphQLErrors("", "Parse error on \"}\"")), forge.KindOther, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := httpmock.New(t)
			for _, r := range tt.resp {
				reg.GraphQL("RequestReviewsByLogin", r)
			}
			c, _ := newTestClient(t, reg)
			err := c.RequestReviews(context.Background(), &forge.PullRequest{Ref: testRef, ID: "PR_kwDOA"}, nil, []string{"copilot-pull-request-reviewer"})
			if forge.KindOf(err) != tt.kind || errors.Is(err, ErrReviewerUnavailable) != tt.refused {
				t.Fatalf("err = %v (kind %v, refused %v), want kind %v refused %v",
					err, forge.KindOf(err), errors.Is(err, ErrReviewerUnavailable), tt.kind, tt.refused)
			}
		})
	}
}

func one(r func(*http.Request) (*http.Response, error)) []func(*http.Request) (*http.Response, error) {
	return []func(*http.Request) (*http.Response, error){r}
}

// rateLimit is GitHub's GraphQL primary limit as it answers today (REL-1):
// type RATE_LIMIT, code graphql_rate_limit, points still left.
func rateLimit() func(*http.Request) (*http.Response, error) {
	return httpmock.JSON(200, map[string]any{"data": nil, "errors": []any{map[string]any{
		"type": "RATE_LIMIT", "code": "graphql_rate_limit", "message": "API rate limit already exceeded for user ID 1."}}},
		"Retry-After", "1", "X-Ratelimit-Remaining", "12")
}
