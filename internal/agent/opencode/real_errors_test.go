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
	"github.com/convergeloop/converge/internal/agent/fakemodel"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestAG_B1_RealOpenCode_TokensOfARunStoppedAtItsBudget: the model serves
// two steps, then stalls past the budget; the run is stopped and its
// summary turn (AG-T1) served. The usage counts exactly what fakemodel
// served: each step's tokens, cache reads included.
func TestAG_B1_RealOpenCode_TokensOfARunStoppedAtItsBudget(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	partial := `{"status":"partial","next_action":"read b.txt too","needs_extension_minutes":2,"summary":"read a.txt","files_changed":[]}`
	summary := fakemodel.Script{Match: agent.SummaryRequest, FromMatch: true, Turns: []fakemodel.Turn{
		{Text: "Stopping.\n" + partial, Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 100}},
	}}
	// A minute: OpenCode takes seconds of CPU to start; under make
	// test's load it never reached the stalled turn in 15 or 30 s, and
	// each try costs a start.
	var (
		srv *fakemodel.Server
		res agent.Result
	)
	agenttest.UntilStalled(t, time.Minute, func(budget time.Duration) bool {
		dir := agenttest.Repo(t, map[string]string{"a.txt": "x\n"})
		work := fakemodel.Script{Match: "tokens-finding", Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "read", Input: map[string]any{"filePath": dir + "/a.txt"}}},
				Usage: fakemodel.Usage{InputTokens: 11, OutputTokens: 3, CacheReadTokens: 7}},
			{Calls: []fakemodel.ToolCall{{Name: "read", Input: map[string]any{"filePath": dir + "/a.txt"}}},
				Usage: fakemodel.Usage{InputTokens: 23, OutputTokens: 5}},
			{Text: "never sent", Delay: agenttest.Stall},
		}}
		var url string
		srv, url = agenttest.Serve(t, summary, work)
		a := newAgent(t, bin, url)
		// What is measured is the tokens, not how soon the summary turn
		// answers: on a loaded machine the CLI's start alone can take
		// the default summary budget's 30 s.
		a.opts.SummaryBudget = 3 * time.Minute
		var err error
		res, err = a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: budget,
			Findings: []agent.Finding{{ID: "tokens-finding", Body: "read a.txt"}}})
		if err != nil {
			t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
		}
		return slices.ContainsFunc(srv.Requests(), func(r fakemodel.Request) bool { return r.Script == 1 && r.Turn == 2 })
	})
	// What fakemodel served the run's steps: every reply it sent but
	// the title's (a side request, whose tokens OpenCode reports in
	// no event).
	var served agent.Usage
	for _, r := range srv.Requests() {
		if r.Side || r.Usage == (fakemodel.Usage{}) {
			continue
		}
		served.InputTokens += int64(r.Usage.InputTokens)
		served.OutputTokens += int64(r.Usage.OutputTokens)
		served.CacheReadTokens += int64(r.Usage.CacheReadTokens)
		served.Turns++
	}
	got := res.Usage
	if got.InputTokens != served.InputTokens || got.OutputTokens != served.OutputTokens ||
		got.CacheReadTokens != served.CacheReadTokens || got.Turns != served.Turns || served.Turns != 3 {
		t.Errorf("usage = %+v, want what fakemodel served: %+v", got, served)
	}
	if res.Record.Status != agent.StatusPartial || !slices.Contains(res.Record.Concerns, agent.SummaryConcern) {
		t.Errorf("record = %+v, want the summary's partial record", res.Record)
	}
}

// TestAG_T4_RealOpenCode_CheckIsUsableWhenTheModelAnswers: agent.Check
// with the real CLI: usable when the model answered, the run read-only
// (no tool that edits or runs commands offered); a *CLIError FailAuth
// when the key is rejected.
func TestAG_T4_RealOpenCode_CheckIsUsableWhenTheModelAnswers(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
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
