package prloop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/prloop/prlooptest"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/prloop"
)

// judgedBody is a comment the heuristic leaves borderline.
const judgedBody = "nit: `i < n` should be `i <= n`"

// capture is a judge agent that keeps the task it was given and answers
// nothing.
type capture struct{ tasks []agent.Task }

func (c *capture) Name() string { return "capture" }
func (c *capture) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	c.tasks = append(c.tasks, t)
	return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete}}, nil
}

// TestPR_S5_TheJudgeSeesTheForgeHunk: the classifier's judge in the loop
// is given each borderline forge comment's diff hunk from the observation,
// quoted in its prompt as data, as the heuristic had it.
func TestPR_S5_TheJudgeSeesTheForgeHunk(t *testing.T) {
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ref := ff.AddPR(fakeforge.PR{})
	th := ff.AddThread(ref, "alice", fakeforge.NewThread{Path: "internal/engine/engine.go", Line: 120, Body: judgedBody, DiffHunk: prloop.TypoHunk})
	judge := &capture{}
	l := prloop.NewLoop(ref, prloop.Deps{Forge: ff, Journal: &prlooptest.Journal{}, Config: prloop.DefaultConfig(), ClassifyJudge: &classify.Judge{Agent: judge}})
	f := prloop.Finding{ID: th.ID, ThreadID: th.ID, Path: th.Path, StartLine: 120, EndLine: 120, OrigStart: 120, OrigEnd: 120, Summary: judgedBody, Source: "human", Author: "alice"}
	if _, err := l.Act(context.Background(), prloop.State{Round: 1}, prloop.Observation{PR: ff.PR(ref)}, prloop.Action{Kind: prloop.ActClassify, Key: "r1/classify", Findings: []prloop.Finding{f}}); err != nil {
		t.Fatal(err)
	}
	if len(judge.tasks) != 1 {
		t.Fatalf("the judge ran %d times", len(judge.tasks))
	}
	task := judge.tasks[0]
	if !strings.Contains(task.Diff, prloop.TypoHunk) {
		t.Errorf("the judge's task lacks the thread's hunk:\n%s", task.Diff)
	}
	if !strings.Contains(task.Prompt, "| +\t\t// Obsevre the world; Decide is pure.") {
		t.Errorf("the judge's prompt does not quote the hunk:\n%s", task.Prompt)
	}
}
