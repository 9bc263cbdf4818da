package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/store"
)

// ErrNoRun is a workflow id the cluster does not know.
var ErrNoRun = errors.New("no such workflow")

// Statuses of workflows that ended without a terminal of their kind.
const (
	StatusRunning    = store.StatusRunning
	StatusFailed     = "failed"     // the workflow failed (a run a worker could not bind)
	StatusTerminated = "terminated" // ended by an operator (temporal workflow terminate)
	StatusCanceled   = "canceled"
	StatusTimedOut   = "timed-out"
)

// RunOf reads a workflow as the store records a run, so `converge
// status`, `proof` and `log` read both engines alike: ID is the workflow
// id, State the loop's state (the state query while it runs), and the
// events its log.
func RunOf(ctx context.Context, c client.Client, workflowID string) (store.Run, []store.Event, error) {
	desc, err := c.DescribeWorkflow(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return store.Run{}, nil, fmt.Errorf("%w: %s", ErrNoRun, workflowID)
	}
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("describe workflow %s: %w", workflowID, err)
	}
	info := desc.RawResponse.GetWorkflowExecutionInfo()
	r := store.Run{ID: workflowID, Kind: kindOf(info.GetType().GetName()), Target: targetOf(workflowID), StartedAt: info.GetStartTime().AsTime()}
	if ct := info.GetCloseTime(); ct != nil && !ct.AsTime().IsZero() {
		r.EndedAt = ct.AsTime()
	}
	r.UpdatedAt = r.EndedAt
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = time.Now()
	}
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		r.Status, r.EndedAt = StatusRunning, time.Time{}
		var st json.RawMessage
		if err := query(ctx, c, workflowID, QueryState, &st); err != nil {
			return r, nil, err
		}
		r.State = st
		var log []engine.Event
		if err := query(ctx, c, workflowID, QueryLog, &log); err != nil {
			return r, nil, err
		}
		return r, storeEvents(log), nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var res Result[json.RawMessage]
		if err := c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res); err != nil {
			return r, nil, fmt.Errorf("result of %s: %w", workflowID, err)
		}
		r.State, r.Status, r.ExitCode = res.State, res.Terminal.Status, res.Terminal.Code
		if res.Terminal.Proof != nil {
			r.Proof, _ = json.Marshal(res.Terminal.Proof)
		}
		return r, storeEvents(res.Log), nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		r.Status = StatusTerminated
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		r.Status = StatusCanceled
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		r.Status = StatusTimedOut
	default:
		r.Status = StatusFailed
	}
	r.ExitCode = 1
	return r, nil, nil
}

// SpendOf is what a workflow's forge calls cost: its spend query while it
// runs, its result's once it completed; nil for one that ended otherwise
// (failed, terminated), whose spend no record holds.
func SpendOf(ctx context.Context, c client.Client, workflowID string) ([]SpendRow, error) {
	desc, err := c.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		return nil, fmt.Errorf("describe workflow %s: %w", workflowID, err)
	}
	var rows []SpendRow
	switch desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		err = query(ctx, c, workflowID, QuerySpend, &rows)
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var res Result[json.RawMessage]
		if err = c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res); err == nil {
			rows = res.Spend
		}
	}
	return rows, err
}

// ListRuns lists converge's workflows, newest first, each as its latest
// run; limit <= 0 is all.
func ListRuns(ctx context.Context, c client.Client, limit int) ([]store.Run, error) {
	var out []store.Run
	seen := map[string]bool{}
	var next []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         "WorkflowType STARTS_WITH 'converge.'",
			NextPageToken: next,
		})
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			if seen[id] {
				continue // an earlier run of the same workflow
			}
			seen[id] = true
			r, _, err := RunOf(ctx, c, id)
			if err != nil {
				r = store.Run{ID: id, Kind: kindOf(e.GetType().GetName()), Target: targetOf(id), Status: "unknown", StartedAt: e.GetStartTime().AsTime()}
			}
			out = append(out, r)
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
		}
		if next = resp.GetNextPageToken(); len(next) == 0 {
			return out, nil
		}
	}
}

func query(ctx context.Context, c client.Client, workflowID, name string, into any) error {
	v, err := c.QueryWorkflow(ctx, workflowID, "", name)
	if err != nil {
		return fmt.Errorf("query %s of %s: %w", name, workflowID, err)
	}
	return v.Get(into)
}

func kindOf(workflowType string) string { return strings.TrimPrefix(workflowType, "converge.") }

// targetOf is the target a workflow id names (WorkflowID).
func targetOf(workflowID string) string {
	_, t, ok := strings.Cut(workflowID, ":")
	if !ok {
		return workflowID
	}
	return t
}

func storeEvents(log []engine.Event) []store.Event {
	out := make([]store.Event, 0, len(log))
	for i, e := range log {
		var data json.RawMessage
		if e.Data != nil {
			data, _ = json.Marshal(e.Data)
		}
		out = append(out, store.Event{Seq: int64(i + 1), Time: e.Time, Kind: e.Kind, Round: e.Round, Message: e.Message, Data: data})
	}
	return out
}
