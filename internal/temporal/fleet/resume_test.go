package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/testutil"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_T14_FleetStopThenResume: `converge stop --engine temporal` stops
// a fleet run mid-way; the same `converge pr --engine temporal` command
// then resumes it — the new workflow goes on from the stopped one's
// state, its first round and that round's clock kept — and says so;
// --fresh would start over.
func TestPR_T14_FleetStopThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PR loop on a Temporal server")
	}
	hostPort := testutil.TemporalDevServer(t)
	bin := buildConverge(t)
	hub := hubtest.Start(t, 3*time.Second) // Copilot slow: the run is waiting when it is stopped
	_, urls := hubtest.DemoPRs(t, hub, 1)
	queue := "resume-" + t.Name()
	temporalFlags := []string{"--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace, "--task-queue", queue}
	worker := start(t, bin, []string{"CONVERGE_TOKEN=" + hub.Tokens().Author},
		append([]string{"worker", "--ca-file", hub.CAFile(), "--state", t.TempDir()}, temporalFlags...)...)
	waitOutput(t, worker, "worker on task queue", time.Minute)
	prCmd := append([]string{"pr", "--engine", "temporal", "--api-url", hub.APIURL(), "--poll-min", "1s", "--poll-max", "5s"}, temporalFlags...)
	first := start(t, bin, nil, append(prCmd, urls[0])...)
	waitOutput(t, first, "awaiting", 3*time.Minute)
	stop := start(t, bin, nil, append([]string{"stop", "--engine", "temporal", "--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace}, urls[0])...)
	waitEnd(t, stop, time.Minute)
	waitEnd(t, first, 3*time.Minute)
	if !strings.Contains(first.out.String(), string(prloop.ReasonStoppedByHuman)) {
		t.Fatalf("the stopped run did not end stopped-by-human (exit %d):\n%s", exitCode(first), first.out.String())
	}
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: testutil.TemporalNamespace, Logger: testutil.TemporalLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := temporal.WorkflowID("pr", strings.TrimSuffix(urls[0], "/"))
	stopped := workflowState(t, c, id)
	if !prloop.Reopens(stopped) || len(stopped.Rounds) == 0 {
		t.Fatalf("the stopped workflow's state cannot resume: phase %s, stopped in %q, %d round(s)", stopped.Phase, stopped.StoppedPhase, len(stopped.Rounds))
	}

	again := start(t, bin, nil, append(prCmd, urls[0])...)
	waitEnd(t, again, 5*time.Minute)
	if c := exitCode(again); c != exitcode.OK || !strings.Contains(again.out.String(), "resumed at round") {
		t.Fatalf("the same command again: exit %d, want the stopped run resumed and two-stable:\n%s", c, again.out.String())
	}
	resumed := workflowState(t, c, id)
	if len(resumed.Rounds) < len(stopped.Rounds) || !resumed.Rounds[0].StartedAt.Equal(stopped.Rounds[0].StartedAt) || resumed.Rounds[0].HeadSHA != stopped.Rounds[0].HeadSHA {
		t.Fatalf("the resumed run did not go on from the stopped one: its first round %+v, the stopped run's %+v", resumed.Rounds[0], stopped.Rounds[0])
	}
}

// workflowState is the loop state a finished PR workflow ended with.
func workflowState(t *testing.T, c client.Client, id string) prloop.State {
	t.Helper()
	run, _, err := temporal.RunOf(context.Background(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	var st prloop.State
	if err := json.Unmarshal(run.State, &st); err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	return st
}
