package fakehub

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestCI_RunsTestCommandOnEachHead(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	// A shell test command keeps this fast; the demo test runs go test.
	n := seedPR(t, h, RepoOptions{TestCommand: []string{"sh", "-c", `echo checking; if grep -q FAIL main.go; then echo broken >&2; exit 1; fi`}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, _ := h.PR("acme", "widget", n)
	if c, err := h.WaitCI(ctx, "acme", "widget", st.HeadSHA); err != nil || c != "success" {
		t.Fatalf("first head: %q %v", c, err)
	}
	bad, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"main.go": "package main\n// FAIL\n"}, "Break")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := h.WaitCI(ctx, "acme", "widget", bad); err != nil || c != "failure" {
		t.Fatalf("failing head: %q %v", c, err)
	}
	r := gql(t, h, h.Tokens().Author, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { commits(last: 1) { nodes { commit { oid statusCheckRollup { state contexts(first: 5) { nodes { ... on CheckRun { name status conclusion title summary } } } } } } } } } }`, nil)
	s := string(r.Data)
	if !strings.Contains(s, `"name":"ci/test","status":"COMPLETED","conclusion":"FAILURE"`) || !strings.Contains(s, "broken") || !strings.Contains(s, bad) {
		t.Errorf("rollup after failure: %s %v", s, r.Errors)
	}
}

func TestCI_NewerPushCancelsOlderRun(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{TestCommand: []string{"sh", "-c", `if grep -q SLOW main.go; then sleep 30; fi`}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, _ := h.PR("acme", "widget", n)
	if _, err := h.WaitCI(ctx, "acme", "widget", st.HeadSHA); err != nil {
		t.Fatal(err)
	}
	slow, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"main.go": "package main\n// SLOW\n"}, "Slow")
	if err != nil {
		t.Fatal(err)
	}
	fast, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"main.go": "package main\n"}, "Fast")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := h.WaitCI(ctx, "acme", "widget", slow); err != nil || c != "cancelled" {
		t.Errorf("superseded run: %q %v", c, err)
	}
	if c, err := h.WaitCI(ctx, "acme", "widget", fast); err != nil || c != "success" {
		t.Errorf("newest run: %q %v", c, err)
	}
}
