package claude

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
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// The real Claude Code CLI against fakemodel (DESIGN.md, testing layer 4).
// The CLI comes from CONVERGE_CLAUDE_BIN or PATH (.ci/run installs a pinned
// version); without it the tests skip, except under CI=true, where they
// fail: CI must run them.

func realCLI(t *testing.T) string {
	return agenttest.RealCLI(t, BinaryEnv, "claude", "@anthropic-ai/claude-code")
}

func repo(t *testing.T, name, content string) string {
	return agenttest.Repo(t, map[string]string{name: content})
}

func newAgent(t *testing.T, bin, url string) *Agent {
	t.Helper()
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary: bin,
		Model:  "claude-fakemodel",
		// Nothing from the host's environment reaches the run but the
		// scrubbed basics; the model is fakemodel.
		PassEnv: []string{},
		Env: []string{
			"ANTHROPIC_BASE_URL=" + url,
			"ANTHROPIC_API_KEY=sk-ant-fakemodel",
			"HOME=" + t.TempDir(),
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

func statusLine(t *testing.T, rec map[string]any) string {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The fix runs twice: with the model pinned, and with the CLI's default
// model as a user runs it (no --model, no ANTHROPIC_MODEL).
func TestRealClaude_FixEditsFileAndReportsStatusAndUsage(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	for _, model := range []string{"claude-fakemodel", ""} {
		name := "pinned"
		if model == "" {
			name = "default model"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			realFix(t, bin, model)
		})
	}
}

func realFix(t *testing.T, bin, model string) {
	// A forge token in converge's environment (see newAgent) must not
	// reach the agent (SEC-2): the script dumps the agent's environment.
	dir := repo(t, "greet.txt", "hello world\n")
	file := filepath.Join(dir, "greet.txt")
	dump := filepath.Join(dir, "env.dump")
	status := statusLine(t, map[string]any{
		"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "greeting changed", "files_changed": []string{"greet.txt"},
		"implementer_status": "DONE",
	})
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Text: "Reading the file.", Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": file}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		{Calls: []fakemodel.ToolCall{
			{Name: "Edit", Input: map[string]any{"file_path": file, "old_string": "hello world", "new_string": "hello converge"}},
			{Shell: "env > " + dump},
		}, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 50}},
		{Text: "Changed the greeting.\n" + status, Usage: fakemodel.Usage{InputTokens: 300, OutputTokens: 30}},
	}})

	a := newAgent(t, bin, url)
	a.opts.Model = model
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindFix, RunID: "r1", Round: 1, Workdir: dir, Budget: 3 * time.Minute,
		Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge, not the world."}},
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)

	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello converge\n" {
		t.Errorf("greet.txt = %q, want %q", got, "hello converge\n")
	}
	if res.Record.Status != agent.StatusComplete || res.Record.Summary != "greeting changed" ||
		!slices.Equal(res.Record.FilesChanged, []string{"greet.txt"}) {
		t.Errorf("record = %+v", res.Record)
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Status != agent.StatusComplete {
		t.Errorf("outcomes = %+v", res.Outcomes)
	}
	if f := agent.FailureOf(a.Name(), res, err); f != nil {
		t.Errorf("FailureOf = %v", f)
	}
	u := res.Usage
	// Token figures are fakemodel's, summed over the three turns; the
	// turn count is Claude Code's own (it counts more than requests).
	if u.InputTokens != 600 || u.OutputTokens != 60 || u.CacheReadTokens != 50 || u.Turns < 3 {
		t.Errorf("usage = %+v, want input 600, output 60, cache read 50, at least 3 turns", u)
	}
	if !u.CostReported || u.CostUSD <= 0 {
		t.Errorf("usage cost = %v (reported %v), want a positive cost", u.CostUSD, u.CostReported)
	}

	agenttest.CheckEnvDump(t, dump, "GH_TOKEN", "CONVERGE_TOKEN")

	// The main conversation's first request carried the prompt, with the
	// finding quoted as data and the tools the backend allowed.
	var first *fakemodel.Request
	for _, r := range srv.Requests() {
		if !r.Side && r.API == "anthropic" {
			first = &r
			break
		}
	}
	if first == nil {
		t.Fatal("no main-conversation request")
	}
	if !strings.Contains(string(first.Body), "<<<REVIEW-COMMENT") {
		t.Error("the prompt does not quote the finding as data")
	}
	tools := first.Tools
	for _, want := range DefaultTools {
		if !slices.Contains(tools, want) {
			t.Errorf("tools offered to the model %v lack %s", tools, want)
		}
	}
	// Every model request asked for the pinned model, or for one the CLI
	// chose itself.
	for _, r := range srv.Requests() {
		var body struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request body: %v", err)
		}
		if (model != "" && body.Model != model) || (model == "" && (body.Model == "" || body.Model == "claude-fakemodel")) {
			t.Errorf("request %s asked for model %q (pinned %q)", r.Path, body.Model, model)
		}
	}
}

func TestRealClaude_ReviewAnswersWithArray(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	dir := repo(t, "a.go", "package a\n")
	answer := `[{"file":"a.go","line_range":[1,1],"summary":"package has no doc comment","verdict":"minor"}]`
	srv, url := agenttest.Serve(t, fakemodel.Script{Match: "edge-cases", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": filepath.Join(dir, "a.go")}}}},
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
		t.Errorf("record = %+v", res.Record)
	}
	if !strings.HasSuffix(strings.TrimSpace(res.Output), answer) {
		t.Errorf("output = %q, want it to end with the array", res.Output)
	}
	// A review run is offered only the read-only tools.
	for _, r := range srv.Requests() {
		if r.Side || r.API != "anthropic" {
			continue
		}
		for _, banned := range []string{`"name":"Edit"`, `"name":"Write"`, `"name":"Bash"`} {
			if strings.Contains(string(r.Body), banned) {
				t.Errorf("review request offers %s", banned)
			}
		}
	}
}

func TestRealClaude_NoStatusRecordIsUnparseable(t *testing.T) {
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
	if res.Output != "I did it, trust me." {
		t.Errorf("output = %q", res.Output)
	}
}

// A model that stops answering leaves the CLI waiting: at its budget the
// run is stopped, with everything it started (AG-T1), and reads as
// partial/budget-exceeded.
func TestRealClaude_StoppedAtBudget(t *testing.T) {
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

// The local review runs its angles at once (PR-S4); one fakemodel answers
// each from its own script, told apart by the angle in the prompt.
func TestRealClaude_ParallelReviewAnglesGetTheirOwnScripts(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	dir := repo(t, "a.go", "package a\n")
	angles := []string{"correctness-leak", "edge-cases", "test-quality"}
	var scripts []fakemodel.Script
	for i, angle := range angles {
		answer := "[]"
		if i == 1 {
			answer = `[{"file":"a.go","line_range":[1,1],"summary":"empty package","verdict":"structural"}]`
		}
		scripts = append(scripts, fakemodel.Script{Match: fmt.Sprintf("angle: %q", angle), Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": filepath.Join(dir, "a.go")}}}},
			{Text: angle + " done.\n" + answer},
		}})
	}
	srv, url := agenttest.Serve(t, scripts...)

	a := newAgent(t, bin, url)
	outputs := make([]string, len(angles))
	errs := make(chan error, len(angles))
	for i, angle := range angles {
		go func() {
			res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindReview, Workdir: dir, Angle: angle,
				Diff: "diff --git a/a.go b/a.go\n+package a\n", Budget: 3 * time.Minute})
			if err == nil && res.Record.Status != agent.StatusComplete {
				err = fmt.Errorf("%s: record %+v", angle, res.Record)
			}
			outputs[i] = res.Output
			errs <- err
		}()
	}
	for range angles {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	agenttest.CheckWire(t, srv)
	for i, angle := range angles {
		if !strings.HasPrefix(outputs[i], angle+" done.") {
			t.Errorf("angle %s got %q", angle, outputs[i])
		}
	}
	if !strings.HasSuffix(outputs[1], `"verdict":"structural"}]`) {
		t.Errorf("edge-cases output = %q", outputs[1])
	}
}

// At the budget Claude Code is stopped, then told to summarize: its
// session, resumed for one read-only turn, answers with the record
// (AG-T1).
func TestAG_T1_RealClaude_SummaryAtBudgetInTheRunsSession(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	// A try that misses the stalled turn on a loaded machine costs
	// another start of the CLI, a longer budget only idle time.
	agenttest.SummaryAtBudget(t, 20*time.Second, agenttest.Summary{
		File: "greet.txt",
		Edit: fakemodel.ToolCall{Shell: "printf 'hello converge\\n' > greet.txt"},
		Want: "hello converge\n",
		ReadOnly: func(r fakemodel.Request) string {
			// Claude Code may add a placeholder of its own; none of
			// the tools that edit may be offered.
			for _, tool := range r.Tools {
				if slices.Contains(DefaultTools, tool) && !slices.Contains(ReviewTools, tool) {
					return fmt.Sprintf("it is offered %s of %v", tool, r.Tools)
				}
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
