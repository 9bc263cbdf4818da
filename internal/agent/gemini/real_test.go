package gemini

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

// The real Gemini CLI against fakemodel's Gemini API (GOOGLE_GEMINI_BASE_URL,
// API-key auth chosen in its settings). The CLI comes from
// CONVERGE_GEMINI_BIN or PATH; without it the tests skip, except under
// CI=true.

func realCLI(t *testing.T) string {
	return agenttest.RealCLI(t, BinaryEnv, "gemini", "@google/gemini-cli")
}

func newAgent(t *testing.T, bin, url string) *Agent {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary:  bin,
		Model:   "gemini-fakemodel",
		PassEnv: []string{},
		Env:     []string{"HOME=" + home, "GEMINI_API_KEY=fakemodel", "GOOGLE_GEMINI_BASE_URL=" + url},
		Grace:   2 * time.Second,
		// converge's environment holds a forge token; the run must not.
		Environ: func() []string { return append(os.Environ(), "GH_TOKEN=ghp_"+strings.Repeat("x", 36)) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAG_B1_RealGemini_FixEditsFileAndReportsStatusAndUsage: a fix run
// edits through the CLI's tools, reports its record, keeps the forge
// token out of the agent's environment and counts every token fakemodel
// served. It runs once with the CLI's default model, as a user would
// (auto: the router's classifier, answered with JSON, picks Flash at
// once), and once pinned with -m.
func TestAG_B1_RealGemini_FixEditsFileAndReportsStatusAndUsage(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	for _, model := range []string{"", "gemini-fakemodel"} {
		name := "default-model"
		if model != "" {
			name = "pinned"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fixEditsFile(t, bin, model)
		})
	}
}

func fixEditsFile(t *testing.T, bin, model string) {
	dir := agenttest.Repo(t, map[string]string{"greet.txt": "hello world\n"})
	file := filepath.Join(dir, "greet.txt")
	status, _ := json.Marshal(map[string]any{
		"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "greeting changed", "files_changed": []string{"greet.txt"},
	})
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "read_file", Input: map[string]any{"file_path": file}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Editing.", Calls: []fakemodel.ToolCall{
			{Name: "replace", Input: map[string]any{"file_path": file, "old_string": "hello world", "new_string": "hello converge",
				"instruction": "Greet converge instead of the world, as the finding asks."}},
			{Shell: "env > env.dump"},
		}, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 50}},
		{Text: "Changed the greeting.\n" + string(status), Usage: fakemodel.Usage{InputTokens: 300, OutputTokens: 30}},
	}})

	a := newAgent(t, bin, url)
	a.opts.Model = model
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
	// Every token served, the router's classifier included.
	served := srv.Served()
	if u := res.Usage; u != usageOf(served) || u.CostReported {
		t.Errorf("usage = %+v, want what fakemodel served: %+v, no cost", u, served)
	}
	var side, main []fakemodel.Request
	for _, r := range srv.Requests() {
		if r.Side {
			side = append(side, r)
		} else {
			main = append(main, r)
		}
	}
	if model != "" {
		if len(side) != 0 || main[0].Path != "/v1beta/models/"+model+":streamGenerateContent" {
			t.Errorf("pinned: side requests %d, first request %s", len(side), main[0].Path)
		}
	} else {
		// One classifier request, answered at once: the CLI did not
		// retry it, and the task went to the model it routed to.
		if len(side) != 1 || !strings.Contains(string(side[0].Body), "complexity_score") {
			t.Fatalf("default model: %d side requests, want the router's one: %+v", len(side), side)
		}
		if !strings.Contains(main[0].Path, "flash") {
			t.Errorf("default model: the task went to %s, not the Flash model the router chose", main[0].Path)
		}
	}
	if served.InputTokens+served.CacheReadTokens < 650 {
		t.Errorf("fakemodel served %+v, less than the script's turns", served)
	}
	agenttest.CheckEnvDump(t, filepath.Join(dir, "env.dump"), "GH_TOKEN")
}

func TestAG_B1_RealGemini_ReviewAnswersWithArrayAndCannotEdit(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	dir := agenttest.Repo(t, map[string]string{"a.go": "package a\n"})
	file := filepath.Join(dir, "a.go")
	answer := `[{"file":"a.go","line_range":[1,1],"summary":"no doc comment","verdict":"minor"}]`
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "edge-cases", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "read_file", Input: map[string]any{"file_path": file}}}},
		// A review that tries to edit is refused (plan mode).
		{Calls: []fakemodel.ToolCall{{Name: "replace", Input: map[string]any{"file_path": file,
			"old_string": "package a", "new_string": "package b", "instruction": "Rename the package."}}}},
		{Text: "One point.\n" + answer},
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
	for _, c := range srv.Calls() {
		if r, _ := srv.Result(c.ID); c.Name == "replace" && !r.IsError {
			t.Errorf("the review's replace was not refused: %+v", r)
		}
	}
	for _, r := range srv.Requests() {
		if !r.Side && strings.Contains(string(r.Body), `"name":"run_shell_command"`) {
			t.Error("a review request offers run_shell_command")
		}
	}
}

func TestAG_T1_RealGemini_StoppedAtBudget(t *testing.T) {
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

// At the budget Gemini CLI is stopped, then told to summarize: its
// session, resumed for one turn in plan mode, answers with the record
// (AG-T1).
func TestAG_T1_RealGemini_SummaryAtBudgetInTheRunsSession(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	// Half a minute: a try that misses the stalled turn on a loaded
	// machine costs another start of the CLI (seconds of CPU), a longer
	// budget only idle time.
	agenttest.SummaryAtBudget(t, 30*time.Second, agenttest.Summary{
		File: "greet.txt",
		Edit: fakemodel.ToolCall{Shell: "printf 'hello converge\\n' > greet.txt"},
		Want: "hello converge\n",
		ReadOnly: func(r fakemodel.Request) string {
			names := r.Tools
			// Plan mode offers no shell; its write tools may write only
			// plans under Gemini CLI's own directory (its plan policy).
			if slices.Contains(names, "run_shell_command") || !slices.Contains(names, "exit_plan_mode") {
				return "it is not in plan mode: " + strings.Join(names, ",")
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
