package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/temporal"
)

// workflowID is the workflow a RUN argument names on the Temporal engine:
// a workflow id as converge status lists it, or a PR's URL.
func workflowID(arg string) (string, error) {
	if strings.HasPrefix(arg, "converge-") {
		return arg, nil
	}
	if ref, err := forge.ParsePRURL(arg); err == nil {
		return temporal.WorkflowID("pr", ref.String()), nil
	}
	return "", cmdutil.UsageErr("%q names no workflow: give a workflow id as converge status --engine temporal lists it (converge-KIND:TARGET), or a PR URL", arg)
}

// workflowRun reads the run a RUN argument names from the cluster.
func workflowRun(ctx context.Context, o *engineOptions, arg string) (store.Run, *workflowRecords, error) {
	id, err := workflowID(arg)
	if err != nil {
		return store.Run{}, nil, err
	}
	c, err := o.dial(ctx)
	if err != nil {
		return store.Run{}, nil, err
	}
	defer c.Close()
	r, events, err := temporal.RunOf(ctx, c, id)
	if errors.Is(err, temporal.ErrNoRun) {
		return r, nil, cmdutil.UsageErr("no workflow %s on %s (namespace %s); converge status --engine temporal lists them", id, o.Address, o.Namespace)
	}
	if err != nil {
		return r, nil, err
	}
	return r, &workflowRecords{events: events, spend: workflowSpend(ctx, c, id)}, nil
}

// workflowSpend is a workflow's forge spend as status and proof print it;
// nil when the cluster cannot say (a workflow that failed, a worker older
// than the spend query): unknown, not zero.
func workflowSpend(ctx context.Context, c client.Client, id string) *forgeSpendView {
	rows, err := temporal.SpendOf(ctx, c, id)
	if err != nil {
		return nil
	}
	return spendRowsView(id, rows)
}

// spendRowsView is a workflow's spend rows as status and proof print them.
func spendRowsView(id string, rows []temporal.SpendRow) *forgeSpendView {
	out := make([]store.ForgeSpend, len(rows))
	for i, r := range rows {
		out[i] = r.Store(id)
	}
	return spendView(out)
}

// workflowRecords are a workflow's records for its log: its events. The
// round and finding tables are the local store's; a workflow keeps its
// decisions in its state and events.
type workflowRecords struct {
	events []store.Event
	spend  *forgeSpendView
}

func (w *workflowRecords) Rounds(context.Context, string) ([]store.Round, error)     { return nil, nil }
func (w *workflowRecords) Findings(context.Context, string) ([]store.Finding, error) { return nil, nil }
func (w *workflowRecords) Tickets(context.Context, string) ([]store.Ticket, error)   { return nil, nil }
func (w *workflowRecords) Events(context.Context, string) ([]store.Event, error) {
	return w.events, nil
}

// stopWorkflow asks the workflow a RUN argument names to stop.
func stopWorkflow(ctx context.Context, ios *cmdutil.IOStreams, o *engineOptions, arg string) error {
	id, err := workflowID(arg)
	if err != nil {
		return err
	}
	c, err := o.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	kind, target, _ := strings.Cut(strings.TrimPrefix(id, "converge-"), ":")
	if err := temporal.Stop(ctx, c, kind, target); err != nil {
		return cmdutil.UsageErr("stop %s: %v (converge status --engine temporal lists the running ones)", id, err)
	}
	fmt.Fprintf(ios.Out, "stop requested for workflow %s; it ends at its next step\n", id)
	return nil
}
