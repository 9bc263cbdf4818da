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
	"github.com/convergeloop/converge/internal/agent/fakemodel"
)

// The real OpenCode CLI against fakemodel, through its anthropic provider
// with a local base URL. The CLI comes from CONVERGE_OPENCODE_BIN or PATH;
// without it the tests skip, except under CI=true.

func realCLI(t *testing.T) string {
	return agenttest.RealCLI(t, BinaryEnv, "opencode", "opencode-ai")
}

func newAgent(t *testing.T, bin, url string) *Agent {
	t.Helper()
	a, err := New(Options{
		Config: map[string]any{
			"provider": map[string]any{"anthropic": map[string]any{"options": map[string]any{
				"baseURL": url + "/v1", "apiKey": "sk-ant-fakemodel",
			}}},
			"small_model": "anthropic/claude-haiku-4-5",
		},
		CLIOptions: agent.CLIOptions{
			Binary:  bin,
			Model:   "anthropic/claude-sonnet-4-5",
			PassEnv: []string{},
			Env: []string{
				"HOME=" + t.TempDir(),
				// No network here: don't wait for the model catalogue.
				"OPENCODE_DISABLE_MODELS_FETCH=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
				// Nothing a test needs, and slow to start.
				"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
				"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
				"OPENCODE_DISABLE_CLAUDE_CODE=1",
				"OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER=1",
			},
			ExtraArgs: []string{"--pure"},
			// converge's environment holds a forge token; the run must not.
			Environ: func() []string { return append(os.Environ(), "GH_TOKEN=ghp_"+strings.Repeat("x", 36)) },
			Grace:   2 * time.Second,
		}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRealOpenCode_FixEditsFileAndReportsStatusAndUsage(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
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

	a := newAgent(t, bin, url)
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
	u := res.Usage
	if u.InputTokens != 600 || u.OutputTokens != 60 || u.Turns != 3 || !u.CostReported {
		t.Errorf("usage = %+v", u)
	}
	agenttest.CheckEnvDump(t, filepath.Join(dir, "env.dump"), "GH_TOKEN")
}

func TestRealOpenCode_ReviewAnswersWithArray(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
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
	t.Parallel()
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
// the record (AG-T1).
func TestAG_T1_RealOpenCode_SummaryAtBudgetInTheRunsSession(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	agenttest.SummaryAtBudget(t, 15*time.Second, agenttest.Summary{
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
	}, func(url, env string) agent.Agent {
		a := newAgent(t, bin, url)
		a.opts.Env = append(a.opts.Env, env)
		return a
	})
}
