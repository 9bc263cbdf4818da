package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// The real OpenCode CLI against fakemodel, set up as a user sets it up:
// a HOME whose global OpenCode config (~/.config/opencode/opencode.json)
// points a provider at fakemodel, and the provider's key in converge's
// environment (or kept by opencode auth login). The CLI comes from
// CONVERGE_OPENCODE_BIN or PATH; without it the tests skip, except under
// CI=true.

func realCLI(t *testing.T) string {
	return agenttest.RealCLI(t, BinaryEnv, "opencode", "opencode-ai")
}

// forgeToken is in converge's environment in every test, as GH_TOKEN and
// as GITHUB_TOKEN (GitHub Copilot's key variable): no run may get it.
var forgeToken = "ghp_" + strings.Repeat("x", 36)

// user is a user's machine for one test: a HOME, and converge's
// environment — PATH, HOME and what the test sets, nothing of the
// machine running the test (no key of its own may reach OpenCode).
type user struct {
	home    string
	environ []string
}

func newUser(t *testing.T) *user {
	t.Helper()
	home := t.TempDir()
	startedBefore(t, home)
	return &user{home: home, environ: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"GH_TOKEN=" + forgeToken, "GITHUB_TOKEN=" + forgeToken,
		// No network here: OpenCode's own switch, which a user may set
		// too, so it passes.
		"OPENCODE_DISABLE_MODELS_FETCH=1",
	}}
}

// startedBefore makes home a machine where OpenCode has run before. At
// its first start OpenCode installs its plugin package into its global
// config directory from the npm registry, in the background, and does
// so again while the directory has no node_modules or its package.json
// names a package its package-lock.json does not. Every test's HOME is
// new: each run downloaded the package (there is no network to count on
// here) and paid seconds of CPU for it.
func startedBefore(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"package.json":      `{"dependencies": {"@opencode-ai/plugin": "*"}}`,
		"package-lock.json": `{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// config writes the user's global OpenCode config.
func (u *user) config(t *testing.T, cfg string) {
	t.Helper()
	dir := filepath.Join(u.home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (u *user) setenv(kv ...string) { u.environ = append(u.environ, kv...) }

// agent is converge's opencode backend on u's machine; model "" leaves
// the choice to OpenCode.
func (u *user) agent(t *testing.T, bin, model string) *Agent {
	t.Helper()
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary: bin,
		Model:  model,
		Env: []string{
			// Nothing a test needs, and slow to start.
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
			"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
			"OPENCODE_DISABLE_CLAUDE_CODE=1",
			"OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER=1",
		},
		ExtraArgs: []string{"--pure"},
		Environ:   func() []string { return u.environ },
		Getenv:    func(string) string { return "" },
		Grace:     2 * time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// anthropicAt is a user's config whose anthropic provider talks to url.
func anthropicAt(url string) string {
	return `{
  "$schema": "https://opencode.ai/config.json",
  // fakemodel speaks the Messages API
  "provider": {"anthropic": {"options": {"baseURL": "` + url + `/v1"}}},
}`
}

// fakeKey is the key the user's environment holds.
const fakeKey = "sk-ant-fakemodel-key"

// newAgent is OpenCode as most tests run it: the anthropic provider of
// the user's config with the key in the environment, the model pinned.
func newAgent(t *testing.T, bin, url string) *Agent {
	t.Helper()
	u := newUser(t)
	u.config(t, anthropicAt(url))
	u.setenv("ANTHROPIC_API_KEY=" + fakeKey)
	return u.agent(t, bin, "anthropic/claude-sonnet-4-5")
}

// modelsAsked are the models fakemodel's scripted requests named.
func modelsAsked(srv *fakemodel.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		var body struct {
			Model string `json:"model"`
		}
		if r.Side || json.Unmarshal(r.Body, &body) != nil || slices.Contains(out, body.Model) {
			continue
		}
		out = append(out, body.Model)
	}
	return out
}

// TestAG_B1_RealOpenCode_FixWithTheDefaultModel: a fix run with no model
// pinned, as a user runs it — OpenCode chooses from the user's config
// (its anthropic provider, the key from the environment) — edits the
// file, reports its record and the usage of every step.
func TestAG_B1_RealOpenCode_FixWithTheDefaultModel(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv := fixRun(t, bin, "")
	if m := modelsAsked(srv); len(m) != 1 || m[0] == "" || m[0] == "claude-sonnet-4-5" {
		t.Errorf("models asked %q, want OpenCode's own choice", m)
	}
}

// TestAG_B1_RealOpenCode_FixWithAPinnedModel: the same run with the
// model pinned (-m provider/model) asks for that model.
func TestAG_B1_RealOpenCode_FixWithAPinnedModel(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	srv := fixRun(t, bin, "anthropic/claude-sonnet-4-5")
	if m := modelsAsked(srv); !slices.Equal(m, []string{"claude-sonnet-4-5"}) {
		t.Errorf("models asked %q, want the pinned claude-sonnet-4-5", m)
	}
}

func fixRun(t *testing.T, bin, model string) *fakemodel.Server {
	t.Helper()
	dir := agenttest.Repo(t, map[string]string{"greet.txt": "hello world\n"})
	file := filepath.Join(dir, "greet.txt")
	status, _ := json.Marshal(map[string]any{
		"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "greeting changed", "files_changed": []string{"greet.txt"},
	})
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "read", Input: map[string]any{"filePath": file}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		{Calls: []fakemodel.ToolCall{
			{Name: "edit", Input: map[string]any{"filePath": file, "oldString": "hello world", "newString": "hello converge"}},
			{Shell: "env > env.dump"},
		}, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20}},
		{Text: "Changed the greeting.\n" + string(status), Usage: fakemodel.Usage{InputTokens: 300, OutputTokens: 30}},
	}})

	u := newUser(t)
	u.config(t, anthropicAt(url))
	u.setenv("ANTHROPIC_API_KEY=" + fakeKey)
	a := u.agent(t, bin, model)
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindFix, Workdir: dir, Budget: 5 * time.Minute,
		Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge."}},
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)
	got, _ := os.ReadFile(file)
	if string(got) != "hello converge\n" {
		t.Errorf("greet.txt = %q\nstderr: %s", got, res.Stderr)
	}
	if res.Record.Status != agent.StatusComplete || !slices.Equal(res.Record.FilesChanged, []string{"greet.txt"}) {
		t.Errorf("record = %+v\noutput: %s\nstderr: %s", res.Record, res.Output, res.Stderr)
	}
	u2 := res.Usage
	if u2.InputTokens != 600 || u2.OutputTokens != 60 || u2.Turns != 3 || !u2.CostReported {
		t.Errorf("usage = %+v", u2)
	}
	for _, r := range srv.Requests() {
		if k := r.Header.Get("X-Api-Key"); k != fakeKey {
			t.Errorf("request %s carried key %q, want the environment's", r.Path, k)
		}
	}
	agenttest.CheckEnvDump(t, filepath.Join(dir, "env.dump"), "GH_TOKEN", "GITHUB_TOKEN")
	return srv
}

func TestRealOpenCode_ReviewAnswersWithArray(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	dir := agenttest.Repo(t, map[string]string{"a.go": "package a\n"})
	answer := `[]`
	file := filepath.Join(dir, "a.go")
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "edge-cases", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "read", Input: map[string]any{"filePath": file}}}},
		// A review that tries to edit is refused (permission edit: deny).
		{Calls: []fakemodel.ToolCall{{Name: "edit", Input: map[string]any{"filePath": file, "oldString": "package a", "newString": "package b"}}}},
		{Text: "Nothing to report.\n" + answer},
	}})
	a := newAgent(t, bin, url)
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindReview, Workdir: dir, Angle: "edge-cases", Diff: "diff --git a/a.go b/a.go\n", Budget: 5 * time.Minute,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, e := range srv.Errors() {
		t.Errorf("fakemodel: %s", e)
	}
	for _, c := range srv.Unanswered() {
		t.Errorf("tool call %s %s got no tool result", c.ID, c.Name)
	}
	if res.Record.Status != agent.StatusComplete || !strings.HasSuffix(res.Output, answer) {
		t.Errorf("record = %+v, output %q\nstderr: %s", res.Record, res.Output, res.Stderr)
	}
	if got, _ := os.ReadFile(file); string(got) != "package a\n" {
		t.Errorf("a review run edited a.go: %q", got)
	}
	// Denied tools are not offered; a call to one is answered as invalid.
	for _, c := range srv.Calls() {
		if r, _ := srv.Result(c.ID); c.Name == "edit" && !r.IsError && !strings.Contains(r.Content, "unavailable tool") {
			t.Errorf("the review's edit was not refused: %+v", r)
		}
	}
	for _, r := range srv.Requests() {
		for _, banned := range []string{`"name":"edit"`, `"name":"write"`, `"name":"bash"`} {
			if !r.Side && strings.Contains(string(r.Body), banned) {
				t.Errorf("a review request offers %s", banned)
			}
		}
	}
}

func TestRealOpenCode_StoppedAtBudget(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	agenttest.StoppedAtBudget(t, 5*time.Second, 0, func(url, env string) agent.Agent {
		a := newAgent(t, bin, url)
		a.opts.Env = append(a.opts.Env, env)
		// The summary turn at the budget gets no answer either.
		a.opts.SummaryBudget = 3 * time.Second
		return a
	})
}

// At the budget OpenCode is stopped, then told to summarize: its session,
// continued for one turn that may not edit or run commands, answers with
// the record (AG-T1). The run's usage (AG-B1) is exactly what fakemodel
// served: the edit's step and the summary turn, cache reads included.
func TestAG_T1_AG_B1_RealOpenCode_SummaryAtBudgetInTheRunsSessionCountsServedTokens(t *testing.T) {
	bin := realCLI(t)
	agenttest.Parallel(t)
	// A minute: under make test's load OpenCode never reached the
	// stalled turn in 15 or 30 s, and each try costs a start.
	agenttest.SummaryAtBudget(t, time.Minute, agenttest.Summary{
		File: "greet.txt",
		Edit: fakemodel.ToolCall{Shell: "printf 'hello converge\\n' > greet.txt"},
		Want: "hello converge\n",
		ReadOnly: func(r fakemodel.Request) string {
			for _, tool := range r.Tools {
				if slices.Contains([]string{"bash", "edit", "write", "patch", "apply_patch"}, tool) {
					return "it is offered " + tool
				}
			}
			return ""
		},
		Usage: func(t *testing.T, res agent.Result, srv *fakemodel.Server) {
			// Every reply fakemodel sent but the title's (a side
			// request, whose tokens OpenCode reports in no event).
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
				got.CacheReadTokens != served.CacheReadTokens || got.Turns != served.Turns || served.Turns != len(agenttest.SummaryUsage) {
				t.Errorf("usage = %+v, want what fakemodel served: %+v", got, served)
			}
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
