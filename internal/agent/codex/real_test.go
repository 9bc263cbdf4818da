package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// The real Codex CLI against fakemodel (DESIGN.md, testing layer 4): as
// its users set it up (userAgent: config.toml in CODEX_HOME with
// openai_base_url and a `codex login --with-api-key`, Codex's default
// model, or a custom provider whose env_key converge passes), and with a
// custom provider through converge's options and a pinned model
// (newAgent). The CLI comes from CONVERGE_CODEX_BIN or PATH (.ci/run
// installs a pinned version); without it the tests skip, except under
// CI=true, where they fail: CI must run them.

func realCLI(t *testing.T) string {
	return agenttest.RealCLI(t, BinaryEnv, "codex", "@openai/codex")
}

func repo(t *testing.T, name, content string) string {
	return agenttest.Repo(t, map[string]string{name: content})
}

func newAgent(t *testing.T, bin, url string) *Agent {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{
		Provider: &Provider{
			ID: "fakemodel", Name: "fakemodel", BaseURL: url + "/v1", EnvKey: "FAKEMODEL_API_KEY",
		},
		// Fail fast instead of retrying a broken stream.
		Config: []string{
			"model_providers.fakemodel.request_max_retries=0",
			"model_providers.fakemodel.stream_max_retries=0",
			// No plugin marketplace sync (a git ls-remote to github.com) at start.
			"features.plugins=false",
		},
		CLIOptions: agent.CLIOptions{
			Binary:  bin,
			Model:   "gpt-fakemodel",
			PassEnv: []string{},
			Env: []string{
				"FAKEMODEL_API_KEY=sk-fakemodel",
				"HOME=" + home,
				"CODEX_HOME=" + filepath.Join(home, ".codex"),
			},
			Grace: 2 * time.Second,
			// converge's environment holds forge tokens; the run must not.
			Environ: func() []string {
				return append(os.Environ(), "GH_TOKEN=ghp_"+strings.Repeat("x", 36), "CONVERGE_TOKEN=converge-secret-token")
			},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// forgeTokens are in converge's environment in every test: no run may get
// them.
var forgeTokens = []string{"GH_TOKEN=ghp_" + strings.Repeat("x", 36), "CONVERGE_TOKEN=converge-secret-token"}

// environ is converge's environment for a test: the machine's without
// any Codex or OpenAI setting of its own, the forge tokens, and extra.
func environ(extra ...string) func() []string {
	return func() []string {
		var out []string
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			if !strings.HasPrefix(name, "OPENAI_") && !strings.HasPrefix(name, "CODEX_") && name != "HOME" {
				out = append(out, kv)
			}
		}
		return append(append(out, forgeTokens...), extra...)
	}
}

// user is a user's setup of Codex: a HOME whose .codex (CODEX_HOME) holds
// config.toml.
type user struct {
	home, codexHome string
}

func newUser(t *testing.T, config string) user {
	t.Helper()
	home := t.TempDir()
	u := user{home: home, codexHome: filepath.Join(home, ".codex")}
	if err := os.MkdirAll(u.codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	// No plugin marketplace sync (a git ls-remote to github.com) at start.
	config += "\n[features]\nplugins = false\n"
	if err := os.WriteFile(filepath.Join(u.codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return u
}

// login runs `codex login --with-api-key` with key on stdin, as the user
// would before converge runs.
func (u user) login(t *testing.T, bin, key string) {
	t.Helper()
	cmd := exec.Command(bin, "login", "--with-api-key")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + u.home, "CODEX_HOME=" + u.codexHome}
	cmd.Stdin = strings.NewReader(key + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex login --with-api-key: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(u.codexHome, "auth.json")); err != nil {
		t.Fatalf("codex login wrote no auth.json: %v", err)
	}
}

// agent is the backend as a user runs it: the default PassEnv, the
// model Codex's configuration gives (none: Codex's default), HOME and
// CODEX_HOME its own; env are more variables of converge's environment.
func (u user) agent(t *testing.T, bin string, env ...string) *Agent {
	t.Helper()
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary:  bin,
		Env:     []string{"HOME=" + u.home},
		Grace:   2 * time.Second,
		Environ: environ(append([]string{"CODEX_HOME=" + u.codexHome}, env...)...),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// loggedIn is a user whose config.toml points the built-in provider at
// url with openai_base_url and who ran codex login: the default setup
// of a user behind a gateway, with Codex's default model.
func loggedIn(t *testing.T, bin, url, key string) user {
	u := newUser(t, fmt.Sprintf("openai_base_url = %q\n", url+"/v1"))
	u.login(t, bin, key)
	return u
}

// authorization is the Authorization header every model request carried;
// it fails t when they differ or there were none.
func authorization(t *testing.T, srv *fakemodel.Server) string {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost {
			seen[r.Header.Get("Authorization")] = true
		}
	}
	if len(seen) != 1 {
		t.Errorf("Authorization headers: %v, want one", seen)
	}
	for h := range seen {
		return h
	}
	return ""
}

// TestAG_B1_RealCodex_FixEditsFileAndReportsStatusAndUsage: a fix run
// edits the file through a real tool call, in the workspace-write
// sandbox, without a forge token in its environment, and reports its
// record and the tokens fakemodel served — once as a user runs Codex
// (its default model, which offers its tools in an additional_tools item
// and runs commands through the freeform exec tool; openai_base_url and
// codex login), once with the model pinned (-m) and a custom provider.
func TestAG_B1_RealCodex_FixEditsFileAndReportsStatusAndUsage(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		agent func(t *testing.T, url string) *Agent
		// tool is the tool the shell calls went to; key the credential
		// the requests carried.
		tool, key string
	}{
		{"default model, openai_base_url and codex login", func(t *testing.T, url string) *Agent {
			return loggedIn(t, bin, url, "sk-login-default").agent(t, bin)
		}, "exec", "Bearer sk-login-default"},
		{"pinned model, custom provider", func(t *testing.T, url string) *Agent { return newAgent(t, bin, url) },
			"exec_command", "Bearer sk-fakemodel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fixEditsFile(t, c.agent, c.tool, c.key)
		})
	}
}

func fixEditsFile(t *testing.T, newA func(t *testing.T, url string) *Agent, tool, key string) {
	dir := repo(t, "greet.txt", "hello world\n")
	file := filepath.Join(dir, "greet.txt")
	// Outside: the tester's home (the agent gets a temporary one), unless
	// that is itself under a temporary directory Codex lets it write.
	home, err := os.UserHomeDir()
	if err != nil || strings.HasPrefix(home, os.TempDir()) || strings.HasPrefix(home, "/tmp") {
		home = ""
	}
	outside := filepath.Join(home, fmt.Sprintf("converge-sandbox-probe-%d", time.Now().UnixNano()))
	status, _ := json.Marshal(map[string]any{
		"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "greeting changed", "files_changed": []string{"greet.txt"},
	})
	script := fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Text: "Editing the file.", Calls: []fakemodel.ToolCall{
			{Shell: "sed -i 's/hello world/hello converge/' greet.txt"},
			{Shell: "env > env.dump"},
			// -s workspace-write: nothing outside the worktree (and the
			// temporary directories) is writable.
			{Shell: "touch " + outside + " || true"},
		}, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 50}},
		{Text: "Changed the greeting.\n" + string(status), Usage: fakemodel.Usage{InputTokens: 300, OutputTokens: 30}},
	}}
	srv, url := agenttest.Serve(t, script)

	a := newA(t, url)
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindFix, RunID: "r1", Round: 1, Workdir: dir, Budget: 3 * time.Minute,
		Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge, not the world."}},
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)
	for _, c := range srv.Calls() {
		if c.Name != tool {
			t.Errorf("call %s went to %s, want %s", c.ID, c.Name, tool)
		}
	}
	if got := authorization(t, srv); got != key {
		t.Errorf("Authorization = %q, want %q", got, key)
	}

	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello converge\n" {
		t.Errorf("greet.txt = %q, want %q\nstderr: %s", got, "hello converge\n", res.Stderr)
	}
	if res.Record.Status != agent.StatusComplete || res.Record.Summary != "greeting changed" ||
		!slices.Equal(res.Record.FilesChanged, []string{"greet.txt"}) {
		t.Errorf("record = %+v\nstderr: %s", res.Record, res.Stderr)
	}
	if f := agent.FailureOf(a.Name(), res, err); f != nil {
		t.Errorf("FailureOf = %v", f)
	}
	if _, err := os.Stat(outside); home != "" && err == nil {
		os.Remove(outside)
		t.Errorf("the agent wrote %s outside its worktree: -s workspace-write not in force", outside)
	}
	if want := served(srv, script); res.Usage != want || want.TotalTokens() < 600 || res.Usage.CostReported {
		t.Errorf("usage = %+v, want what fakemodel served: %+v, no cost", res.Usage, want)
	}

	agenttest.CheckEnvDump(t, filepath.Join(dir, "env.dump"), "GH_TOKEN", "CONVERGE_TOKEN")
}

// served is the tokens of every reply srv, answering from scripts,
// finished: each answered turn's Usage (a delayed turn's reply is taken
// as never finished), a side request's or one past a script's end the
// default.
func served(srv *fakemodel.Server, scripts ...fakemodel.Script) agent.Usage {
	var u agent.Usage
	for _, r := range srv.Requests() {
		fu := fakemodel.DefaultUsage
		switch {
		case r.Side:
		case r.Script < 0:
			continue
		case r.Turn < len(scripts[r.Script].Turns):
			turn := scripts[r.Script].Turns[r.Turn]
			if turn.Delay > 0 {
				continue
			}
			if turn.Usage != (fakemodel.Usage{}) {
				fu = turn.Usage
			}
		}
		u.Add(agent.Usage{InputTokens: int64(fu.InputTokens), CacheReadTokens: int64(fu.CacheReadTokens), OutputTokens: int64(fu.OutputTokens)})
	}
	return u
}

func TestRealCodex_ReviewAnswersWithArray(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	dir := repo(t, "a.go", "package a\n")
	answer := `[{"file":"a.go","line_range":[1,1],"summary":"package has no doc comment","verdict":"minor"}]`
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "edge-cases", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Shell: "cat a.go"}}},
		// -s read-only: a review that tries to write cannot.
		{Calls: []fakemodel.ToolCall{{Shell: "echo 'package b' > a.go || true"}}},
		{Text: "One point.\n" + answer},
	}})

	a := newAgent(t, bin, url)
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindReview, Workdir: dir, Angle: "edge-cases", AngleFocus: "Edge cases",
		Diff: "diff --git a/a.go b/a.go\n+package a\n", BaseRef: "origin/main", HeadSHA: "abc", Budget: 3 * time.Minute,
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)
	if res.Record.Status != agent.StatusComplete {
		t.Errorf("record = %+v\nstderr: %s", res.Record, res.Stderr)
	}
	if !strings.HasSuffix(strings.TrimSpace(res.Output), answer) {
		t.Errorf("output = %q, want it to end with the array", res.Output)
	}
	if r, ok := srv.Result(srv.Calls()[0].ID); !ok || !strings.Contains(r.Content, "package a") {
		t.Errorf("the shell call's result = %+v, want the file's text", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.go")); string(got) != "package a\n" {
		t.Errorf("a review run wrote a.go: %q", got)
	}
}

func TestRealCodex_NoStatusRecordIsUnparseable(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	dir := repo(t, "a.txt", "x\n")
	srv, url := agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "I did it, trust me."}}})

	a := newAgent(t, bin, url)
	res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: 2 * time.Minute,
		Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	agenttest.CheckWire(t, srv)
	if res.Record.Status != agent.StatusBlocked || res.Record.Reason != agent.ReasonUnparseable {
		t.Errorf("record = %+v, want blocked/unparseable (AG-T3)", res.Record)
	}
	if agent.FailureOf(a.Name(), res, err) == nil {
		t.Error("FailureOf = nil, want a run failure (AG-T4)")
	}
}

// A model that stops answering leaves the CLI waiting: at its budget the
// run is stopped, with everything it started (AG-T1), and reads as
// partial/budget-exceeded.
func TestRealCodex_StoppedAtBudget(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	agenttest.StoppedAtBudget(t, 3*time.Second, 3*time.Second+2*time.Second+20*time.Second, func(url, env string) agent.Agent {
		a := newAgent(t, bin, url)
		a.opts.Env = append(a.opts.Env, env)
		// The summary turn at the budget gets no answer either.
		a.opts.SummaryBudget = 3 * time.Second
		return a
	})
}

// At the budget Codex is stopped, then told to summarize: its session,
// resumed for one read-only turn, answers with the record (AG-T1).
func TestAG_T1_RealCodex_SummaryAtBudgetInTheRunsSession(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	// A try that misses the stalled turn on a loaded machine costs
	// another start of the CLI, a longer budget only idle time.
	agenttest.SummaryAtBudget(t, 20*time.Second, agenttest.Summary{
		File: "greet.txt",
		Edit: fakemodel.ToolCall{Shell: "printf 'hello converge\\n' > greet.txt"},
		Want: "hello converge\n",
		ReadOnly: func(r fakemodel.Request) string {
			// The resumed session's permissions: the run's, then the
			// summary turn's.
			body := string(r.Body)
			ro, ww := strings.LastIndex(body, "`sandbox_mode` is `read-only`"), strings.LastIndex(body, "`sandbox_mode` is `workspace-write`")
			if ro < 0 || ro < ww {
				return "its last sandbox instructions are not read-only"
			}
			return ""
		},
	}, func(url, env string) agent.Agent {
		a := newAgent(t, bin, url)
		a.opts.Env = append(a.opts.Env, env)
		// The summary turn answers at once when it comes; a loaded
		// machine can take more than the default 30 s to start the CLI
		// again and load the session.
		a.opts.SummaryBudget = agenttest.LoadedSummaryBudget
		return a
	})
}

// cliError is err's *agent.CLIError; it fails t when there is none or its
// kind is not kind.
func cliError(t *testing.T, err error, kind agent.FailKind) *agent.CLIError {
	t.Helper()
	var ce *agent.CLIError
	if !errors.As(err, &ce) || ce.Kind != kind {
		t.Fatalf("error = %v, want a %s *agent.CLIError", err, kind)
	}
	return ce
}

// TestAG_T4_RealCodex_AuthFailureInCodexsWords: a model endpoint that
// answers 401 ends the run as an authentication failure quoting Codex's
// message, ended by the watch or by Codex, long before the budget — for
// a fix run as a user runs Codex (openai_base_url and codex login; Codex
// tries a WebSocket first), and for a check run (agent.Check, read-only)
// through a custom provider.
func TestAG_T4_RealCodex_AuthFailureInCodexsWords(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	const refusal = "Incorrect API key provided: sk-bad."
	refuse := func(srv *fakemodel.Server) {
		srv.Refuse = func(string, *http.Request) (int, string) { return http.StatusUnauthorized, refusal }
	}
	check := func(t *testing.T, srv *fakemodel.Server, res agent.Result, err error, endpoint string) {
		t.Helper()
		ce := cliError(t, err, agent.FailAuth)
		if !strings.Contains(ce.Message, "401 Unauthorized") || !strings.Contains(ce.Message, refusal) || ce.Endpoint != endpoint {
			t.Errorf("error %+v, want Codex's words about the 401 and endpoint %s", ce, endpoint)
		}
		if !strings.Contains(err.Error(), "authentication failed") {
			t.Errorf("error = %v", err)
		}
		if res.Record.Reason != agent.ReasonCLIError {
			t.Errorf("record = %+v, want the run ended by the CLI's error, not the budget", res.Record)
		}
		if len(srv.Requests()) == 0 {
			t.Error("fakemodel got no request")
		}
	}
	t.Run("fix, default setup", func(t *testing.T) {
		t.Parallel()
		srv, url := agenttest.Serve(t)
		refuse(srv)
		a := loggedIn(t, bin, url, "sk-bad").agent(t, bin)
		res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: repo(t, "a.txt", "x\n"), Budget: 5 * time.Minute,
			Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
		check(t, srv, res, err, url+"/v1")
	})
	t.Run("check, custom provider", func(t *testing.T) {
		t.Parallel()
		srv, url := agenttest.Serve(t)
		refuse(srv)
		a := newAgent(t, bin, url)
		// Codex's own retries, as users have them.
		a.opts.Config = []string{"features.plugins=false"}
		cr, err := agent.Check(context.Background(), a, nil, 5*time.Minute)
		if cr.Usable {
			t.Error("a refused check is usable")
		}
		check(t, srv, agent.Result{Record: agent.StatusRecord{Reason: agent.ReasonCLIError}}, err, url+"/v1")
	})
}

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestAG_T4_RealCodex_UnreachableEndpointNamed: Codex retries a model
// endpoint it cannot connect to without end; converge stops the run at
// the retry bound as an endpoint failure naming the provider's base URL,
// as a user configured it or through converge's provider option.
func TestAG_T4_RealCodex_UnreachableEndpointNamed(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		agent func(t *testing.T, url string) *Agent
	}{
		{"openai_base_url", func(t *testing.T, url string) *Agent {
			u := newUser(t, fmt.Sprintf("openai_base_url = %q\n", url+"/v1"))
			return u.agent(t, bin, "CODEX_API_KEY=sk-unused")
		}},
		{"custom provider", func(t *testing.T, url string) *Agent { return newAgent(t, bin, url) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := closedPort(t)
			a := c.agent(t, url)
			a.opts.RetryBound = 5 * time.Second
			res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: repo(t, "a.txt", "x\n"), Budget: 5 * time.Minute,
				Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
			ce := cliError(t, err, agent.FailEndpoint)
			if ce.Endpoint != url+"/v1" || !strings.Contains(ce.Message, "Reconnecting") || !strings.Contains(err.Error(), url+"/v1") {
				t.Errorf("error %+v (%v), want Codex's retry naming %s/v1", ce, err, url)
			}
			if res.Record.Reason != agent.ReasonCLIError {
				t.Errorf("record = %+v, want the run ended at the retry bound", res.Record)
			}
		})
	}
}

// TestAG_B1_RealCodex_StoppedAtBudgetCountsServedTokens: a fix run whose
// model stalls after a tool call is stopped at its budget and asked to
// summarize in its session (AG-T1); its usage is every token fakemodel
// served — the completed responses of the stopped turn, which Codex
// printed no usage for, and the summary turn's when it answers — neither
// lost nor counted twice. As a user runs Codex: its default model,
// openai_base_url and codex login.
func TestAG_B1_RealCodex_StoppedAtBudgetCountsServedTokens(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	partial := `{"status":"partial","next_action":"finish the greeting","needs_extension_minutes":2,"summary":"s","files_changed":["greet.txt"]}`
	for _, c := range []struct {
		name    string
		summary fakemodel.Turn
		next    string
	}{
		{"the summary answers", fakemodel.Turn{Text: "Stopping.\n" + partial,
			Usage: fakemodel.Usage{InputTokens: 2000, OutputTokens: 20, CacheReadTokens: 700}}, "finish the greeting"},
		{"the summary gets no answer", fakemodel.Turn{Text: "never sent", Delay: time.Minute}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			scripts := []fakemodel.Script{
				{Match: agent.SummaryRequest, FromMatch: true, Turns: []fakemodel.Turn{c.summary}},
				{Match: "budget-finding", Turns: []fakemodel.Turn{
					{Text: "Editing.", Calls: []fakemodel.ToolCall{{Shell: "printf 'hello converge\\n' > greet.txt"}},
						Usage: fakemodel.Usage{InputTokens: 1200, OutputTokens: 120, CacheReadTokens: 300}},
					{Text: "never sent", Delay: agenttest.Stall},
				}},
			}
			var (
				srv *fakemodel.Server
				res agent.Result
			)
			agenttest.UntilStalled(t, 20*time.Second, func(budget time.Duration) bool {
				var url string
				srv, url = agenttest.Serve(t, scripts...)
				a := loggedIn(t, bin, url, "sk-budget").agent(t, bin)
				a.opts.SummaryBudget = 20 * time.Second
				var err error
				res, err = a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: repo(t, "greet.txt", "hello world\n"), Budget: budget,
					Findings: []agent.Finding{{ID: "budget-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge."}}})
				if err != nil {
					t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
				}
				return slices.ContainsFunc(srv.Requests(), func(r fakemodel.Request) bool { return r.Script == 1 && r.Turn == 1 })
			})
			agenttest.CheckWire(t, srv)
			if res.Record.NextAction != c.next {
				t.Errorf("record = %+v, want next action %q", res.Record, c.next)
			}
			want := served(srv, scripts...)
			if res.Usage != want || want.TotalTokens() < 1620 {
				t.Errorf("usage = %+v, want what fakemodel served: %+v", res.Usage, want)
			}
		})
	}
}

// TestAG_B1_RealCodex_ProvidersAsUsersConfigureThem: each way a user gives
// Codex its provider and key works through converge, proven by a check
// run (agent.Check) whose request carried that key: a `codex login
// --with-api-key` in CODEX_HOME (no key in the environment); openai_base_url
// in config.toml with CODEX_API_KEY; a custom provider in config.toml whose
// env_key (MYCO_LLM_KEY) converge passes without being told.
func TestAG_B1_RealCodex_ProvidersAsUsersConfigureThem(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		agent func(t *testing.T, url string) *Agent
		key   string
	}{
		{"codex login --with-api-key", func(t *testing.T, url string) *Agent {
			return loggedIn(t, bin, url, "sk-from-login").agent(t, bin)
		}, "Bearer sk-from-login"},
		{"openai_base_url and CODEX_API_KEY", func(t *testing.T, url string) *Agent {
			u := newUser(t, fmt.Sprintf("openai_base_url = %q\n", url+"/v1"))
			return u.agent(t, bin, "CODEX_API_KEY=sk-from-env")
		}, "Bearer sk-from-env"},
		{"custom provider with env_key", func(t *testing.T, url string) *Agent {
			u := newUser(t, fmt.Sprintf(`model = "myco-large"
model_provider = "myco"

[model_providers.myco]
name = "MyCo"
base_url = %q
env_key = "MYCO_LLM_KEY"
wire_api = "responses"
`, url+"/v1"))
			return u.agent(t, bin, "MYCO_LLM_KEY=myco-key")
		}, "Bearer myco-key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, url := agenttest.Serve(t, fakemodel.Script{Match: agent.CheckPrompt, Turns: []fakemodel.Turn{{Text: "OK"}}})
			a := c.agent(t, url)
			cr, err := agent.Check(context.Background(), a, nil, 3*time.Minute)
			if err != nil || !cr.Usable || cr.Answer != "OK" {
				t.Fatalf("check: %+v, %v", cr, err)
			}
			agenttest.CheckWire(t, srv)
			if got := authorization(t, srv); got != c.key {
				t.Errorf("Authorization = %q, want %q", got, c.key)
			}
			if want := served(srv, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "OK"}}}); cr.Usage != want {
				t.Errorf("usage = %+v, want %+v", cr.Usage, want)
			}
		})
	}
}
