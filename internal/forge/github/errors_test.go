package github

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

func TestIF1_ErrorKinds(t *testing.T) {
	tests := []struct {
		name     string
		rest     func(*http.Request) (*http.Response, error)
		kind     forge.ErrorKind
		contains []string
	}{
		{"401 bad credentials", httpmock.StringResponse(401, `{"message":"Bad credentials"}`), forge.KindAuth,
			[]string{"token rejected by ghe.example.com", "Bad credentials"}},
		{"403 without rate-limit headers", httpmock.StringResponse(403, `{"message":"Resource not accessible by integration"}`), forge.KindAuth,
			[]string{"token rejected by ghe.example.com", "Resource not accessible"}},
		{"404", httpmock.StringResponse(404, `{"message":"Not Found"}`), forge.KindNotFound, []string{"Not Found"}},
		{"422 keeps GitHub's message", httpmock.StringResponse(422, `{"message":"Validation Failed","errors":[{"resource":"Label","code":"invalid","field":"name","message":"name is too long"}]}`),
			forge.KindInvalid, []string{"Validation Failed", "name is too long"}},
		{"DNS", httpmock.Error(&net.DNSError{Err: "no such host", Name: "ghe.example.com", IsNotFound: true}), forge.KindUnreachable,
			[]string{"cannot reach https://ghe.example.com", "no such host", "check --api-url"}},
		{"unknown CA", httpmock.Error(&net.OpError{Op: "remote error", Err: x509.UnknownAuthorityError{}}), forge.KindUnreachable,
			[]string{"cannot reach https://ghe.example.com", "--ca-file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := httpmock.New(t)
			reg.REST("POST", "/api/v3/repos/octo/hello/issues/7/labels", tt.rest)
			c, sl := newTestClient(t, reg)
			err := c.AddLabels(context.Background(), testRef, "x")
			if forge.KindOf(err) != tt.kind {
				t.Fatalf("err = %v (kind %v), want %v", err, forge.KindOf(err), tt.kind)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err %q lacks %q", err, s)
				}
			}
			if len(sl.all()) != 0 {
				t.Errorf("retried a permanent fault: %v", sl.all())
			}
		})
	}
}

func TestIF1_GraphQLErrorKinds(t *testing.T) {
	tests := []struct {
		name string
		resp func(*http.Request) (*http.Response, error)
		kind forge.ErrorKind
	}{
		{"401", httpmock.StringResponse(401, `{"message":"This endpoint requires you to be authenticated."}`), forge.KindAuth},
		{"FORBIDDEN", httpmock.GraphQLErrors("FORBIDDEN", "Resource not accessible by integration"), forge.KindAuth},
		{"NOT_FOUND", httpmock.GraphQLErrors("NOT_FOUND", "Could not resolve to a node with the global id of 'X'"), forge.KindNotFound},
		{"other errors", httpmock.GraphQLErrors("", "Field 'x' doesn't exist on type 'Y'"), forge.KindInvalid},
		{"404 endpoint is a wrong URL", httpmock.StringResponse(404, `{"message":"Not Found"}`), forge.KindUnreachable},
		{"HTML from a proxy", httpmock.StringResponse(200, `<html>login</html>`), forge.KindUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := httpmock.New(t)
			reg.GraphQL("UnresolveThread", tt.resp)
			c, _ := newTestClient(t, reg)
			err := c.UnresolveThread(context.Background(), testRef, "X")
			if forge.KindOf(err) != tt.kind {
				t.Errorf("err = %v (kind %v), want %v", err, forge.KindOf(err), tt.kind)
			}
		})
	}
}

// TestSEC3_TokenNeverInErrors makes the server echo the token back in every
// kind of failure and checks no error text or log line carries it.
func TestSEC3_TokenNeverInErrors(t *testing.T) {
	echo := "token " + testToken + " is wrong"
	faults := []func(*http.Request) (*http.Response, error){
		httpmock.StringResponse(401, fmt.Sprintf(`{"message":%q}`, echo)),
		httpmock.StringResponse(403, fmt.Sprintf(`{"message":%q}`, echo)),
		httpmock.StringResponse(404, fmt.Sprintf(`{"message":%q}`, echo)),
		httpmock.StringResponse(422, fmt.Sprintf(`{"message":%q,"errors":[{"message":%q}]}`, echo, echo)),
		httpmock.StringResponse(502, fmt.Sprintf(`{"message":%q}`, echo)),
		httpmock.StringResponse(429, fmt.Sprintf(`{"message":%q}`, echo), "Retry-After", "99999"),
		httpmock.Error(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New(echo)}),
		httpmock.Error(errors.New(echo)),
	}
	for i, f := range faults {
		for _, graphQL := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/graphql=%v", i, graphQL), func(t *testing.T) {
				reg := httpmock.New(t)
				var logs bytes.Buffer
				c, _ := newTestClient(t, reg, func(o *Options) {
					o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
					o.Retry.MaxAttempts = 2
				})
				var err error
				if graphQL {
					reg.GraphQL("PullRequestObservation", f)
					reg.GraphQL("PullRequestObservation", f)
					reg.GraphQL("PullRequestObservation", httpmock.GraphQLErrors("", echo))
					_, err = c.Observe(context.Background(), testRef)
					if err == nil {
						_, err = c.Observe(context.Background(), testRef)
					}
					if err == nil {
						_, err = c.Observe(context.Background(), testRef)
					}
					// Not every fault is retried; drop unused stubs.
					reg.MarkAllUsed()
				} else {
					reg.REST("GET", eventsPath, f)
					reg.REST("GET", eventsPath, f)
					_, err = c.IssueEvents(context.Background(), testRef)
					reg.MarkAllUsed()
				}
				if err == nil {
					t.Fatal("no error")
				}
				for e := error(err); e != nil; e = errors.Unwrap(e) {
					if strings.Contains(e.Error(), testToken) {
						t.Errorf("token in error chain: %q", e.Error())
					}
				}
				if strings.Contains(fmt.Sprintf("%v %+v", err, err), testToken) {
					t.Errorf("token in error: %v", err)
				}
				if strings.Contains(logs.String(), testToken) {
					t.Errorf("token in logs: %s", logs.String())
				}
			})
		}
	}
}

// TestIF2_TokenOnlyToItsHosts follows a redirect to another host and checks
// the token went to the API and GraphQL origins only.
func TestIF2_TokenOnlyToItsHosts(t *testing.T) {
	reg := httpmock.New(t)
	reg.REST("GET", eventsPath, httpmock.StringResponse(302, "", "Location", "https://evil.example.net/steal"))
	reg.Register("GET evil.example.net/steal", func(r *http.Request, _ []byte) bool {
		return r.URL.Host == "evil.example.net"
	}, httpmock.JSON(200, []any{}))
	reg.GraphQL("ResolveThread", httpmock.GraphQLData(map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": "T", "isResolved": true}}}))
	c, _ := newTestClient(t, reg, func(o *Options) {
		o.APIURL = "https://api.ghe.example.com/api/v3"
		o.GraphQLURL = "https://gql.ghe.example.com/api/graphql"
	})
	if _, err := c.IssueEvents(context.Background(), testRef); err != nil {
		t.Fatalf("IssueEvents: %v", err)
	}
	if err := c.ResolveThread(context.Background(), testRef, "T"); err != nil {
		t.Fatalf("ResolveThread: %v", err)
	}
	for _, r := range reg.Requests() {
		auth := r.Header.Get("Authorization")
		switch r.Host {
		case "api.ghe.example.com", "gql.ghe.example.com":
			if auth != "token "+testToken {
				t.Errorf("%s: Authorization %q, want the token", r.Host, auth)
			}
		default:
			if auth != "" {
				t.Errorf("token sent to %s", r.Host)
			}
		}
	}
	if n := len(reg.Requests()); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
}

// TestIF3_CAFileTrustsSelfSigned talks TLS to a loopback server whose
// certificate only --ca-file vouches for.
func TestIF3_CAFileTrustsSelfSigned(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":{"resolveReviewThread":{"thread":{"id":"T","isResolved":true}}}}`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	without, err := New(Options{APIURL: srv.URL + "/api/v3", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	err = without.ResolveThread(context.Background(), testRef, "T")
	if forge.KindOf(err) != forge.KindUnreachable || !strings.Contains(err.Error(), "--ca-file") {
		t.Errorf("without CA: %v, want unreachable naming --ca-file", err)
	}

	with, err := New(Options{APIURL: srv.URL + "/api/v3", Token: testToken, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := with.ResolveThread(context.Background(), testRef, "T"); err != nil {
		t.Errorf("with CA: %v", err)
	}

	if _, err := HTTPClientWithCA(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("a missing CA file must be an error")
	}
}
