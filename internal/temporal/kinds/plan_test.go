package kinds_test

import (
	"errors"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

// TestPLAN_1_TemporalHumanNeededEndsThePlanBlocked: a local run that
// needs a human is left unfinished, for the same command to resume; a
// workflow cannot stay unfinished, so on Temporal it ends blocked (exit
// 3, handed to a human) saying what to put right. Any other fault ends
// it failed, as locally.
func TestPLAN_1_TemporalHumanNeededEndsThePlanBlocked(t *testing.T) {
	l := kinds.PlanLoop{Loop: plan.NewLoop("r", plan.Deps{})}
	st := plan.NewState("r", plan.Config{})
	obs := plan.Observation{Now: time.Unix(100, 0)}
	next, _ := l.Fail(st, obs, &plan.HumanNeeded{Why: "take abc123 off the branch"})
	tm := next.Terminal
	if tm == nil || tm.Status != plan.StatusBlocked || tm.ExitCode != exitcode.Human || tm.Message != "a human must put the branch right: take abc123 off the branch; then start the plan again" {
		t.Fatalf("terminal %+v, want blocked exit 3 naming what to put right", tm)
	}
	next, _ = l.Fail(st, obs, errors.New("disk full"))
	if tm := next.Terminal; tm == nil || tm.Status != plan.StatusFailed || tm.ExitCode != exitcode.Error {
		t.Fatalf("terminal %+v, want failed exit 1", tm)
	}
}
