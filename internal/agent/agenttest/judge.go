package agenttest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
	"github.com/convergeloop/converge/internal/recap"
)

// JudgeCase is a backend's part of JudgeVerdicts.
type JudgeCase struct {
	// Agent returns the backend talking to fakemodel at url.
	Agent func(t *testing.T, url string) agent.Agent
	// Name is the agent's name, which the verdicts carry.
	Name string
	// Read is the tool call that reads file (the absolute path of a.go in
	// the worktree) with a tool a read-only run has.
	Read func(file string) fakemodel.ToolCall
	// ReadOnly checks one request of the agent loop for what says the run
	// cannot edit (the tools offered, the sandbox in its body), and
	// returns what it found wrong, or "".
	ReadOnly func(r fakemodel.Request) string
}

// JudgeBudget is the budget of a judge run in JudgeVerdicts: generous, as
// a CLI starting on a loaded machine is slow, and the model answers at once.
const JudgeBudget = 5 * time.Minute

// JudgeVerdicts runs the recap judge (PR-G2) and the classifier judge
// (PR-S5) on the backend of c, each in a subtest. The model reads a.go
// through a real tool call, then answers with a status record holding the
// judge's JSON; each judge must parse and validate the verdict from the
// CLI's final message, the wire must be clean (CheckWire), the read must
// have returned the file, and every request of the agent loop must pass
// c.ReadOnly (a judge edits nothing).
func JudgeVerdicts(t *testing.T, c JudgeCase) {
	t.Helper()
	// serve scripts a read of a.go, then the verdict line.
	serve := func(t *testing.T, dir string, answer map[string]any) (*fakemodel.Server, string) {
		line, err := json.Marshal(answer)
		if err != nil {
			t.Fatal(err)
		}
		return Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{
			{Text: "Reading the change.", Calls: []fakemodel.ToolCall{c.Read(filepath.Join(dir, "a.go"))}},
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
	check := func(t *testing.T, srv *fakemodel.Server) {
		t.Helper()
		CheckWire(t, srv)
		calls := srv.Calls()
		if len(calls) != 1 {
			t.Errorf("the model made %d tool calls, want the one read of a.go: %+v", len(calls), calls)
		} else if r, ok := srv.Result(calls[0].ID); !ok || !strings.Contains(r.Content, "package a") {
			t.Errorf("the read's result = %+v, want the text of a.go", r)
		}
		loops := 0
		for _, r := range srv.Requests() {
			if r.Side || r.API == "" {
				continue
			}
			if bad := c.ReadOnly(r); bad != "" {
				t.Errorf("a request of the judge's run may edit: %s", bad)
			}
			loops++
		}
		if loops == 0 {
			t.Error("no request of the agent loop reached fakemodel")
		}
	}

	t.Run("recap", func(t *testing.T) {
		t.Parallel()
		dir := Repo(t, map[string]string{"a.go": "package a\n"})
		srv, url := serve(t, dir, with("recap", map[string]any{
			"verdict": recap.RevertAndShip, "revert_rounds": []int{2}, "reason": "round 2 redesigned the API, out of scope"}))
		j := &recap.Judge{Agent: c.Agent(t, url), Workdir: dir, Budget: JudgeBudget}
		v, err := j.Run(context.Background(), recap.Input{PR: "o/r#1", Title: "Add a", RoundCount: 2, Rounds: []recap.Round{
			{N: 1, Commit: "1111111111111111111111111111111111111111"},
			{N: 2, Commit: "2222222222222222222222222222222222222222"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Valid || v.Decision != recap.RevertAndShip || !slices.Equal(v.RevertRounds, []int{2}) || v.Agent != c.Name {
			t.Errorf("verdict = %+v, want a valid REVERT-AND-SHIP of round 2 by %s", v, c.Name)
		}
		check(t, srv)
	})

	t.Run("classifier", func(t *testing.T) {
		t.Parallel()
		dir := Repo(t, map[string]string{"a.go": "package a\n"})
		srv, url := serve(t, dir, with("verdicts", []map[string]any{
			{"id": "c2", "verdict": "structural", "reason": "changes behaviour"},
			{"id": "c1", "verdict": "minor", "reason": "naming only"},
		}))
		j := &classify.Judge{Agent: c.Agent(t, url), Workdir: dir, Budget: JudgeBudget}
		a, err := j.Run(context.Background(), classify.Request{RunID: "r1", Round: 1, Comments: []classify.Comment{
			{ID: "c1", Path: "a.go", Line: 1, Body: "Maybe call the package alpha?", Source: classify.SourceCopilot},
			{ID: "c2", Path: "a.go", Line: 1, Body: "This should return an error instead.", Source: classify.SourceCopilot},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !a.Valid || len(a.Verdicts) != 2 || a.Verdicts[0].Verdict != classify.Minor || a.Verdicts[1].Verdict != classify.Structural || a.Agent != c.Name {
			t.Errorf("answer = %+v, want valid verdicts c1 minor, c2 structural (in request order) by %s", a, c.Name)
		}
		check(t, srv)
	})
}
