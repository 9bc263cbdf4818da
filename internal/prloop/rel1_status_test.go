package prloop_test

import (
	"context"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
)

// TestREL1_PendingStatusFaultDoesNotEndTheStep: a round starts with its
// pending status, then its review request, and the state already counts
// the request as asked. A forge fault on the status is only a missing
// sign, so it must not end the step's actions (the engine stops at a
// failed action) and leave the request unasked; a fault on the final
// verdict's status still does.
func TestREL1_PendingStatusFaultDoesNotEndTheStep(t *testing.T) {
	ctx := context.Background()
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ref := ff.AddPR(fakeforge.PR{})
	head := ff.PR(ref).HeadSHA
	ff.SetFault(func(op string) error {
		return &forge.Error{Kind: forge.KindUnreachable, Op: op, Msg: "answered 502"}
	})
	l := prloop.NewLoop(ref, prloop.Deps{Forge: ff, Journal: &prlooptest.Journal{}, Config: prloop.DefaultConfig()})
	obs := prloop.Observation{PR: ff.PR(ref)}
	pending := prloop.Action{Kind: prloop.ActSetStatus, Key: "status/" + head + "/pending", SHA: head, State: forge.StatusPending, Round: 1}
	if _, err := l.Act(ctx, prloop.State{Round: 1}, obs, pending); err != nil {
		t.Errorf("a fault on the pending status ended the step: %v", err)
	}
	success := pending
	success.Key, success.State = "status/"+head+"/success", forge.StatusSuccess
	if _, err := l.Act(ctx, prloop.State{Round: 1}, obs, success); forge.KindOf(err) != forge.KindUnreachable {
		t.Errorf("a fault on the verdict's status: %v, want it reported", err)
	}
}
