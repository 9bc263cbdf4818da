package testutil

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func smokeGreet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var upper string
	if err := workflow.ExecuteActivity(ctx, smokeUpper, name).Get(ctx, &upper); err != nil {
		return "", err
	}
	return "hello " + upper, nil
}

func smokeUpper(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil }

// The dev server the Temporal tests run against starts from the CLI
// binary, and a worker in this process runs a workflow and its activity
// on it to completion; under CI=true a missing binary fails the test.
func TestTemporalDevServerStarts(t *testing.T) {
	hostPort := TemporalDevServer(t)
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: TemporalNamespace, Logger: TemporalLogger(t)})
	if err != nil {
		t.Fatalf("dial %s: %v", hostPort, err)
	}
	t.Cleanup(c.Close)

	const queue = "testutil-smoke"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(smokeGreet)
	w.RegisterActivity(smokeUpper)
	if err := w.Start(); err != nil {
		t.Fatalf("worker start: %v", err)
	}
	t.Cleanup(w.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "testutil-smoke", TaskQueue: queue}, smokeGreet, "converge")
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if got != "hello CONVERGE" {
		t.Fatalf("workflow returned %q, want %q", got, "hello CONVERGE")
	}
	// The server kept the history: the run is closed as completed.
	desc, err := c.DescribeWorkflow(ctx, run.GetID(), run.GetRunID())
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if st := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus().String(); st != "Completed" {
		t.Fatalf("workflow status %s, want Completed", st)
	}
}

// Without the binary the test is skipped, but under CI=true it fails.
func TestTemporalBinaryMissing(t *testing.T) {
	t.Setenv(TemporalEnv, "/nonexistent/temporal")
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			var skipped, failed bool
			done := make(chan struct{})
			ft := &fakeTB{TB: t, skip: &skipped, fail: &failed}
			go func() {
				defer close(done)
				TemporalBinary(ft)
			}()
			<-done
			if want := ci != "true"; skipped != want || failed == want {
				t.Fatalf("CI=%q: skipped %v failed %v, want skipped %v failed %v", ci, skipped, failed, want, !want)
			}
		})
	}
}

// fakeTB records Skipf and Fatalf and ends the goroutine as they do.
type fakeTB struct {
	testing.TB
	skip, fail *bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(string, ...any) {
	*f.skip = true
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(string, ...any) {
	*f.fail = true
	runtime.Goexit()
}
