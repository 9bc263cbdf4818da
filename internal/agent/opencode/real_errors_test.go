package opencode

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// OpenCode's own errors, with the real CLI against fakemodel: each ends
// the run in OpenCode's words, by the watch or by the CLI, long before
// the run's budget (several minutes), which never ends it.

const refusal = "fakemodel refuses: invalid x-api-key sk-ant-...key"

// cliErrorOf runs a fix task on a and returns its *agent.CLIError,
// failing t when the run did not end with one or ended at its budget.
func cliErrorOf(t *testing.T, a *Agent, kind string) *agent.CLIError {
	t.Helper()
	dir := agenttest.Repo(t, map[string]string{"a.txt": "x\n"})
	task := agent.Task{Kind: kind, Workdir: dir, Budget: 5 * time.Minute,
		Findings: []agent.Finding{{ID: "f", Body: "fix it"}}, Angle: "edge-cases", Diff: "diff --git a/a.txt b/a.txt\n"}
	res, err := a.Run(context.Background(), task)
	var ce *agent.CLIError
	if !errors.As(err, &ce) {
		t.Fatalf("run: err = %v, want a *agent.CLIError\nrecord %+v\nstderr: %s", err, res.Record, res.Stderr)
	}
	if res.Record.Status != agent.StatusBlocked || res.Record.Reason != agent.ReasonCLIError {
		t.Errorf("record = %+v, want blocked/%s (not stopped at the budget)", res.Record, agent.ReasonCLIError)
	}
	if ce.Agent != a.Name() {
		t.Errorf("error names agent %q, want %q", ce.Agent, a.Name())
	}
	return ce
}

// TestAG_T4_RealOpenCode_RejectedKeyIsAnAuthFailureInItsWords: fakemodel
// answers 401; the fix run and the review run end with FailAuth quoting
// OpenCode's message (the API's own), not at the budget.
func TestAG_T4_RealOpenCode_RejectedKeyIsAnAuthFailureInItsWords(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv, url := agenttest.Serve(t)
	srv.Refuse = func(string, *http.Request) (int, string) { return 401, refusal }
	a := newAgent(t, bin, url)
	for _, kind := range []string{agent.TaskKindFix, agent.TaskKindReview} {
		ce := cliErrorOf(t, a, kind)
		if ce.Kind != agent.FailAuth || !strings.Contains(ce.Message, refusal) {
			t.Errorf("%s run: error %+v, want FailAuth quoting %q", kind, ce, refusal)
		}
		if !strings.Contains(ce.Error(), "authentication failed") {
			t.Errorf("%s run: %v", kind, ce)
		}
	}
}

// TestAG_T4_RealOpenCode_MissingKeyIsAnAuthFailure: the user's provider
// has no key anywhere (no variable, no auth.json, no apiKey): FailAuth in
// OpenCode's words, before any request.
func TestAG_T4_RealOpenCode_MissingKeyIsAnAuthFailure(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv, url := agenttest.Serve(t)
	u := newUser(t)
	u.config(t, anthropicAt(url))
	ce := cliErrorOf(t, u.agent(t, bin, "anthropic/claude-sonnet-4-5"), agent.TaskKindFix)
	if ce.Kind != agent.FailAuth || !strings.Contains(ce.Message, "ANTHROPIC_API_KEY") {
		t.Errorf("error %+v, want FailAuth naming ANTHROPIC_API_KEY", ce)
	}
	for _, r := range srv.Requests() {
		if !r.Side {
			t.Errorf("a request reached the model without a key: %s", r.Path)
		}
	}
}

// TestAG_T4_RealOpenCode_UnreachableEndpointNamedAfterTheRetryBound: the
// provider's base URL is a closed local port. OpenCode retries without a
// word on stdout; its log says so, and the run ends FailEndpoint naming
// the base URL once the retry bound (5 s) has passed without an answer.
func TestAG_T4_RealOpenCode_UnreachableEndpointNamedAfterTheRetryBound(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	a := newAgent(t, bin, url)
	a.opts.RetryBound = 5 * time.Second
	ce := cliErrorOf(t, a, agent.TaskKindFix)
	if ce.Kind != agent.FailEndpoint || ce.Endpoint != url+"/v1" {
		t.Errorf("error %+v, want FailEndpoint naming %s/v1", ce, url)
	}
	if !strings.Contains(ce.Message, "connect") || !strings.Contains(ce.Error(), url+"/v1") {
		t.Errorf("error %q does not quote OpenCode's connection failure", ce.Error())
	}
	// The bound ended it: OpenCode itself gives up only after a minute
	// or more of retries.
	if !strings.Contains(ce.Message, "still failing after 5s of retries") {
		t.Errorf("error %q was not ended by the retry bound", ce.Message)
	}
}

// TestAG_T4_RealOpenCode_FailingEndpointNamedAfterTheRetryBound: the
// endpoint answers 503 to every request; OpenCode retries it; the run
// ends FailEndpoint naming the base URL, quoting the API's message.
func TestAG_T4_RealOpenCode_FailingEndpointNamedAfterTheRetryBound(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv, url := agenttest.Serve(t)
	srv.Refuse = func(string, *http.Request) (int, string) { return 503, "fakemodel is overloaded" }
	a := newAgent(t, bin, url)
	a.opts.RetryBound = 5 * time.Second
	ce := cliErrorOf(t, a, agent.TaskKindFix)
	if ce.Kind != agent.FailEndpoint || ce.Endpoint != url+"/v1" || !strings.Contains(ce.Message, "fakemodel is overloaded") {
		t.Errorf("error %+v, want FailEndpoint naming %s/v1 quoting the 503", ce, url)
	}
	if !strings.Contains(ce.Message, "still failing after 5s of retries") {
		t.Errorf("error %q was not ended by the retry bound", ce.Message)
	}
	if n := len(srv.Requests()); n < 2 {
		t.Errorf("fakemodel got %d requests; OpenCode did not retry", n)
	}
}

// TestAG_T4_RealOpenCode_CheckIsUsableWhenTheModelAnswers: agent.Check
// with the real CLI: usable when the model answered, the run read-only
// (no tool that edits or runs commands offered); a *CLIError FailAuth
// when the key is rejected.
func TestAG_T4_RealOpenCode_CheckIsUsableWhenTheModelAnswers(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv, url := agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "OK"}}})
	a := newAgent(t, bin, url)
	res, err := agent.Check(context.Background(), a, nil, 0)
	if err != nil || !res.Usable || res.Answer != "OK" {
		t.Fatalf("check = %+v, %v", res, err)
	}
	agenttest.CheckWire(t, srv)
	for _, r := range srv.Requests() {
		for _, tool := range r.Tools {
			if slices.Contains([]string{"bash", "edit", "write", "patch", "apply_patch"}, tool) {
				t.Errorf("the check offered the model %s", tool)
			}
		}
	}

	srv.Refuse = func(string, *http.Request) (int, string) { return 401, refusal }
	_, err = agent.Check(context.Background(), a, nil, 0)
	var ce *agent.CLIError
	if !errors.As(err, &ce) || ce.Kind != agent.FailAuth || !strings.Contains(ce.Message, refusal) {
		t.Errorf("check on a rejected key: %v, want FailAuth quoting %q", err, refusal)
	}
}
