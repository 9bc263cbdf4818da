//go:build unix

package review

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
)

// scripted answers review tasks from a list, one answer a run, and keeps
// the tasks it was given.
type scripted struct {
	mu      sync.Mutex
	answers []agent.Result
	tasks   []agent.Task
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append(s.tasks, t)
	r := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	return r, nil
}

// TestAG_T1_PartialAngleIsExtended: an angle that ends partial with a
// concrete next action and no answer gets min(needed, 10) more minutes —
// not counted as a retry — at most twice; then it is an agent that could
// not run.
func TestAG_T1_PartialAngleIsExtended(t *testing.T) {
	wt, headSHA := gitRepo(t)
	partial := agent.Result{Record: agent.StatusRecord{Status: agent.StatusPartial, NextAction: "read the rest of the diff", NeedsExtensionMinutes: 4}}
	done := agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete}, Output: "[]"}
	angles := []Angle{{Name: "edge-cases", Focus: "x"}}

	a := &scripted{answers: []agent.Result{partial, done}}
	res, err := (&Reviewer{Agent: a, Angles: angles, Budget: time.Minute}).Review(context.Background(), Input{Workdir: wt, BaseRef: "main", Head: headSHA})
	if err != nil || !res.Clean() {
		t.Fatalf("res %+v err %v, want clean after the extension", res, err)
	}
	if len(a.tasks) != 2 || a.tasks[1].Budget != 4*time.Minute || a.tasks[1].Extension != 1 || a.tasks[1].Angle != "edge-cases" {
		t.Fatalf("tasks %+v, want the angle again with 4 minutes as extension 1", a.tasks)
	}

	// Partial for ever: two extensions, then the run and its retry (each
	// extended no further) before the angle is a RunFailure.
	a = &scripted{answers: []agent.Result{partial}}
	_, err = (&Reviewer{Agent: a, Angles: angles, Budget: time.Minute}).Review(context.Background(), Input{Workdir: wt, BaseRef: "main", Head: headSHA})
	var rf *agent.RunFailure
	if !errors.As(err, &rf) || len(a.tasks) != 4 {
		t.Errorf("err %v after %d runs, want a RunFailure after 4", err, len(a.tasks))
	}
}
