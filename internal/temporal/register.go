package temporal

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the kind's workflow and activities on a worker.
func (k *Kind[P, D, S, O, A, R]) Register(r worker.Registry, acts *Activities[P, D, S, O, A, R]) {
	acts.Kind = k
	r.RegisterWorkflowWithOptions(k.Workflow, workflow.RegisterOptions{Name: k.WorkflowType()})
	r.RegisterActivityWithOptions(acts.Setup, activity.RegisterOptions{Name: k.activity("setup")})
	r.RegisterActivityWithOptions(acts.Observe, activity.RegisterOptions{Name: k.activity("observe")})
	r.RegisterActivityWithOptions(acts.Act, activity.RegisterOptions{Name: k.activity("act")})
	r.RegisterActivityWithOptions(acts.End, activity.RegisterOptions{Name: k.activity("end")})
}

// Start starts the kind's workflow on p's target, or attaches to the one
// already running there: two starts never run two loops (PR-G5). A
// finished workflow's id may run again.
func (k *Kind[P, D, S, O, A, R]) Start(ctx context.Context, c client.Client, queue string, p P, opt Options) (client.WorkflowRun, error) {
	id := WorkflowID(k.Name, k.Target(p))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, k.WorkflowType(), Input[P, D, S, R]{Params: p, Options: opt})
	if err != nil {
		return nil, fmt.Errorf("start workflow %s: %w", id, err)
	}
	return run, nil
}

// Wake signals the running workflow on target to observe again now; a
// target with no running workflow is not an error (nothing to wake).
func Wake(ctx context.Context, c client.Client, kind, target string) error {
	err := c.SignalWorkflow(ctx, WorkflowID(kind, target), "", SignalWake, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// Stop asks the running workflow on target to stop; the loop decides how
// to end, as it does locally.
func Stop(ctx context.Context, c client.Client, kind, target string) error {
	return c.SignalWorkflow(ctx, WorkflowID(kind, target), "", SignalStop, nil)
}

// QueryStatus asks a workflow where it stands.
func QueryStatusOf(ctx context.Context, c client.Client, workflowID string) (Status, error) {
	var s Status
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryStatus)
	if err != nil {
		return s, err
	}
	return s, v.Get(&s)
}
