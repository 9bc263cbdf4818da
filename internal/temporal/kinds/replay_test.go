package kinds_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/temporal/kinds"
)

func init() {
	prloop.RegisterBot(copilot.Name, func() prloop.ReviewBot { return copilot.New() })
}

// historyDir holds workflow histories recorded from real runs on a real
// Temporal server (`temporal workflow show --output json`, or the fleet
// test with CONVERGE_RECORD_HISTORIES). They are only ever added to: the
// workflow code of today must replay every one of them, or a workflow
// running when a new converge is deployed would fail on its next task.
const historyDir = "../testdata/histories"

// TestREL_2_TemporalReplaysEveryRecordedHistory replays each recorded
// history through today's workflow code with the SDK's replayer, which
// fails on any command the history does not hold (nondeterminism).
func TestREL_2_TemporalReplaysEveryRecordedHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historyDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no recorded histories under %s", historyDir)
	}
	pr, loop, plan := kinds.PR(nil), kinds.Check(nil), kinds.Plan(nil)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(pr.Workflow, workflow.RegisterOptions{Name: pr.WorkflowType()})
			r.RegisterWorkflowWithOptions(loop.Workflow, workflow.RegisterOptions{Name: loop.WorkflowType()})
			r.RegisterWorkflowWithOptions(plan.Workflow, workflow.RegisterOptions{Name: plan.WorkflowType()})
			if _, err := os.Stat(f); err != nil {
				t.Fatal(err)
			}
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
