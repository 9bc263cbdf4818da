package claude

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// The real Claude Code CLI's own errors against fakemodel (issue
// acceptance): each run gets a budget of minutes, so that only the
// watcher (or the CLI's own error result) can end it early.

const longBudget = 5 * time.Minute

func fixTask(dir string) agent.Task {
	return agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: longBudget,
		Findings: []agent.Finding{{ID: "f", Body: "fix it"}}}
}

// cliError is err's *agent.CLIError, failing t when it is none.
func cliError(t *testing.T, err error) *agent.CLIError {
	t.Helper()
	var ce *agent.CLIError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want a *agent.CLIError", err, err)
	}
	return ce
}

// refused counts the requests fakemodel refused.
func refused(srv *fakemodel.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Script == -1 && !r.Side {
			n++
		}
	}
	return n
}

// AG-T4: the API refuses the key (401). Claude Code would retry it ten
// times over about three minutes; the run ends at its second refused
// request with the CLI's report (api_retry: HTTP 401,
// authentication_failed) as a *CLIError of kind auth (converge exits 6),
// blocked with reason cli-error — not at the budget.
func TestAG_T4_RealClaude_401EndsTheRunAtOnce(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	srv, url := agenttest.Serve(t)
	srv.Refuse = func(api string, r *http.Request) (int, string) { return 401, "invalid x-api-key" }
	a := newAgent(t, bin, url)
	a.opts.RetryBound = 4 * time.Minute // only the auth failure may end it
	for _, task := range []agent.Task{fixTask(repo(t, "a.txt", "x\n")),
		{Kind: agent.TaskKindReview, Workdir: repo(t, "a.go", "package a\n"), Angle: "edge-cases", Diff: "+package a\n", Budget: longBudget}} {
		before := refused(srv)
		res, err := a.Run(context.Background(), task)
		ce := cliError(t, err)
		if ce.Kind != agent.FailAuth || !strings.Contains(ce.Message, "HTTP 401") || !strings.Contains(ce.Message, `"authentication_failed"`) ||
			!strings.Contains(ce.Message, "ANTHROPIC_API_KEY") || ce.Endpoint != url {
			t.Errorf("%s: CLIError = %+v", task.Kind, ce)
		}
		if agent.KindOf(err) != agent.FailAuth || !strings.Contains(err.Error(), "authentication failed") {
			t.Errorf("%s: err = %v", task.Kind, err)
		}
		if res.Record.Status != agent.StatusBlocked || res.Record.Reason != agent.ReasonCLIError {
			t.Errorf("%s: record = %+v, want blocked/cli-error (ended by the CLI's error, not the budget)", task.Kind, res.Record)
		}
		// Ended by the watcher: the CLI did not go on to its third try
		// (it makes eleven before it gives up itself).
		if n := refused(srv) - before; n < 2 || n > 3 {
			t.Errorf("%s: fakemodel refused %d requests, want 2 (the run ends at the second 401)", task.Kind, n)
		}
	}
}

// AG-T4: without any credential Claude Code says "Not logged in · Please
// run /login" at once; the run's error quotes it, of kind auth.
func TestAG_T4_RealClaude_NotLoggedIn(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	srv, url := agenttest.Serve(t)
	a := newAgent(t, bin, url)
	a.opts.Env = []string{"ANTHROPIC_BASE_URL=" + url, "HOME=" + t.TempDir()} // no key, an empty HOME
	res, err := a.Run(context.Background(), fixTask(repo(t, "a.txt", "x\n")))
	ce := cliError(t, err)
	if ce.Kind != agent.FailAuth || !strings.HasPrefix(ce.Message, "Not logged in · Please run /login") {
		t.Errorf("CLIError = %+v", ce)
	}
	if res.Record.Reason != agent.ReasonCLIError {
		t.Errorf("record = %+v", res.Record)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("fakemodel got %d requests, want none", n)
	}
}

// closedPort is the URL of a local port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return url
}

// AG-T4: an unreachable model endpoint (a closed port) or one that keeps
// failing (503) ends the run when the retry bound runs out, as a
// *CLIError of kind endpoint naming the endpoint — within the bound, not
// at the budget. A review run the same.
func TestAG_T4_RealClaude_FailingEndpointEndsAfterTheRetryBound(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	failSrv, failURL := agenttest.Serve(t)
	failSrv.Refuse = func(api string, r *http.Request) (int, string) { return 503, "upstream unavailable" }
	for _, c := range []struct {
		name, url, says string
		kind            string
	}{
		{"closed port", closedPort(t), "no HTTP response", agent.TaskKindFix},
		{"503", failURL, "HTTP 503", agent.TaskKindFix},
		{"closed port review", closedPort(t), "no HTTP response", agent.TaskKindReview},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := newAgent(t, bin, c.url)
			a.opts.RetryBound = 5 * time.Second
			task := fixTask(repo(t, "a.txt", "x\n"))
			task.Kind = c.kind
			res, err := a.Run(context.Background(), task)
			ce := cliError(t, err)
			if ce.Kind != agent.FailEndpoint || ce.Endpoint != c.url || !strings.Contains(ce.Message, c.says) ||
				!strings.Contains(ce.Message, "still failing after 5s of retries") {
				t.Errorf("CLIError = %+v", ce)
			}
			if !strings.Contains(err.Error(), "model endpoint "+c.url) {
				t.Errorf("err = %v, want it to name the endpoint", err)
			}
			if res.Record.Reason != agent.ReasonCLIError {
				t.Errorf("record = %+v, want reason cli-error (ended by the retry bound, not the budget)", res.Record)
			}
		})
	}
}

// AG-B1: a run stopped at its budget (no result event) counts the tokens
// of every turn its model served — exactly fakemodel's figures, output
// tokens included (they come only at a message's end) — not none.
func TestAG_B1_RealClaude_StoppedRunCountsEveryServedToken(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	// What is measured is the tokens, not how soon the CLI starts: on a
	// loaded machine it may not reach the stalled turn within a short
	// budget, so the budget doubles until it does.
	var (
		srv *fakemodel.Server
		res agent.Result
	)
	agenttest.UntilStalled(t, 20*time.Second, func(budget time.Duration) bool {
		dir := repo(t, "a.go", "package a\n")
		var url string
		srv, url = agenttest.Serve(t, fakemodel.Script{Match: "edge-cases", Turns: []fakemodel.Turn{
			{Text: "Reading.", Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": filepath.Join(dir, "a.go")}}},
				Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 70, CacheReadTokens: 300}},
			{Calls: []fakemodel.ToolCall{{Name: "Grep", Input: map[string]any{"pattern": "package", "path": dir}}},
				Usage: fakemodel.Usage{InputTokens: 2000, OutputTokens: 90, CacheReadTokens: 400}},
			{Text: "never sent", Delay: agenttest.Stall},
		}})
		a := newAgent(t, bin, url)
		var err error
		res, err = a.Run(context.Background(), agent.Task{Kind: agent.TaskKindReview, Workdir: dir, Angle: "edge-cases",
			Diff: "+package a\n", Budget: budget})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if res.Record.Reason != agent.ReasonBudgetExceeded {
			t.Errorf("record = %+v, want stopped at the budget", res.Record)
		}
		// The third turn is the one that stalls.
		return slices.ContainsFunc(srv.Requests(), func(r fakemodel.Request) bool { return r.Script == 0 && r.Turn == 2 })
	})
	u := res.Usage
	want := agent.Usage{InputTokens: 3000, OutputTokens: 160, CacheReadTokens: 700, Turns: 2}
	if u != want {
		t.Errorf("usage = %+v\nwant   %+v (fakemodel's two served turns)", u, want)
	}
	if s := srv.Served(); s.InputTokens != int(u.InputTokens) || s.OutputTokens != int(u.OutputTokens) || s.CacheReadTokens != int(u.CacheReadTokens) {
		t.Errorf("usage = %+v, fakemodel served %+v", u, s)
	}
}

// AG-T4 pre-flight: agent.Check with the real CLI is usable when the
// model answered, and the CLI's auth error when it got a 401.
func TestAG_T4_RealClaude_Check(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: agent.CheckPrompt, Turns: []fakemodel.Turn{{Text: "OK"}}})
	a := newAgent(t, bin, url)
	res, err := agent.Check(context.Background(), a, nil, 0)
	if err != nil || !res.Usable || res.Answer != "OK" {
		t.Fatalf("check = %+v, %v", res, err)
	}
	agenttest.CheckWire(t, srv)
	for _, r := range srv.Requests() {
		if !r.Side {
			if msg := readOnlyTools(r); msg != "" {
				t.Errorf("check run: %s", msg)
			}
		}
	}

	srv.Refuse = func(api string, r *http.Request) (int, string) { return 401, "invalid x-api-key" }
	res, err = agent.Check(context.Background(), a, nil, longBudget)
	if ce := cliError(t, err); ce.Kind != agent.FailAuth || res.Usable {
		t.Errorf("check against a 401 = %+v, %+v", res, ce)
	}
}

// AG-T4: an error the CLI reports only in its result (the API does not
// know the model: 404) is the run's *CLIError of kind cli, in the CLI's
// words, for a fix run and a judge's run alike.
func TestAG_T4_RealClaude_UnknownModelIsTheCLIsError(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	srv, url := agenttest.Serve(t)
	srv.Refuse = func(api string, r *http.Request) (int, string) { return 404, "model: claude-fakemodel" }
	a := newAgent(t, bin, url)
	for _, task := range []agent.Task{fixTask(repo(t, "a.txt", "x\n")),
		{Kind: agent.TaskKindJudge, Workdir: repo(t, "a.txt", "x\n"), Prompt: "Judge this.", Budget: longBudget}} {
		res, err := a.Run(context.Background(), task)
		ce := cliError(t, err)
		if ce.Kind != agent.FailCLI || !strings.HasPrefix(ce.Message, "There's an issue with the selected model (claude-fakemodel).") {
			t.Errorf("%s: CLIError = %+v", task.Kind, ce)
		}
		if res.Record.Reason != agent.ReasonCLIError {
			t.Errorf("%s: record = %+v", task.Kind, res.Record)
		}
	}
}
