package claude

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/agent/fakemodel"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/recap"
)

// TestRealClaude_JudgeVerdictsParsedAndValidated: the recap judge (PR-G2)
// and the classifier judge (PR-S5) run on the real Claude Code CLI. The
// model reads a file, then answers; each judge parses and validates the
// verdict from the CLI's final message, and the model was offered only
// the read-only tools (a judge edits nothing).
func TestRealClaude_JudgeVerdictsParsedAndValidated(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	// serve scripts a read of a.go, then the verdict line.
	serve := func(t *testing.T, dir string, answer map[string]any) (*fakemodel.Server, string) {
		line, err := json.Marshal(answer)
		if err != nil {
			t.Fatal(err)
		}
		return agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{
			{Text: "Reading the change.", Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": filepath.Join(dir, "a.go")}}}},
			{Text: "Judged.\n" + string(line)},
		}})
	}
	record := map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0, "summary": "judged", "files_changed": []string{}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{k: v}
		for rk, rv := range record {
			m[rk] = rv
		}
		return m
	}

	t.Run("recap", func(t *testing.T) {
		t.Parallel()
		dir := repo(t, "a.go", "package a\n")
		srv, url := serve(t, dir, with("recap", map[string]any{
			"verdict": recap.RevertAndShip, "revert_rounds": []int{2}, "reason": "round 2 redesigned the API, out of scope"}))
		j := &recap.Judge{Agent: newAgent(t, bin, url), Workdir: dir, Budget: 3 * time.Minute}
		v, err := j.Run(context.Background(), recap.Input{PR: "o/r#1", Title: "Add a", RoundCount: 2, Rounds: []recap.Round{
			{N: 1, Commit: "1111111111111111111111111111111111111111"},
			{N: 2, Commit: "2222222222222222222222222222222222222222"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Valid || v.Decision != recap.RevertAndShip || !slices.Equal(v.RevertRounds, []int{2}) || v.Agent != "claude" {
			t.Errorf("verdict = %+v, want a valid REVERT-AND-SHIP of round 2", v)
		}
		agenttest.CheckWire(t, srv)
		checkReadOnlyTools(t, srv)
	})

	t.Run("classifier", func(t *testing.T) {
		t.Parallel()
		dir := repo(t, "a.go", "package a\n")
		srv, url := serve(t, dir, with("verdicts", []map[string]any{
			{"id": "c2", "verdict": "structural", "reason": "changes behaviour"},
			{"id": "c1", "verdict": "minor", "reason": "naming only"},
		}))
		j := &classify.Judge{Agent: newAgent(t, bin, url), Workdir: dir, Budget: 3 * time.Minute}
		a, err := j.Run(context.Background(), classify.Request{RunID: "r1", Round: 1, Comments: []classify.Comment{
			{ID: "c1", Path: "a.go", Line: 1, Body: "Maybe call the package alpha?", Source: classify.SourceCopilot},
			{ID: "c2", Path: "a.go", Line: 1, Body: "This should return an error instead.", Source: classify.SourceCopilot},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !a.Valid || len(a.Verdicts) != 2 || a.Verdicts[0].Verdict != classify.Minor || a.Verdicts[1].Verdict != classify.Structural {
			t.Errorf("answer = %+v, want valid verdicts c1 minor, c2 structural (in request order)", a)
		}
		agenttest.CheckWire(t, srv)
		checkReadOnlyTools(t, srv)
	})
}

// checkReadOnlyTools fails t unless every request of the agent loop
// offered the model the ReviewTools and none of the fix run's other tools
// (edits, the shell). Claude Code may add tools of its own making (a
// placeholder for deferred tools), which change nothing.
func checkReadOnlyTools(t *testing.T, srv *fakemodel.Server) {
	t.Helper()
	loops := 0
	for _, r := range srv.Requests() {
		if r.Side || r.API != "anthropic" {
			continue
		}
		names := r.Tools
		for _, tool := range DefaultTools {
			if slices.Contains(names, tool) != slices.Contains(ReviewTools, tool) {
				t.Errorf("the model was offered tools %v: want %v, and none of the rest of %v", names, ReviewTools, DefaultTools)
				break
			}
		}
		loops++
	}
	if loops == 0 {
		t.Error("no request of the agent loop reached fakemodel")
	}
}
