package codex

import (
	"context"
	"encoding/json"
	"fmt"
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

// The real Codex CLI against fakemodel (DESIGN.md, testing layer 4), through
// a custom model provider. The CLI comes from CONVERGE_CODEX_BIN or PATH
// (.ci/run installs a pinned version); without it the tests skip, except
// under CI=true, where they fail: CI must run them.

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

func TestRealCodex_FixEditsFileAndReportsStatusAndUsage(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()

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
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Text: "Editing the file.", Calls: []fakemodel.ToolCall{
			{Shell: "sed -i 's/hello world/hello converge/' greet.txt"},
			{Shell: "env > env.dump"},
			// -s workspace-write: nothing outside the worktree (and the
			// temporary directories) is writable.
			{Shell: "touch " + outside + " || true"},
		}, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 50}},
		{Text: "Changed the greeting.\n" + string(status), Usage: fakemodel.Usage{InputTokens: 300, OutputTokens: 30}},
	}})

	a := newAgent(t, bin, url)
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindFix, RunID: "r1", Round: 1, Workdir: dir, Budget: 3 * time.Minute,
		Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge, not the world."}},
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)
	for _, c := range srv.Calls() {
		if c.Name != "exec_command" && c.Name != "shell_command" && c.Name != "shell" {
			t.Errorf("call %s went to %s, not a shell tool", c.ID, c.Name)
		}
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
	u := res.Usage
	if u.InputTokens != 500 || u.CacheReadTokens != 50 || u.OutputTokens != 50 || u.CostReported {
		t.Errorf("usage = %+v, want input 500 (+50 cached), output 50, no cost", u)
	}

	agenttest.CheckEnvDump(t, filepath.Join(dir, "env.dump"), "GH_TOKEN", "CONVERGE_TOKEN")
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
	agenttest.SummaryAtBudget(t, 3*time.Second, agenttest.Summary{
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
		return a
	})
}
